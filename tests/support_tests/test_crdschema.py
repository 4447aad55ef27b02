"""The compiled CRD schema validation reports exactly what the plain recursive walk reports."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import crdschema

TESTDATA = Path(__file__).resolve().parents[1] / "render" / "testdata"
GROUP = "gateway.networking.k8s.io"


def _objects() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(object, its schema) for every Gateway API object of the golden inputs, plus their
    statuses as the render wrote them."""
    out = []
    for f in sorted(TESTDATA.glob("*/in.yaml")) + sorted(TESTDATA.glob("*/status.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            if not isinstance(doc, dict) or not str(doc.get("apiVersion", "")).startswith(GROUP + "/"):
                continue
            schema = crdschema.schema_for(GROUP, str(doc.get("kind")), doc["apiVersion"].rsplit("/", 1)[-1])
            if schema is not None:
                out.append((doc, schema))
    gw = {"apiVersion": f"{GROUP}/v1", "kind": "Gateway", "metadata": {"name": "infra", "namespace": "apps"},
          "spec": {"gatewayClassName": "titanium", "infrastructure": {"labels": {"a": "b"}, "annotations": {"c": "d"}},
                   "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}}
    out.append((gw, crdschema.schema_for(GROUP, "Gateway", "v1")))
    return out


OBJECTS = _objects()

#: lengths and numbers around the limits the Gateway API schemas use
EDGE_LENGTHS = [0, 1, 2, 63, 64, 65, 128, 129, 253, 254, 255, 256, 1024, 1025, 4096, 4097, 32768, 32769]
EDGE_NUMBERS = [-1, 0, 1, 99, 100, 101, 999, 1000, 1001, 1000000, 1000001, 65535, 65536, 2147483647, 1.5]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-70000, 70000), st.floats(allow_nan=False),
                    st.sampled_from(EDGE_NUMBERS), st.text(max_size=300),
                    st.sampled_from(EDGE_LENGTHS).map(lambda n: "a" * n),
                    st.sampled_from(["", "PathPrefix", "Exact", "gw", "-bad-", "2026-01-01", "2026-01-01T00:00:00Z",
                                     "Gateway", "True", "HTTP", "https", "/", "example.com", "*.example.com"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=20),
                                                       st.dictionaries(st.text(max_size=12), inner, max_size=5)),
                      max_leaves=30)


def _paths(v: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(v, dict):
        for k, x in v.items():
            out += _paths(x, (*prefix, k))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            out += _paths(x, (*prefix, i))
    return out


def _schema_at(schema: Any, path: tuple[Any, ...]) -> dict[str, Any]:
    for key in path:
        if not isinstance(schema, dict):
            return {}
        if isinstance(key, int):
            schema = schema.get("items")
        else:
            props = schema.get("properties") or {}
            schema = props[key] if key in props else schema.get("additionalProperties")
    return schema if isinstance(schema, dict) else {}


LIMITS = {"maxLength", "minLength", "minimum", "maximum", "maxItems", "minItems", "maxProperties", "enum", "format",
          "required", "pattern"}


def _edges(node: dict[str, Any], current: Any) -> list[Any]:
    """Values just inside and just outside each limit of ``node``, wrong types, null."""
    out: list[Any] = [None, True, 7, -7, "s", [], {}, [current], {"extra": current}]
    for k, fill in (("maxLength", 0), ("minLength", 0)):
        if k in node:
            out += ["a" * max(0, node[k] + d) for d in (-1, 0, 1)]
            del fill
    for k in ("minimum", "maximum"):
        if k in node:
            out += [node[k] + d for d in (-1, 0, 1)]
    for k in ("maxItems", "minItems", "maxProperties"):
        if k in node:
            item = current[0] if isinstance(current, list) and current else "x"
            out += [[copy.deepcopy(item) for _ in range(max(0, node[k] + d))] for d in (-1, 0, 1)]
            out += [{f"k{i}": "v" for i in range(max(0, node[k] + d))} for d in (-1, 0, 1)]
    if "enum" in node:
        out += list(node["enum"]) + ["NotInTheEnum"]
    if node.get("format") == "date-time":
        out += ["2026-01-01T00:00:00Z", "2026-01-01", "yesterday"]
    return out


def test_the_golden_objects_validate_the_same() -> None:
    assert len(OBJECTS) > 100
    for obj, schema in OBJECTS:
        assert crdschema.validate(obj, schema) == crdschema._validate_reference(obj, schema)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_objects_validate_the_same(data: st.DataObject) -> None:
    obj, schema = data.draw(st.sampled_from(OBJECTS))
    obj = copy.deepcopy(obj)
    for _ in range(data.draw(st.integers(1, 4))):
        paths = _paths(obj)[1:] or [("spec",)]
        limited = [p for p in paths if LIMITS & set(_schema_at(schema, p))]
        path = data.draw(st.sampled_from(limited if limited and data.draw(st.booleans()) else paths))
        target = obj
        for key in path[:-1]:
            target = target[key]
        how = data.draw(st.sampled_from(["delete", "random", "edge", "edge"]))
        if how == "delete" and isinstance(target, dict):
            del target[path[-1]]
        elif how == "random":
            target[path[-1]] = data.draw(values)
        else:
            target[path[-1]] = data.draw(st.sampled_from(_edges(_schema_at(schema, path), target[path[-1]])))
    got = crdschema.validate(obj, schema)
    assert got == crdschema._validate_reference(obj, schema)
    assert crdschema.validate(obj, schema, "x", False) == crdschema._validate_reference(obj, schema, "x", False)


def test_every_limit_of_every_field_present_validates_the_same() -> None:
    """Each field of the golden objects that has a limit (once per kind and field), set to each
    value just inside and just outside its limits, or deleted."""
    seen: set[tuple[str, tuple[Any, ...]]] = set()
    checked = 0
    for obj, schema in OBJECTS:
        for path in _paths(obj)[1:]:
            shape = (obj["kind"], tuple(0 if isinstance(k, int) else k for k in path))
            node = _schema_at(schema, path)
            if shape in seen or not LIMITS & set(node):
                continue
            seen.add(shape)
            parent = path[:-1]
            for value in [*_edges(node, _at(obj, path)), DELETE]:
                mutated = copy.deepcopy(obj)
                target = _at(mutated, parent)
                if value is DELETE:
                    if not isinstance(target, dict):
                        continue
                    del target[path[-1]]
                else:
                    target[path[-1]] = value
                assert crdschema.validate(mutated, schema) == crdschema._validate_reference(mutated, schema), path
                checked += 1
    assert checked > 1000


DELETE = object()


def _at(obj: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        obj = obj[key]
    return obj


# --------------------------------------------------------------------------------------------
# normalize: the copy, pruned and defaulted in one walk


def _reference_normalize(obj: Any, schema: dict[str, Any], prune_unknown: bool = True) -> tuple[Any, list[str]]:
    from tests.support.k8sutil import stripped_copy

    out = stripped_copy(obj)
    pruned = crdschema.prune(out, schema) if prune_unknown else []
    crdschema.apply_defaults(out, schema)
    return out, pruned


def _same_normalization(obj: Any, schema: dict[str, Any]) -> None:
    """normalize == the reference (value, key order, pruned paths in order), for both modes;
    ``obj`` unchanged and sharing no container with the copy."""
    import json

    frozen = copy.deepcopy(obj)
    for prune_unknown in (True, False):
        got, pruned = crdschema.normalize(obj, schema, prune_unknown=prune_unknown)
        want, want_pruned = _reference_normalize(obj, schema, prune_unknown)
        assert got == want and pruned == want_pruned
        assert json.dumps(got, default=repr) == json.dumps(want, default=repr)  # key order too
        assert obj == frozen
        containers = {id(x) for p in _paths(obj) if isinstance(x := _at(obj, p), (dict, list))}
        assert not containers & {id(x) for p in _paths(got) if isinstance(x := _at(got, p), (dict, list))}


def test_the_golden_objects_normalize_the_same() -> None:
    for obj, schema in OBJECTS:
        _same_normalization(obj, schema)


def _draw_place(data: st.DataObject, obj: Any) -> tuple[tuple[Any, ...], Any]:
    """A random field path of ``obj`` (below the top) and the container holding its last key."""
    path = data.draw(st.sampled_from(_paths(obj)[1:] or [("spec",)]))
    target = obj
    for key in path[:-1]:
        target = target[key]
    return path, target


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_objects_normalize_the_same(data: st.DataObject) -> None:
    """Random values, deleted fields (defaults come back), unknown fields (pruned), nulls."""
    obj, schema = data.draw(st.sampled_from(OBJECTS))
    obj = copy.deepcopy(obj)
    for _ in range(data.draw(st.integers(1, 5))):
        path, target = _draw_place(data, obj)
        how = data.draw(st.sampled_from(["delete", "random", "unknown", "null"]))
        if how == "delete" and isinstance(target, dict):
            target.pop(path[-1], None)
        elif how == "unknown" and isinstance(target, dict):
            target[data.draw(st.sampled_from(["unknownField", "x", "apiVersion", "metadata"]))] = data.draw(values)
        elif how == "null":
            target[path[-1]] = None
        else:
            target[path[-1]] = data.draw(values)
    _same_normalization(obj, schema)


SYNTHETIC = {
    "type": "object",
    "properties": {
        "metadata": {"type": "object", "properties": {"tag": {"type": "string", "default": "t"}}},
        "spec": {"type": "object", "default": {"filled": True}, "properties": {
            "filled": {"type": "boolean"},
            "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {
                "inner": {"type": "object", "properties": {"d": {"type": "integer", "default": 3}}}}},
            "openList": {"type": "array", "x-kubernetes-preserve-unknown-fields": True,
                         "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
            "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                "v": {"type": "string", "default": "v0"}}}},
            "anyMap": {"type": "object", "additionalProperties": True, "properties": {"k": {"type": "string"}}},
            "closed": {"type": "object", "additionalProperties": False},
            "untyped": {},
            "list": {"type": "array", "items": {"type": "object", "properties": {
                "n": {"type": "integer", "default": 1},
                "nested": {"type": "object", "default": {"x": {}}, "properties": {
                    "x": {"type": "object", "properties": {"y": {"type": "string", "default": "why"}}}}}}}},
            "scalar": {"type": "string"},
        }},
    },
}


def test_normalize_follows_every_pruning_and_defaulting_rule() -> None:
    from collections import OrderedDict

    obj = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n", "other": {"q": None}}, "extra": 1,
           "spec": {"filled": None, "open": {"anything": {"goes": 1}, "inner": {"z": 1}},
                    "openList": [{"a": "1", "b": 2}, None], "map": {"m1": {"w": 1}, "m2": {}},
                    "anyMap": {"k": "1", "free": {"x": None}}, "closed": {"gone": 1}, "untyped": {"kept": [None]},
                    "list": [{"n": None, "bad": 1}, {"nested": {"x": {"y": "set"}}}, None, 5],
                    "scalar": {"not": "a string"}, "unknown": [1]},
           "odd": OrderedDict(a=None, b=(1, None))}
    _same_normalization(obj, SYNTHETIC)
    got, pruned = crdschema.normalize(obj, SYNTHETIC)
    assert pruned == ["extra", "spec.openList[0].b", "spec.map.m1.w", "spec.closed.gone", "spec.list[0].bad",
                      "spec.unknown", "odd"]
    assert got["spec"]["open"] == {"anything": {"goes": 1}, "inner": {"z": 1, "d": 3}}  # not pruned, defaulted
    assert got["metadata"] == {"name": "n", "other": {}, "tag": "t"}
    assert got["spec"]["list"][1]["nested"] == {"x": {"y": "set"}} and got["spec"]["list"][0]["nested"] == {"x": {"y": "why"}}
    _same_normalization({"spec": OrderedDict(map={"a": None, "b": OrderedDict(c=1)}), "metadata": {}}, SYNTHETIC)
    _same_normalization({"metadata": {}}, SYNTHETIC)  # spec: the default, defaulted in turn
    _same_normalization([{"spec": {}}], SYNTHETIC)
    assert crdschema.null_free_defaults(SYNTHETIC)
    assert not crdschema.null_free_defaults({"properties": {"a": {"default": {"b": None}}}})
    assert not crdschema.null_free_defaults({"properties": {"a": {"default": None}}})
    assert crdschema.null_free_defaults({"properties": {"a": {"default": [None]}}})
    for _obj, schema in OBJECTS:
        assert crdschema.null_free_defaults(schema)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_normalized_objects_are_stable_and_reusable(data: st.DataObject) -> None:
    """What normalize returns normalizes to itself with nothing pruned (the schemas are
    stable), and a field taken as it is (``reuse``) lands where the full walk puts it."""
    obj, schema = data.draw(st.sampled_from(OBJECTS))
    obj = copy.deepcopy(obj)
    for _ in range(data.draw(st.integers(0, 4))):
        path, target = _draw_place(data, obj)
        if isinstance(target, dict) and data.draw(st.booleans()):
            target.pop(path[-1], None)
        else:
            target[path[-1]] = data.draw(values)
    assert crdschema.stable(schema)
    once, _ = crdschema.normalize(obj, schema)
    again, pruned = crdschema.normalize(once, schema)
    assert again == once and pruned == []
    keys = [k for k in once if k not in ("apiVersion", "kind", "metadata")]
    reuse = set(data.draw(st.lists(st.sampled_from(keys), unique=True))) if keys else set()
    mixed = dict(obj)  # the reused fields as stored, the others as sent, in the same places
    for k in reuse:
        mixed[k] = once[k]
    got, pruned = crdschema.normalize(mixed, schema, reuse=reuse)
    want, want_pruned = crdschema.normalize(mixed, schema)
    assert got == want and list(got) == list(want) and pruned == want_pruned
    assert all(got[k] is once[k] for k in reuse)
    skipped = crdschema.validate(got, schema, skip=reuse)
    assert skipped == [e for e in crdschema.validate(got, schema)
                       if not any(e.field == k or e.field.startswith((f"{k}.", f"{k}[")) for k in reuse)]


def test_reused_fields_keep_their_place_among_defaults_and_nulls() -> None:
    schema = {"type": "object", "properties": {
        "metadata": {"type": "object"}, "a": {"type": "object", "default": {}},
        "b": {"type": "string", "default": "b"}, "c": {"type": "object", "properties": {"x": {"type": "string"}}}}}
    c = {"x": "1"}
    for obj in ({"c": c, "metadata": {}, "b": None}, {"b": "2", "c": c, "a": {"z": 1}}, {"metadata": {}, "c": c}):
        got, pruned = crdschema.normalize(obj, schema, reuse={"c"})
        want, want_pruned = crdschema.normalize(obj, schema)
        assert got == want and list(got) == list(want) and pruned == want_pruned and got["c"] is c
    assert not crdschema.stable({"properties": {"a": {"type": "object", "default": {"unknown": 1}, "properties": {}}}})
    assert not crdschema.stable({"properties": {"a": {"default": {"b": None}}}})
