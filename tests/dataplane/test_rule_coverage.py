"""Every data-plane rule has a test row; the rule catalog names every row of the spec.

The catalog (rules.py) is checked against the spec itself when the spec is at hand (the
project's shared/ folder beside the repository, or ``TITANIUM_SPEC_DIR``): every table row
of the data-plane contract, every Decisions bullet, every "Behavior that differs" entry and
every annotation of the Ingress page has a rule, or is listed as not concerning the data plane.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pkgutil
import re
from pathlib import Path

import pytest

import tests.dataplane as package
from tests.dataplane.rules import COVERED, KNOWN_GAPS, NOT_DATA_PLANE, RULES

REPO = Path(__file__).resolve().parents[2]


def _import_all() -> None:
    for mod in pkgutil.iter_modules(package.__path__):
        if mod.name.startswith("test_") and mod.name != "test_rule_coverage":
            with contextlib.suppress(pytest.skip.Exception):  # a module that needs the dataplane extra
                importlib.import_module(f"tests.dataplane.{mod.name}")


def test_every_rule_has_a_row() -> None:
    pytest.importorskip("aiohttp")
    _import_all()
    missing = sorted(r for r in RULES if r not in COVERED and r not in KNOWN_GAPS)
    assert not missing, f"rules without a test row: {missing}"


def test_every_row_names_a_known_rule() -> None:
    _import_all()
    unknown = sorted(set(COVERED) - set(RULES))
    assert not unknown, f"test rows name rules that are not in the catalog: {unknown}"


def test_known_gaps_are_rules() -> None:
    assert set(KNOWN_GAPS) <= set(RULES)


# -- the catalog against the spec ---------------------------------------------------------------
def _spec_dir() -> Path | None:
    candidates = [os.environ.get("TITANIUM_SPEC_DIR", ""), REPO.parent / "shared", REPO.parent.parent / "shared",
                  Path("/work/shared")]
    for c in candidates:
        if c and (Path(c) / "spec" / "twp-contract.md").is_file():
            return Path(c)
    return None


SPEC = _spec_dir()
needs_spec = pytest.mark.skipif(SPEC is None, reason="the spec (shared/spec/twp-contract.md) is not beside the repo")


def _plain(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("`", "")).strip()


def _excluded(text: str) -> bool:
    return any(text.startswith(prefix) for prefix in NOT_DATA_PLANE)


def contract_table_rows(text: str) -> list[tuple[str, str]]:
    """(heading, first cell) of every data row of every table."""
    out: list[tuple[str, str]] = []
    heading = ""
    in_table = 0
    for line in text.splitlines():
        if line.startswith("#"):
            heading = _plain(line.lstrip("#"))
        if line.startswith("|"):
            in_table += 1
            if in_table > 2:  # past the header and the separator
                out.append((heading, _plain(line.strip("|").split("|")[0])))
        else:
            in_table = 0
    return out


def contract_decisions(text: str) -> list[str]:
    section = text.split("## Decisions", 1)[1].split("\n## ", 1)[0]
    bullets: list[str] = []
    for line in section.splitlines():
        if line.startswith("- "):
            bullets.append(_plain(line[2:]))
    return bullets


@needs_spec
def test_the_catalog_names_every_contract_table_row() -> None:
    assert SPEC is not None
    rows = contract_table_rows((SPEC / "spec" / "twp-contract.md").read_text())
    assert len(rows) >= 20
    missing = []
    for heading, cell in rows:
        ok = any(r.row == cell and r.source.startswith("contract: ") and heading.startswith(r.source[len("contract: "):])
                 for r in RULES.values())
        if not ok and not _excluded(cell):
            missing.append(f"{heading} | {cell}")
    assert not missing, f"contract table rows without a rule: {missing}"


@needs_spec
def test_the_catalog_names_every_decision() -> None:
    assert SPEC is not None
    bullets = contract_decisions((SPEC / "spec" / "twp-contract.md").read_text())
    assert len(bullets) >= 10
    missing = [b[:60] for b in bullets
               if not _excluded(b) and not any(b.startswith(r.row) for r in RULES.values() if r.source.endswith("Decisions"))]
    assert not missing, f"Decisions bullets without a rule: {missing}"


def _seed(containing: str) -> str:
    assert SPEC is not None
    for f in sorted((SPEC / "seeds").glob("*.txt")):
        text = f.read_text()
        if containing in text:
            return text
    pytest.fail(f"no product page contains {containing!r}")


@needs_spec
def test_the_catalog_names_every_behavior_that_differs() -> None:
    text = _seed("Behavior that differs from the specification")
    section = text.split("Behavior that differs from the specification", 1)[1].split("\nConformance", 1)[0]
    entries = [_plain(line) for line in section.splitlines()[1:] if line.strip()]
    entries = [e for e in entries if not e.startswith("These follow from")]
    assert len(entries) >= 5
    missing = [e[:60] for e in entries
               if not _excluded(e) and not any(e.startswith(r.row) for r in RULES.values()
                                               if r.source.endswith("Behavior that differs"))]
    assert not missing, f"'Behavior that differs' entries without a rule: {missing}"


@needs_spec
def test_the_catalog_names_every_ingress_annotation() -> None:
    text = _seed("titanium.io/rewrite-target")
    names = sorted({line.split("\t")[0].strip() for line in text.splitlines() if line.startswith("titanium.io/")
                    and "\t" in line})
    assert len(names) >= 10
    missing = [n for n in names if not _excluded(n) and not any(r.row == n for r in RULES.values())]
    assert not missing, f"Ingress annotations without a rule: {missing}"


# -- every kind of the model has its behaviour in the contract ------------------------------------
def test_every_transform_kind_is_registered_once() -> None:
    """A transform kind of ``twp/model.py`` does something to the request or to the response
    (``contract/transforms.py``), never both and never nothing."""
    from titanium_gateway.contract.transforms import ON_REQUEST, ON_RESPONSE
    from titanium_gateway.twp import model as m

    for kind in m.TRANSFORM_KINDS:
        assert (kind in ON_REQUEST) != (kind in ON_RESPONSE), kind.KIND
    assert set(ON_RESPONSE) == set(m.RESPONSE_TRANSFORMS)
    assert set(ON_REQUEST) | set(ON_RESPONSE) == set(m.TRANSFORM_KINDS)


def test_every_policy_kind_is_registered() -> None:
    from titanium_gateway.contract.policies import POLICIES
    from titanium_gateway.twp import model as m

    assert set(POLICIES) == set(m.POLICY_KINDS)


def test_every_action_is_registered() -> None:
    import typing

    from titanium_gateway.contract.routing import ACTIONS
    from titanium_gateway.twp import model as m

    assert set(ACTIONS) == set(typing.get_args(m.Action))
