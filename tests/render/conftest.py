"""Shared helpers of the render tests: the golden cases, their options, one cached render per case."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from titanium_gateway.offline.load import load_objects
from titanium_gateway.offline.snapshot import build_snapshot
from titanium_gateway.render.options import RenderOptions, parse_networks, parse_port_map, parse_ports
from titanium_gateway.render.result import RenderResult
from titanium_gateway.render.snapshot import Snapshot

TESTDATA = Path(__file__).parent / "testdata"
SCHEMA_PATH = Path(__file__).parents[2] / "titanium_gateway" / "twp" / "schema.json"
#: Files of a case directory that are inputs or documentation, never rendered output.
INPUT_FILES = frozenset({"in.yaml", "options.yaml", "README.md", "expect.yaml", "XFAIL"})


def case_names() -> list[str]:
    return sorted(p.parent.name for p in TESTDATA.glob("*/in.yaml"))


def render_available() -> bool:
    try:
        from titanium_gateway import render as pkg
    except ImportError:
        return False
    return callable(getattr(pkg, "render", None))


def require_render() -> Callable[[Snapshot, RenderOptions], RenderResult]:
    """The render function (a clear failure when the core is missing)."""
    if not render_available():
        pytest.fail("titanium_gateway.render.render is not importable")
    from titanium_gateway.render import render

    fn: Callable[[Snapshot, RenderOptions], RenderResult] = render
    return fn


def case_options(case: str) -> tuple[RenderOptions, dict[str, Any]]:
    """``(RenderOptions, snapshot kwargs)`` from the case's optional ``options.yaml``.

    Keys: assume_programmed, controller_name, ingress_controller_name, watch_legacy_annotation,
    port_map ("80=8080,..."), data_plane_ports ("8080,8443"), data_plane_service ("ns/name"),
    part_limit_bytes, max_parts, data_plane_mode, gateway_namespaces ("a,b"), gateway_service_type,
    gateway_address_ranges ("198.51.100.0/24,...");
    snapshot: confirmed_config_hash (``rendered`` = the hash this render produces for every data
    plane, as if every pod had confirmed it), probe_message, now.
    """
    path = TESTDATA / case / "options.yaml"
    raw: dict[str, Any] = yaml.safe_load(path.read_text()) if path.exists() else {}
    raw = dict(raw or {})
    snap_kwargs: dict[str, Any] = {k: raw.pop(k) for k in ("confirmed_config_hash", "probe_message", "now") if k in raw}
    kwargs: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "port_map":
            kwargs[key] = parse_port_map(str(value))
        elif key == "data_plane_ports":
            kwargs[key] = parse_ports(str(value))
        elif key == "data_plane_service":
            ns, _, name = str(value).partition("/")
            kwargs[key] = (ns, name)
        elif key == "gateway_namespaces":
            kwargs[key] = tuple(x.strip() for x in str(value).split(",") if x.strip())
        elif key == "gateway_address_ranges":
            kwargs[key] = parse_networks(str(value))
        elif key in {
            "assume_programmed",
            "controller_name",
            "ingress_controller_name",
            "watch_legacy_annotation",
            "part_limit_bytes",
            "max_parts",
            "data_plane_mode",
            "gateway_service_type",
        }:
            kwargs[key] = value
        else:
            raise ValueError(f"{path}: unknown option {key!r}")
    return RenderOptions(**kwargs), snap_kwargs


@functools.cache
def case_objects(case: str) -> tuple[Mapping[str, Any], ...]:
    return tuple(load_objects([TESTDATA / case / "in.yaml"]))


@functools.cache
def render_case(case: str) -> RenderResult:
    render: Callable[[Snapshot, RenderOptions], RenderResult] = require_render()
    options, snap_kwargs = case_options(case)
    if snap_kwargs.get("confirmed_config_hash") == "rendered":
        # "the data plane confirmed what this render produces": render once for the hash
        first = render(build_snapshot(case_objects(case), **{**snap_kwargs, "confirmed_config_hash": None}), options)
        snap_kwargs["confirmed_config_hash"] = first.config_hash
        snap_kwargs["plane_probes"] = {p.key: (p.config_hash, "") for p in first.gateway_planes()}
    return render(build_snapshot(case_objects(case), **snap_kwargs), options)


@functools.lru_cache(maxsize=1)
def twp_schema() -> dict[str, Any]:
    if not SCHEMA_PATH.exists():
        pytest.fail(f"{SCHEMA_PATH} is missing: every rendered twp.yaml must validate against it")
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text())
    return schema


def parse_twp(data: bytes) -> Any:
    """A rendered document as libyaml reads it (the data plane's kind of parser: strict about
    what the pure-Python loader lets through, e.g. an escaped lone surrogate), checked to be
    what the pure-Python loader reads too."""
    doc = yaml.load(data, Loader=yaml.CSafeLoader)  # noqa: S506 - a safe loader
    assert doc == yaml.safe_load(data), "libyaml and the pure-Python loader read the document differently"
    return doc


def validate_twp(data: bytes, what: str) -> None:
    """Fails the test unless ``data`` is YAML valid against twp.schema.json."""
    import jsonschema

    schema = twp_schema()
    doc = parse_twp(data)
    cls = jsonschema.validators.validator_for(schema)
    errors = sorted(cls(schema).iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in errors[:10]]
        pytest.fail(f"{what} does not validate against twp.schema.json:\n" + "\n".join(lines))


def update_golden() -> bool:
    return os.environ.get("UPDATE_GOLDEN", "") not in ("", "0", "false")
