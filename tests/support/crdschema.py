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
from collections.abc import Callable, Collection
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from tests.support.k8sutil import FieldError

Obj = dict[str, Any]

CRD_DIR = Path(__file__).resolve().parents[2] / "charts" / "titanium-gateway" / "crds"
_ROOT_KEYS = frozenset({"apiVersion", "kind", "metadata"})


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


def normalize(obj: Any, schema: Obj, *, prune_unknown: bool = True,
              reuse: Collection[Any] = ()) -> tuple[Any, list[str]]:
    """``(copy, pruned)``: exactly ``copy = stripped_copy(obj); pruned = prune(copy, schema)``
    (only with ``prune_unknown``) ``; apply_defaults(copy, schema)``, in one walk, with each
    schema node compiled once into a closure. ``obj`` is not modified and shares nothing
    with the copy; ``pruned`` lists the dropped fields in :func:`prune`'s order.

    ``reuse``: fields of ``obj`` (a dict) that are normalized already (see :func:`stable`);
    the copy takes them as they are, in their place."""
    pruned: list[str] = []
    norm = _normalizer(schema, prune_unknown, True)
    if not reuse:
        return norm(obj, "", pruned), pruned
    rest = norm({k: v for k, v in obj.items() if k not in reuse}, "", pruned)
    out = {}
    for k, v in obj.items():
        if k in reuse:
            out[k] = v
        elif v is not None and k in rest:
            out[k] = rest[k]
    for k, v in rest.items():  # then the defaults added (none for a field reused)
        if k not in out:
            out[k] = v
    return out, pruned


def null_free_defaults(schema: Obj) -> bool:
    """True when no ``default`` in ``schema`` is or holds a null map value (then what
    :func:`normalize` returns has no null map value either)."""
    key = id(schema)
    entry = _NULL_FREE.get(key)
    if entry is None or entry[0] is not schema:
        entry = (schema, not _has_null_default(schema))
        _NULL_FREE[key] = entry
    return entry[1]


_NULL_FREE: dict[int, tuple[Obj, bool]] = {}


def stable(schema: Obj) -> bool:
    """True when what :func:`normalize` returns is normalized already (normalizing it again
    gives it back, nothing pruned): no default holds a null map value or a field its own
    schema would prune. A field of an object written through ``normalize`` + :func:`validate`
    with no error can then be stored and taken again as it is."""
    key = id(schema)
    entry = _STABLE.get(key)
    if entry is None or entry[0] is not schema:
        entry = (schema, null_free_defaults(schema) and not _unstable_default(schema))
        _STABLE[key] = entry
    return entry[1]


_STABLE: dict[int, tuple[Obj, bool]] = {}


def _unstable_default(node: Any) -> bool:
    """Whether some default in ``node`` (a schema) has a field pruned once it is defaulted."""
    if not isinstance(node, dict):
        return False
    for sub in (node.get("properties") or {}).values():
        if isinstance(sub, dict) and "default" in sub:
            value = copy.deepcopy(sub["default"])
            apply_defaults(value, sub)
            if prune(value, sub, root=False):
                return True
    children = list((node.get("properties") or {}).values())
    children += [node[k] for k in ("additionalProperties", "items") if isinstance(node.get(k), dict)]
    return any(_unstable_default(c) for c in children)


def _has_null_default(node: Any) -> bool:
    if isinstance(node, dict):
        if "default" in node and _holds_null(node["default"]):
            return True
        return any(_has_null_default(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_null_default(v) for v in node)
    return False


def _holds_null(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, dict):
        return any(x is None or _holds_null(x) for x in v.values())
    if isinstance(v, list):
        return any(_holds_null(x) for x in v if x is not None)
    return False


#: a field path built only when a field is dropped: "" (the root) or (parent path, key)
LazyPath = Any
Norm = Callable[[Any, LazyPath, list[str]], Any]
#: (id(schema node), prune, root) -> (the node, its normalizer); the node keeps its id in use
_NORMS: dict[tuple[int, bool, bool], tuple[Obj, Norm]] = {}
_SCALARS = (str, int, float, bool, type(None))


def _render(p: LazyPath) -> str:
    keys: list[str | int] = []
    while p:
        p, k = p
        keys.append(k)
    out = ""
    for k in reversed(keys):
        out = _path(out, k)
    return out


def _normalizer(schema: Obj, prune_unknown: bool, root: bool = False) -> Norm:
    key = (id(schema), prune_unknown, root)
    entry = _NORMS.get(key)
    if entry is None or entry[0] is not schema:
        entry = (schema, _compile_normalizer(schema, prune_unknown, root))
        _NORMS[key] = entry
    return entry[1]


def _compile_normalizer(schema: Obj, prune_unknown: bool, root: bool) -> Norm:  # noqa: C901 - mirrors three walks
    """The closure :func:`normalize` runs for one schema node: copy as :func:`stripped_copy`
    (null map values dropped), drop unknown fields as :func:`prune` (from a dict at a node
    with ``x-kubernetes-preserve-unknown-fields`` down nothing is pruned; list items still
    are), add absent defaults as :func:`apply_defaults` (appended in ``properties`` order)."""
    from tests.support.k8sutil import strip_nulls, stripped_copy

    props = schema.get("properties")
    addl = schema.get("additionalProperties")
    addl_schema = addl if isinstance(addl, dict) else None
    items = schema.get("items") if isinstance(schema.get("items"), dict) else None
    prune_here = prune_unknown and not schema.get("x-kubernetes-preserve-unknown-fields")
    drop = prune_here and addl is not True and (props is not None or addl is False or schema.get("type") == "object")
    defaults = [(k, sub["default"], sub) for k, sub in (props or {}).items() if "default" in sub]
    children: dict[Any, Norm] = {}  # key -> the normalizer of its property
    generic: list[Norm] = []  # [the normalizer of additionalProperties], once needed
    item_norm: list[Norm] = []

    def child(k: Any, prune_child: bool) -> Norm | None:
        if props is not None and k in props:
            return _normalizer(props[k], prune_child)
        if addl_schema is not None:
            return _normalizer(addl_schema, prune_child)
        return None

    def default_value(value: Any, sub: Obj) -> Any:
        if type(value) in _SCALARS:
            return value
        value = copy.deepcopy(value)
        apply_defaults(value, sub)
        return value

    def norm(obj: Any, path: LazyPath, pruned: list[str]) -> Any:
        t = type(obj)
        if t is dict:
            out = {}
            for k, x in obj.items():
                if x is None:
                    continue
                if root and k in _ROOT_KEYS:  # never pruned, still defaulted
                    sub_norm = child(k, False)
                    out[k] = stripped_copy(x) if sub_norm is None else sub_norm(x, (path, k), pruned)
                    continue
                sub_norm = children.get(k)
                if sub_norm is None:
                    if props is not None and k in props:
                        sub_norm = children[k] = _normalizer(props[k], prune_here)
                    elif addl_schema is not None:
                        if not generic:
                            generic.append(_normalizer(addl_schema, prune_here))
                        sub_norm = generic[0]
                    elif drop:
                        pruned.append(_render((path, k)))
                        continue
                    else:
                        out[k] = stripped_copy(x)
                        continue
                out[k] = x if type(x) in _SCALARS else sub_norm(x, (path, k), pruned)  # a scalar is itself
            for k, value, sub in defaults:
                if k not in out:
                    out[k] = default_value(value, sub)
            return out
        if t is list:
            if items is None:
                return stripped_copy(obj)
            if not item_norm:
                item_norm.append(_normalizer(items, prune_unknown))
            each = item_norm[0]
            return [x if type(x) in _SCALARS else each(x, (path, i), pruned) for i, x in enumerate(obj)]
        if t in _SCALARS:
            return obj
        # anything else (a dict or list subclass, a tuple, ...) the long way
        out = strip_nulls(copy.deepcopy(obj))
        if prune_unknown:
            pruned += prune(out, schema, _render(path), root)
        apply_defaults(out, schema)
        return out

    return norm


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


def validate(obj: Any, schema: Obj, path: str = "", root: bool = True, *,
             skip: Collection[Any] = ()) -> list[FieldError]:
    """Errors of ``obj`` against ``schema``: exactly :func:`_validate_reference` (same checks,
    same order, same messages), with each schema node compiled once into a closure that only
    runs the checks the node has. ``skip``: fields of ``obj`` left out (as the root's
    apiVersion, kind and metadata are), e.g. ones known to have no error."""
    errs: list[FieldError] = []
    top = _ROOT_KEYS if root else _NO_KEYS
    _compiled(schema)(obj, path, top | frozenset(skip) if skip else top, errs)
    return errs


#: a check's third argument: the fields of the value it checks to leave out (the root's)
Check = Callable[[Any, str, Collection[Any], list[FieldError]], None]
_NO_KEYS: frozenset[Any] = frozenset()
#: id(schema node) -> (the node, its check); holding the node keeps its id from being reused
_CHECKS: dict[int, tuple[Obj, Check]] = {}


def _compiled(schema: Obj) -> Check:
    entry = _CHECKS.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = (schema, _compile(schema))
        _CHECKS[id(schema)] = entry
    return entry[1]


_ITEMS = object()  # the key of the items' check among a node's child checks


def _compile(schema: Obj) -> Check:  # noqa: C901 - one closure mirroring _validate_reference
    int_or_string = bool(schema.get("x-kubernetes-int-or-string"))
    stype = schema.get("type")
    nullable = bool(schema.get("nullable"))
    type_check = _TYPE_CHECKS.get(stype, _any_type) if stype is not None else None
    has_enum, enum = "enum" in schema, schema.get("enum")
    max_len = schema.get("maxLength")
    min_len = schema.get("minLength")
    pat = _pattern(schema["pattern"]) if "pattern" in schema else None
    date_time = schema.get("format") == "date-time"
    str_checks = max_len is not None or min_len is not None or pat is not None or date_time
    minimum = schema.get("minimum")
    maximum = schema.get("maximum")
    num_checks = minimum is not None or maximum is not None
    max_items = schema.get("maxItems")
    min_items = schema.get("minItems")
    items = schema.get("items") if isinstance(schema.get("items"), dict) else None
    required = schema.get("required") or []
    props = schema.get("properties") or {}
    addl = schema.get("additionalProperties") if isinstance(schema.get("additionalProperties"), dict) else None
    max_props = schema.get("maxProperties")

    child_checks: dict[Any, Check] = {}  # property name (or _ITEMS) -> its check

    def each(obj: list[Any], path: str, errs: list[FieldError]) -> None:
        item_check = child_checks.get(_ITEMS)
        if item_check is None:
            item_check = child_checks[_ITEMS] = _compiled(items)  # type: ignore[arg-type]
        for i, item in enumerate(obj):
            item_check(item, f"{path}[{i}]", _NO_KEYS, errs)

    def fields(obj: dict[Any, Any], path: str, skip: Collection[Any], errs: list[FieldError]) -> None:
        for req in required:
            if req not in obj:
                errs.append(FieldError(_path(path, req), "FieldValueRequired", "Required value"))
        for k, v in obj.items():
            if skip and k in skip:
                continue
            sub_check = child_checks.get(k)
            if sub_check is None:
                sub = props.get(k) if k in props else addl
                if sub is None:
                    continue
                sub_check = _compiled(sub)
                if k in props:
                    child_checks[k] = sub_check
            sub_check(v, (f"{path}.{k}" if path else k) if type(k) is str else _path(path, k), _NO_KEYS, errs)
        if max_props is not None and len(obj) > max_props:
            errs.append(FieldError(path, "FieldValueTooMany", f"Too many: {len(obj)}: must have at most "
                                   f"{max_props} items"))

    def array(obj: list[Any], path: str, errs: list[FieldError]) -> None:
        if max_items is not None and len(obj) > max_items:
            errs.append(FieldError(path, "FieldValueTooMany", f"Too many: {len(obj)}: must have at most "
                                   f"{max_items} items"))
        if min_items is not None and len(obj) < min_items:
            errs.append(FieldError(path, "FieldValueInvalid", f"Invalid value: {len(obj)}: {path} in body should have "
                                   f"at least {min_items} items"))
        if items is not None:
            each(obj, path, errs)

    def values(obj: Any, path: str, errs: list[FieldError]) -> None:
        """The enum, string and number checks of a value of the right type."""
        if has_enum and obj not in enum:  # type: ignore[operator]
            allowed = ", ".join(_short(e) for e in enum)  # type: ignore[union-attr]
            errs.append(FieldError(path, "FieldValueNotSupported",
                                   f"Unsupported value: {_short(obj)}: supported values: {allowed}"))
        if str_checks and isinstance(obj, str):
            if max_len is not None and len(obj) > max_len:
                errs.append(FieldError(path, "FieldValueTooLong", f"Too long: may not be more than {max_len} bytes"))
            if min_len is not None and len(obj) < min_len:
                errs.append(FieldError(path, "FieldValueInvalid", f"Invalid value: {_short(obj)}: {path} in body should be "
                                       f"at least {min_len} chars long"))
            if pat is not None and not pat.search(obj):
                errs.append(FieldError(path, "FieldValueInvalid", f"Invalid value: {_short(obj)}: {path} in body should "
                                       f"match '{schema['pattern']}'"))
            if date_time:
                try:
                    datetime.fromisoformat(obj.replace("Z", "+00:00"))
                    if "T" not in obj:
                        raise ValueError(obj)
                except ValueError:
                    errs.append(FieldError(path, "FieldValueInvalid", f"Invalid value: {_short(obj)}: {path} in body must "
                                           "be of type date-time"))
        if num_checks and isinstance(obj, (int, float)) and not isinstance(obj, bool):
            if minimum is not None and obj < minimum:
                errs.append(FieldError(path, "FieldValueInvalid", f"Invalid value: {obj}: {path} in body should be "
                                       f"greater than or equal to {minimum}"))
            if maximum is not None and obj > maximum:
                errs.append(FieldError(path, "FieldValueInvalid", f"Invalid value: {obj}: {path} in body should be "
                                       f"less than or equal to {maximum}"))

    def check(obj: Any, path: str, skip: Collection[Any], errs: list[FieldError]) -> None:
        if int_or_string:
            ok = isinstance(obj, (int, str)) and not isinstance(obj, bool)
        elif type_check is None:
            ok = True
        elif obj is None:
            ok = nullable
        else:
            ok = bool(type_check(obj))
        if not ok:
            errs.append(FieldError(path, "FieldValueTypeInvalid", f"Invalid value: {_short(obj)}: {path} in body must "
                                   f"be of type {stype}: {_short(type(obj).__name__)}"))
            return
        if obj is None:
            return
        if has_enum or str_checks or num_checks:
            values(obj, path, errs)
        if isinstance(obj, list):
            array(obj, path, errs)
        elif isinstance(obj, dict):
            fields(obj, path, skip, errs)

    if int_or_string:
        return check
    # the common cases: a value of exactly the node's type (no type error possible, never None)
    # skips straight to the checks the node has
    if stype == "string" and not has_enum and not str_checks:
        def plain_string(obj: Any, path: str, skip: Collection[Any], errs: list[FieldError]) -> None:
            if type(obj) is not str:
                check(obj, path, skip, errs)
        return plain_string
    if stype == "object" and not has_enum:
        def plain_object(obj: Any, path: str, skip: Collection[Any], errs: list[FieldError]) -> None:
            if type(obj) is dict:
                fields(obj, path, skip, errs)
            else:
                check(obj, path, skip, errs)
        return plain_object
    if stype == "array" and not has_enum:
        def plain_array(obj: Any, path: str, skip: Collection[Any], errs: list[FieldError]) -> None:
            if type(obj) is list:
                array(obj, path, errs)
            else:
                check(obj, path, skip, errs)
        return plain_array
    # a scalar of exactly the node's type: only its value checks
    exact = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,)}.get(stype or "")
    if exact is not None:
        def plain_value(obj: Any, path: str, skip: Collection[Any], errs: list[FieldError]) -> None:
            if type(obj) in exact:  # type: ignore[operator]
                if has_enum or str_checks or num_checks:
                    values(obj, path, errs)
            else:
                check(obj, path, skip, errs)
        return plain_value
    return check


def _validate_reference(obj: Any, schema: Obj, path: str = "", root: bool = True) -> list[FieldError]:
    """The plain recursive walk :func:`validate` compiles (kept to check the compiled form against)."""
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
                errs += _validate_reference(item, schema["items"], _path(path, i), False)
    if isinstance(obj, dict):
        for req in schema.get("required") or []:
            if req not in obj:
                errs.append(FieldError(_path(path, req), "FieldValueRequired", "Required value"))
        props = schema.get("properties") or {}
        for k, v in obj.items():
            if root and k in _ROOT_KEYS:
                continue
            if k in props:
                errs += _validate_reference(v, props[k], _path(path, k), False)
            elif isinstance(schema.get("additionalProperties"), dict):
                errs += _validate_reference(v, schema["additionalProperties"], _path(path, k), False)
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
