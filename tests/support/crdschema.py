"""Structural-schema behaviour of CRDs, from the real CRD manifests the chart ships.

A real API server, for a custom resource: prunes fields the schema does not know, applies the
schema's ``default`` values (HTTPRoute ``rules[].matches`` -> ``[{path: {type: PathPrefix,
value: /}}]``, ``backendRefs[].weight`` -> 1, ``parentRefs[].kind`` -> Gateway, ...), and
validates types, ``required``, ``enum``, lengths, item counts, ``pattern``, ``minimum`` /
``maximum`` and ``format: date-time``. CEL rules (``x-kubernetes-validations``), ``anyOf`` /
``oneOf`` and the other formats are not evaluated.
"""

from __future__ import annotations

import copy
import functools
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from tests.support.k8sutil import FieldError

Obj = dict[str, Any]

CRD_DIR = Path(__file__).resolve().parents[2] / "charts" / "titanium-gateway" / "crds"
_ROOT_KEYS = {"apiVersion", "kind", "metadata"}


@functools.lru_cache(maxsize=1)
def load_schemas(crd_dir: str = str(CRD_DIR)) -> dict[tuple[str, str, str], Obj]:
    """{(group, kind, version): openAPIV3Schema} of every CRD file in ``crd_dir`` (empty if absent)."""
    out: dict[tuple[str, str, str], Obj] = {}
    d = Path(crd_dir)
    if not d.is_dir():
        return out
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for f in sorted(d.glob("*.yaml")):
        for doc in yaml.load_all(f.read_text(), Loader=loader):
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc.get("spec") or {}
            for v in spec.get("versions") or []:
                schema = (v.get("schema") or {}).get("openAPIV3Schema")
                if schema:
                    out[(spec.get("group", ""), (spec.get("names") or {}).get("kind", ""), v["name"])] = schema
    return out


def schema_for(group: str, kind: str, version: str) -> Obj | None:
    return load_schemas().get((group, kind, version))


def _path(parent: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else key


def prune(obj: Any, schema: Obj, path: str = "", root: bool = True) -> list[str]:
    """Drop unknown fields in place; returns their paths."""
    dropped: list[str] = []
    if isinstance(obj, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return dropped
        props = schema.get("properties")
        addl = schema.get("additionalProperties")
        for k in list(obj):
            if root and k in _ROOT_KEYS:
                continue
            if props is not None and k in props:
                dropped += prune(obj[k], props[k], _path(path, k), False)
            elif isinstance(addl, dict):
                dropped += prune(obj[k], addl, _path(path, k), False)
            elif props is not None or addl is False or schema.get("type") == "object":
                if addl is True:
                    continue
                del obj[k]
                dropped.append(_path(path, k))
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(obj):
            dropped += prune(item, schema["items"], _path(path, i), False)
    return dropped


def apply_defaults(obj: Any, schema: Obj) -> None:
    """Fill absent properties that have a schema ``default``, recursively, in place."""
    if isinstance(obj, dict):
        props = schema.get("properties") or {}
        for k, sub in props.items():
            if k not in obj and "default" in sub:
                obj[k] = copy.deepcopy(sub["default"])
        for k, v in obj.items():
            if k in props:
                apply_defaults(v, props[k])
            elif isinstance(schema.get("additionalProperties"), dict):
                apply_defaults(v, schema["additionalProperties"])
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for item in obj:
            apply_defaults(item, schema["items"])


_PATTERNS: dict[str, re.Pattern[str] | None] = {}


def _pattern(p: str) -> re.Pattern[str] | None:
    if p not in _PATTERNS:
        try:
            _PATTERNS[p] = re.compile(p)
        except re.error:
            _PATTERNS[p] = None
    return _PATTERNS[p]


_TYPE_CHECKS: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}


def _any_type(v: Any) -> bool:
    return True


def _type_ok(value: Any, schema: Obj) -> bool:
    t = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    if t is None:
        return True
    if value is None:
        return bool(schema.get("nullable"))
    return bool(_TYPE_CHECKS.get(t, _any_type)(value))


def _short(v: Any) -> str:
    import json

    s = json.dumps(v)
    return s if len(s) <= 80 else s[:77] + "..."


def validate(obj: Any, schema: Obj, path: str = "", root: bool = True) -> list[FieldError]:
    errs: list[FieldError] = []
    if not _type_ok(obj, schema):
        errs.append(FieldError(path, "FieldValueTypeInvalid", f"Invalid value: {_short(obj)}: {path} in body must "
                               f"be of type {schema.get('type')}: {_short(type(obj).__name__)}"))
        return errs
    if obj is None:
        return errs
    if "enum" in schema and obj not in schema["enum"]:
        allowed = ", ".join(_short(e) for e in schema["enum"])
        errs.append(FieldError(path, "FieldValueNotSupported", f"Unsupported value: {_short(obj)}: supported values: {allowed}"))
    if isinstance(obj, str):
        if "maxLength" in schema and len(obj) > schema["maxLength"]:
            errs.append(FieldError(path, "FieldValueTooLong", f"Too long: may not be more than {schema['maxLength']} bytes"))
        if "minLength" in schema and len(obj) < schema["minLength"]:
            errs.append(FieldError(path, "FieldValueInvalid", f"Invalid value: {_short(obj)}: {path} in body should be "
                                   f"at least {schema['minLength']} chars long"))
        pat = _pattern(schema["pattern"]) if "pattern" in schema else None
        if pat is not None and not pat.search(obj):
            errs.append(FieldError(path, "FieldValueInvalid", f"Invalid value: {_short(obj)}: {path} in body should "
                                   f"match '{schema['pattern']}'"))
        if schema.get("format") == "date-time":
            try:
                datetime.fromisoformat(obj.replace("Z", "+00:00"))
                if "T" not in obj:
                    raise ValueError(obj)
            except ValueError:
                errs.append(FieldError(path, "FieldValueInvalid", f"Invalid value: {_short(obj)}: {path} in body must "
                                       "be of type date-time"))
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        if "minimum" in schema and obj < schema["minimum"]:
            errs.append(FieldError(path, "FieldValueInvalid", f"Invalid value: {obj}: {path} in body should be "
                                   f"greater than or equal to {schema['minimum']}"))
        if "maximum" in schema and obj > schema["maximum"]:
            errs.append(FieldError(path, "FieldValueInvalid", f"Invalid value: {obj}: {path} in body should be "
                                   f"less than or equal to {schema['maximum']}"))
    if isinstance(obj, list):
        if "maxItems" in schema and len(obj) > schema["maxItems"]:
            errs.append(FieldError(path, "FieldValueTooMany", f"Too many: {len(obj)}: must have at most "
                                   f"{schema['maxItems']} items"))
        if "minItems" in schema and len(obj) < schema["minItems"]:
            errs.append(FieldError(path, "FieldValueInvalid", f"Invalid value: {len(obj)}: {path} in body should have "
                                   f"at least {schema['minItems']} items"))
        if isinstance(schema.get("items"), dict):
            for i, item in enumerate(obj):
                errs += validate(item, schema["items"], _path(path, i), False)
    if isinstance(obj, dict):
        for req in schema.get("required") or []:
            if req not in obj:
                errs.append(FieldError(_path(path, req), "FieldValueRequired", "Required value"))
        props = schema.get("properties") or {}
        for k, v in obj.items():
            if root and k in _ROOT_KEYS:
                continue
            if k in props:
                errs += validate(v, props[k], _path(path, k), False)
            elif isinstance(schema.get("additionalProperties"), dict):
                errs += validate(v, schema["additionalProperties"], _path(path, k), False)
        if "maxProperties" in schema and len(obj) > schema["maxProperties"]:
            errs.append(FieldError(path, "FieldValueTooMany", f"Too many: {len(obj)}: must have at most "
                                   f"{schema['maxProperties']} items"))
    return errs


_MISSING = object()
_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def value_at(obj: Any, path: str) -> Any:
    """The value at a field path like ``spec.rules[0].matches`` (a sentinel when absent)."""
    cur = obj
    for name, idx in _TOKEN.findall(path):
        if name:
            if not isinstance(cur, dict) or name not in cur:
                return _MISSING
            cur = cur[name]
        else:
            i = int(idx)
            if not isinstance(cur, list) or i >= len(cur):
                return _MISSING
            cur = cur[i]
    return cur


def ratchet(errors: list[FieldError], new: Any, old: Any) -> list[FieldError]:
    """CRD validation ratcheting (Kubernetes 1.30+): an update may keep a value that was already
    invalid; only errors on changed fields count."""
    if old is None:
        return errors

    def unchanged(e: FieldError) -> bool:
        path = e.field
        if e.reason == "FieldValueRequired":  # the object missing the field must be unchanged
            path = re.sub(r"(\.[^.\[\]]+|\[\d+\])$", "", path)
        before = value_at(old, path)
        return before is not _MISSING and before == value_at(new, path)

    return [e for e in errors if not unchanged(e)]
