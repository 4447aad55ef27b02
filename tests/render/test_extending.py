"""What adding to the render takes, checked (docs/render-design.md, "Adding an HTTPRoute filter").

A new transform or policy kind is a class in ``twp/model.py``, its entry in ``twp/schema.json``
and the filter branch that makes it: the writer and the reader of the format handle every kind
from the model's tables. These tests fail when one of the three is forgotten:

* a kind without a schema entry (or whose parameters differ from its fields);
* a kind the writer or the reader cannot handle without code of its own (a field of a type
  the generic ``{kind, parameters}`` writing does not cover);
* a filter type of the installed HTTPRoute CRD that is neither translated nor answered 500
  with the reason (the branch that makes the new kind: its golden case, whose ``expect.yaml``
  wants Accepted True, fails too; and test_model's "every field is produced by some golden
  case" while no translator makes it).
"""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml

from titanium_gateway.twp import emit, load
from titanium_gateway.twp import model as m

from .core_fixtures import base_objects, route, routes, run, status_of

ROOT = Path(__file__).parents[2]
SCHEMA = json.loads((ROOT / "titanium_gateway" / "twp" / "schema.json").read_text())
HTTPROUTE_CRD = ROOT / "charts" / "titanium-gateway" / "crds" / "gateway.networking.k8s.io_httproutes.yaml"
KINDS = [*m.TRANSFORM_KINDS, *m.POLICY_KINDS]
#: The filter types the HTTPRoute translator makes something of (filters.rule_filters).
TRANSLATED = {"RequestHeaderModifier", "ResponseHeaderModifier", "RequestMirror", "RequestRedirect", "URLRewrite"}


def _schema_entries(list_key: str) -> dict[str, Any]:
    """kind -> its entry in the schema's route ``transforms`` or ``policies`` list."""
    items = SCHEMA["$defs"]["route"]["properties"][list_key]["items"]
    return {e["properties"]["kind"]["const"]: e for e in items["oneOf"]}


@pytest.mark.parametrize("cls", KINDS, ids=lambda c: c.KIND)
def test_every_kind_has_a_schema_entry_with_its_fields(cls: type) -> None:
    entries = _schema_entries("transforms" if cls in m.TRANSFORM_KINDS else "policies")
    assert cls.KIND in entries, f"twp/schema.json has no {cls.KIND} entry"
    params = entries[cls.KIND]["properties"]["parameters"]
    names = [m.twp_key(f.name) for f in dataclasses.fields(cls)]
    assert sorted(params["properties"]) == sorted(names)
    assert sorted(params.get("required", [])) == sorted(names)


def _sample(hint: Any) -> Any:
    if hint is str:
        return "/x"
    if hint is int:
        return 7
    if typing.get_origin(hint) is tuple:
        return ("10.0.0.0/8", "192.0.2.0/24")
    raise AssertionError(f"a field of type {hint!r}: the generic writer and reader of kinds cover str, int and "
                         "tuples of str; a kind with another needs its own writer (twp/emit.py) and reader")


@pytest.mark.parametrize("cls", KINDS, ids=lambda c: c.KIND)
def test_every_kind_is_written_and_read_back_with_no_code_of_its_own(cls: type) -> None:
    hints = typing.get_type_hints(cls)
    value = cls(*[_sample(hints[f.name]) for f in dataclasses.fields(cls)])
    assert (load.TRANSFORMS if cls in m.TRANSFORM_KINDS else load.POLICIES)[cls.KIND] is cls
    behavior = m.Behavior(m.Forward("c"), transforms=(value,) if cls in m.TRANSFORM_KINDS else (),
                          policies=(value,) if cls in m.POLICY_KINDS else ())
    route_value = m.Route("r", None, m.Match(), behavior, "", m.UNKNOWN_SOURCE, 0, 0)
    text = emit.route_text(route_value, 1)
    assert load.read_route(yaml.safe_load(text)[0]) == route_value


def _crd_filter_types() -> list[str]:
    crd = yaml.safe_load(HTTPROUTE_CRD.read_text())
    version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    rules = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["rules"]["items"]
    return list(rules["properties"]["filters"]["items"]["properties"]["type"]["enum"])


_SPECS: dict[str, dict[str, Any]] = {
    "RequestHeaderModifier": {"requestHeaderModifier": {"set": [{"name": "x", "value": "1"}]}},
    "ResponseHeaderModifier": {"responseHeaderModifier": {"remove": ["x"]}},
    "RequestMirror": {"requestMirror": {"backendRef": {"name": "api", "port": 8080}}},
    "RequestRedirect": {"requestRedirect": {"hostname": "example.com", "statusCode": 301}},
    "URLRewrite": {"urlRewrite": {"path": {"type": "ReplaceFullPath", "replaceFullPath": "/y"}}},
    "ExtensionRef": {"extensionRef": {"group": "example.com", "kind": "Filter", "name": "f"}},
}


@pytest.mark.parametrize("ftype", _crd_filter_types())
def test_every_filter_type_of_the_api_is_translated_or_answers_500_with_why(ftype: str) -> None:
    flt = {"type": ftype, **_SPECS.get(ftype, {})}
    res = run([*base_objects(), route("shop", rules=[{"filters": [flt], "backendRefs": [{"name": "api", "port": 8080}]}])])
    (r,) = routes(res)
    accepted = next(c for c in status_of(res, "HTTPRoute", "apps", "shop").status["parents"][0]["conditions"]
                    if c["type"] == "Accepted")
    if ftype in TRANSLATED:
        assert accepted["status"] == "True" and "directResponse" not in r, (ftype, r)
    else:
        assert r["directResponse"] == {"status": 500, "body": "UnsupportedValue"}  # the why is in status
        assert accepted["status"] == "False" and f"filter type {ftype} is not supported" in accepted["message"]


def test_but_keeps_every_other_field_of_a_behavior() -> None:
    """What the translators finish a behavior with: a field added to Behavior reaches every
    route without a change in them."""
    fields = {f.name: f for f in dataclasses.fields(m.Behavior)}
    full = m.Behavior(m.Forward("c"), m.Mirror("m", 50.0), (m.RequestHeaderSet("x", "1"),), (m.Cors(("*",)),),
                      m.Limits("00:00:01"))
    assert all(getattr(full, name) != f.default for name, f in fields.items() if name != "action")
    assert full.but() == full
    for name in fields:
        changed = full.but(**{name: getattr(m.Behavior(m.Forward("d")), name)})
        assert [n for n in fields if getattr(changed, n) is not getattr(full, n)] == [name]
