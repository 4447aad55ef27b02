"""Deterministic twp.yaml bytes, config hash and parts.

Key order is fixed (see the ``*_KEYS`` tuples) so the file reads top-down like the contract.
The whole document is written by a small block-style writer (see :func:`_fragment`): PyYAML's
Python representer costs ~40 µs per route (too slow for 10k routes), and libyaml raises on a
lone surrogate. Strings are plain when YAML reads them back as the same string, JSON
double-quoted when they are other printable ASCII, and escaped double-quoted otherwise, so the
file is pure ASCII. Anything that is not plain data falls back to PyYAML (``CSafeDumper`` when
libyaml is there). Routes and clusters are per-item fragments, which gives exact sizes for
splitting into parts in one pass. Every fragment parses back to its item.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.resolver import Resolver

try:
    _Dumper: type = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - libyaml missing
    _Dumper = yaml.SafeDumper

SCHEMA_VERSION = "7.1"
ROUTE_KEYS = ("id", "order", "match", "clusterId", "clusters", "redirect", "directResponse",
              "mirror", "transforms", "policies", "limits")
MATCH_KEYS = ("host", "path", "pathKind", "method", "headers", "query", "queryRegex")
REDIRECT_KEYS = ("statusCode", "scheme", "host", "port", "path")
CLUSTER_KEYS = ("id", "algorithm", "destinations", "sessionAffinity", "httpClient")
DEST_KEYS = ("id", "address", "port", "weight", "useHttps")
HTTP_CLIENT_KEYS = ("requestTimeout", "tls")
TLS_KEYS = ("caFile", "certFile", "keyFile")
#: Bytes of the two list headers in a part, an upper bound ("routes: []\n" + "clusters: []\n").
_PART_OVERHEAD = len("routes: []\n") + len("clusters: []\n")


def _ordered(d: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    out = {k: d[k] for k in keys if k in d}
    for k in sorted(k for k in d if k not in out):
        out[k] = d[k]
    return out


def canonical_route(route: Mapping[str, Any]) -> dict[str, Any]:
    out = _ordered(route, ROUTE_KEYS)
    if isinstance(out.get("match"), Mapping):
        out["match"] = _ordered(out["match"], MATCH_KEYS)
    if isinstance(out.get("redirect"), Mapping):
        out["redirect"] = _ordered(out["redirect"], REDIRECT_KEYS)
    if isinstance(out.get("clusters"), list):
        out["clusters"] = [_ordered(c, ("clusterId", "weight")) for c in out["clusters"]]
    if isinstance(out.get("mirror"), Mapping):
        out["mirror"] = _ordered(out["mirror"], ("clusterId", "percent"))
    for k in ("transforms", "policies"):
        if isinstance(out.get(k), list):
            out[k] = [_ordered(t, ("kind", "parameters")) for t in out[k]]
    return out


def canonical_cluster(cluster: Mapping[str, Any]) -> dict[str, Any]:
    out = _ordered(cluster, CLUSTER_KEYS)
    if isinstance(out.get("destinations"), list):
        out["destinations"] = [_ordered(d, DEST_KEYS) for d in out["destinations"]]
    if isinstance(out.get("sessionAffinity"), Mapping):
        out["sessionAffinity"] = _ordered(out["sessionAffinity"], ("policy", "name"))
    client = out.get("httpClient")
    if isinstance(client, Mapping):
        client = _ordered(client, HTTP_CLIENT_KEYS)
        if isinstance(client.get("tls"), Mapping):
            client["tls"] = _ordered(client["tls"], TLS_KEYS)
        out["httpClient"] = client
    return out


def dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=1 << 20)


class _Fallback(Exception):
    """The fast writer met something it does not handle; PyYAML writes that item."""


_RESOLVER = Resolver()
_STR_TAG = "tag:yaml.org,2002:str"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_PLAIN = re.compile(r"[A-Za-z0-9/_.][A-Za-z0-9/_.:*@=+-]*")
_scalar_cache: dict[str, str] = {}


def _quote(value: str) -> str:
    """A YAML double-quoted scalar in pure ASCII: anything but printable ASCII is escaped
    (``\\xXX``, ``\\uXXXX``, ``\\UXXXXXXXX``), so lone surrogates, control characters, NEL and
    LINE SEPARATOR can never break the file or its UTF-8 encoding."""
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif 0x20 <= code <= 0x7E:
            out.append(ch)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _scalar(value: Any) -> str:
    if type(value) is str:
        cached = _scalar_cache.get(value)
        if cached is not None:
            return cached
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise _Fallback
        text = repr(value)
        if "e" in text and "." not in text:  # YAML 1.1 floats need a "." ("5e-324" is a string)
            mantissa, _, exponent = text.partition("e")
            text = f"{mantissa}.0e{exponent}"
        if _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) != _FLOAT_TAG:
            raise _Fallback
        return text
    if not isinstance(value, str):
        raise _Fallback
    text = _scalar_cache.get(value)
    if text is not None:
        return text
    if not (value.isascii() and value.isprintable()):
        text = _quote(value)
    elif (_PLAIN.fullmatch(value) and not value.endswith(":")
            and _RESOLVER.resolve(yaml.ScalarNode, value, (True, False)) == _STR_TAG):
        text = value
    else:
        text = json.dumps(value)  # printable ASCII: a valid YAML double-quoted scalar
    if len(_scalar_cache) < 500_000:
        _scalar_cache[value] = text
    return text


def _write_mapping(data: Mapping[str, Any], indent: int, out: list[str], first: str | None = None) -> None:
    pad = " " * indent
    for n, (key, value) in enumerate(data.items()):
        lead = first if (n == 0 and first is not None) else pad
        if not isinstance(key, str):
            raise _Fallback
        k = _scalar(key)
        kind = type(value)
        if kind is str or kind is int or kind is bool:
            out.append(f"{lead}{k}: {_scalar(value)}\n")
        elif isinstance(value, Mapping):
            if value:
                out.append(f"{lead}{k}:\n")
                _write_mapping(value, indent + 2, out)
            else:
                out.append(f"{lead}{k}: {{}}\n")
        elif isinstance(value, list):
            if value:
                out.append(f"{lead}{k}:\n")
                _write_sequence(value, indent, out)
            else:
                out.append(f"{lead}{k}: []\n")
        else:
            out.append(f"{lead}{k}: {_scalar(value)}\n")


def _write_sequence(items: Sequence[Any], indent: int, out: list[str]) -> None:
    pad = " " * indent
    for item in items:
        if isinstance(item, Mapping):
            if item:
                _write_mapping(item, indent + 2, out, first=pad + "- ")
            else:
                out.append(f"{pad}- {{}}\n")
        elif isinstance(item, list):
            raise _Fallback
        else:
            out.append(f"{pad}- {_scalar(item)}\n")


def _fragment(item: Any) -> str:
    """One list item in block style (``- key: ...``).

    See the module doc; anything that is not plain data goes through PyYAML instead.
    """
    out: list[str] = []
    try:
        _write_sequence([item], 0, out)
    except _Fallback:
        return dump([item])
    return "".join(out)


def _document(data: Mapping[str, Any]) -> str:
    """The small head (schemaVersion, listeners, certificates, include) through PyYAML; the
    fast writer when libyaml cannot encode it (a lone surrogate in a name)."""
    try:
        text = dump(dict(data))
        text.encode()
        return text
    except (UnicodeError, yaml.YAMLError):
        out: list[str] = []
        _write_mapping(data, 0, out)
        return "".join(out)


def _list_block(key: str, fragments: Sequence[str]) -> str:
    if not fragments:
        return f"{key}: []\n"
    return f"{key}:\n" + "".join(fragments)


@dataclass(frozen=True)
class Emitted:
    config: bytes
    config_hash: str
    parts: tuple[tuple[str, bytes], ...] = ()
    delivery_error: str = ""


def emit(
    listeners: Sequence[Mapping[str, Any]],
    certificates: Sequence[Mapping[str, Any]],
    routes: Sequence[Mapping[str, Any]],
    clusters: Sequence[Mapping[str, Any]],
    *,
    part_limit: int,
    max_parts: int,
) -> Emitted:
    """Assemble the root document (and parts past ``part_limit`` bytes)."""
    head = _document({
        "schemaVersion": SCHEMA_VERSION,
        "listeners": [dict(x) for x in listeners],
        "certificates": {"items": [dict(c) for c in certificates]},
    })
    route_frags = [_fragment(canonical_route(r)) for r in routes]
    cluster_frags = [_fragment(canonical_cluster(c)) for c in clusters]
    whole = head + _list_block("routes", route_frags) + _list_block("clusters", cluster_frags)
    data = whole.encode()
    if len(data) <= part_limit:
        return Emitted(data, hashlib.sha256(data).hexdigest())
    # split: routes then clusters, in order, greedily into parts of at most part_limit bytes
    items = [("routes", f) for f in route_frags] + [("clusters", f) for f in cluster_frags]
    parts: list[dict[str, list[str]]] = []
    current: dict[str, list[str]] = {"routes": [], "clusters": []}
    size = _PART_OVERHEAD
    error = ""
    for kind, frag in items:
        n = len(frag.encode())
        if n + _PART_OVERHEAD > part_limit:
            error = f"one {kind[:-1]} is {n} bytes, more than the part limit of {part_limit} bytes"
            break
        if size + n > part_limit:
            parts.append(current)
            current, size = {"routes": [], "clusters": []}, _PART_OVERHEAD
        current[kind].append(frag)
        size += n
    if current["routes"] or current["clusters"]:
        parts.append(current)
    part_files: list[tuple[str, bytes]] = []
    for n, part in enumerate(parts, start=1):
        text = _list_block("routes", part["routes"]) + _list_block("clusters", part["clusters"])
        part_files.append((f"twp.part-{n}.yaml", text.encode()))
    include = [{"file": name, "sha256": hashlib.sha256(body).hexdigest()} for name, body in part_files]
    root = (head + _document({"include": include})).encode()
    if not error and len(part_files) > max_parts:
        error = (f"the config is {len(data)} bytes: it needs {len(part_files)} parts of at most {part_limit} bytes, "
                 f"but the data-plane pods mount only {max_parts}")
    if not error and len(root) > part_limit:
        error = f"the root config alone is {len(root)} bytes, more than {part_limit} bytes"
    return Emitted(root, hashlib.sha256(root).hexdigest(), tuple(part_files), error)
