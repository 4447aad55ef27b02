"""Pure helpers of the fake API server: selectors, patches, time formats, Status objects.

Nothing here does I/O; ``tests.support.apiserver`` builds the server on top of it.
"""

from __future__ import annotations

import base64
import copy
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

Obj = dict[str, Any]

# --------------------------------------------------------------------------------------------
# Status objects and errors


class StatusError(Exception):
    """An API error answered as a ``Status`` object (``{"kind": "Status", ...}``)."""

    def __init__(self, code: int, reason: str, message: str, details: Obj | None = None,
                 retry_after: int | None = None, extra_meta: Obj | None = None) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.retry_after = retry_after
        self.extra_meta = extra_meta

    def status(self) -> Obj:
        return status_object(self.code, self.reason, self.message, self.details, self.extra_meta)


def status_object(code: int, reason: str, message: str, details: Obj | None = None,
                  meta: Obj | None = None) -> Obj:
    st: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": dict(meta or {}), "status": "Failure",
               "message": message, "reason": reason}
    if details:
        st["details"] = details
    st["code"] = code
    return st


def group_resource(group: str, plural: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(group: str, plural: str, name: str) -> StatusError:
    return StatusError(404, "NotFound", f'{group_resource(group, plural)} "{name}" not found',
                       {"name": name, "group": group, "kind": plural} if group else {"name": name, "kind": plural})


def already_exists(group: str, plural: str, name: str) -> StatusError:
    d: Obj = {"name": name, "kind": plural}
    if group:
        d["group"] = group
    return StatusError(409, "AlreadyExists", f'{group_resource(group, plural)} "{name}" already exists', d)


def conflict(group: str, plural: str, name: str, why: str = "") -> StatusError:
    d: Obj = {"name": name, "kind": plural}
    if group:
        d["group"] = group
    why = why or "the object has been modified; please apply your changes to the latest version and try again"
    return StatusError(409, "Conflict", f'Operation cannot be fulfilled on {group_resource(group, plural)} "{name}": {why}', d)


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


@dataclass
class FieldError:
    field: str
    reason: str  # FieldValueRequired, FieldValueInvalid, FieldValueTooLong, FieldValueForbidden, ...
    message: str


def invalid(group: str, kind: str, name: str, errors: list[FieldError]) -> StatusError:
    msgs = [f"{e.field}: {e.message}" if e.field else e.message for e in errors]
    joined = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    d: Obj = {"name": name, "kind": kind,
              "causes": [{"reason": e.reason, "message": e.message, "field": e.field} for e in errors]}
    if group:
        d["group"] = group
    return StatusError(422, "Invalid", f'{kind + "." + group if group else kind} "{name}" is invalid: {joined}', d)


# --------------------------------------------------------------------------------------------
# Time formats

MICROTIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$")
TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def rfc3339(dt: datetime) -> str:
    global _last_rfc3339
    second = math.floor(dt.timestamp())
    last = _last_rfc3339
    if last[0] != second:  # formatted once a second (every write stamps managedFields)
        last = _last_rfc3339 = (second, dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return last[1]


_last_rfc3339: tuple[int | None, str] = (None, "")


def rfc3339_micro(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def check_microtime(value: Any) -> str | None:
    """None when ``value`` decodes as a metav1.MicroTime (RFC 3339 with exactly 6 fraction digits)."""
    if value is None:
        return None
    if not isinstance(value, str):
        return f"json: cannot unmarshal {type(value).__name__} into Go value of type string"
    if not MICROTIME_RE.match(value):
        return (f'parsing time "{value}" as "2006-01-02T15:04:05.000000Z07:00": cannot parse '
                f'"{value[19:] or value}" as ".000000"')
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as e:
        return f'parsing time "{value}": {e}'
    return None


def check_time(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not TIME_RE.match(value):
        return f'parsing time "{value}" as "2006-01-02T15:04:05Z07:00": cannot parse'
    return None


# --------------------------------------------------------------------------------------------
# Label selectors

_KEY_RE = re.compile(r"^([a-z0-9A-Z]([-a-z0-9A-Z.]*[a-z0-9A-Z])?/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?$")
_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_SET_RE = re.compile(r"^\s*(\S+?)\s+(in|notin)\s*\((.*)\)\s*$")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        has = self.key in labels
        v = labels.get(self.key)
        if self.op == "=":
            return has and v == self.values[0]
        if self.op == "!=":
            return not has or v != self.values[0]
        if self.op == "in":
            return has and v in self.values
        if self.op == "notin":
            return not has or v not in self.values
        if self.op == "exists":
            return has
        return not has


def _split_top(s: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def parse_label_selector(sel: str | None) -> list[Requirement]:
    if not sel or not sel.strip():
        return []
    reqs: list[Requirement] = []
    for raw in _split_top(sel):
        part = raw.strip()
        if not part:
            raise bad_request(f"unable to parse requirement: found '', expected: identifier (selector {sel!r})")
        m = _SET_RE.match(part)
        if m:
            key, op, vals = m.group(1), m.group(2), m.group(3)
            values = tuple(v.strip() for v in vals.split(",") if v.strip())
            if not values:
                raise bad_request(f"unable to parse requirement: for 'in', 'notin' operators, values set can't be empty ({sel!r})")
            req = Requirement(key, op, values)
        elif part.startswith("!"):
            req = Requirement(part[1:].strip(), "!")
        elif "!=" in part:
            k, v = part.split("!=", 1)
            req = Requirement(k.strip(), "!=", (v.strip(),))
        elif "==" in part:
            k, v = part.split("==", 1)
            req = Requirement(k.strip(), "=", (v.strip(),))
        elif "=" in part:
            k, v = part.split("=", 1)
            req = Requirement(k.strip(), "=", (v.strip(),))
        else:
            if " " in part:
                raise bad_request(f"unable to parse requirement: found '{part}' in selector {sel!r}")
            req = Requirement(part, "exists")
        if not _KEY_RE.match(req.key):
            raise bad_request(f'unable to parse requirement: <nil>: Invalid value: "{req.key}": name part must '
                              "consist of alphanumeric characters, '-', '_' or '.'")
        for v in req.values:
            if len(v) > 63 or not _VALUE_RE.match(v):
                raise bad_request(f'unable to parse requirement: values[0][{req.key}]: Invalid value: "{v}"')
        reqs.append(req)
    return reqs


def labels_match(reqs: list[Requirement], obj: Obj) -> bool:
    if not reqs:
        return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(r.matches(labels) for r in reqs)


# --------------------------------------------------------------------------------------------
# Field selectors


@dataclass(frozen=True)
class FieldReq:
    field: str
    op: str  # "=" or "!="
    value: str


def parse_field_selector(sel: str | None, supported: dict[str, Callable[[Obj], str]],
                         describe: str) -> list[FieldReq]:
    if not sel or not sel.strip():
        return []
    out: list[FieldReq] = []
    for raw in sel.split(","):
        part = raw.strip()
        if "!=" in part:
            f, v = part.split("!=", 1)
            op = "!="
        elif "==" in part:
            f, v = part.split("==", 1)
            op = "="
        elif "=" in part:
            f, v = part.split("=", 1)
            op = "="
        else:
            raise bad_request(f"invalid selector: '{sel}'; can't understand '{part}'")
        f = f.strip()
        if f not in supported:
            raise bad_request(f'field label not supported: {f}' if not describe
                              else f'"{f}" is not a known field selector: only {describe}')
        out.append(FieldReq(f, op, v.strip()))
    return out


def fields_match(reqs: list[FieldReq], obj: Obj, supported: dict[str, Callable[[Obj], str]]) -> bool:
    for r in reqs:
        val = supported[r.field](obj)
        if (val == r.value) != (r.op == "="):
            return False
    return True


# --------------------------------------------------------------------------------------------
# Patches


class PatchError(Exception):
    pass


def merge_patch(target: Any, patch: Any, *, copy_values: bool = True) -> Any:
    """RFC 7386 JSON merge patch. The result shares what the patch leaves alone with ``target``
    (never edited) and holds copies of the patch's values, or, with ``copy_values=False``
    (for a patch nothing else holds), the values themselves."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch) if copy_values else patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v, copy_values=copy_values)
    return out


def _ptr(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], tok: str, allow_end: bool) -> int:
    if tok == "-" and allow_end:
        return len(container)
    if not tok.isdigit() or (tok != "0" and tok.startswith("0")):
        raise PatchError(f"invalid array index {tok!r}")
    i = int(tok)
    limit = len(container) if allow_end else len(container) - 1
    if i > limit:
        raise PatchError(f"array index {i} out of bounds")
    return i


def _walk(doc: Any, parts: list[str]) -> Any:
    cur = doc
    for tok in parts:
        if isinstance(cur, dict):
            if tok not in cur:
                raise PatchError(f"doc is missing path: /{'/'.join(parts)}")
            cur = cur[tok]
        elif isinstance(cur, list):
            cur = cur[_index(cur, tok, False)]
        else:
            raise PatchError(f"doc is missing path: /{'/'.join(parts)}")
    return cur


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, True), value)
    else:
        raise PatchError(f"add operation does not apply: doc is missing path: /{'/'.join(parts)}")
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    if not parts:
        raise PatchError("unable to remove the whole document")
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"remove operation does not apply: doc is missing path: /{'/'.join(parts)}")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, False))
    raise PatchError(f"remove operation does not apply: doc is missing path: /{'/'.join(parts)}")


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902 JSON patch; raises PatchError when an operation does not apply."""
    if not isinstance(ops, list):
        raise PatchError("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise PatchError("invalid operation")
        kind = op["op"]
        path = _ptr(op.get("path", ""))
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "replace":
            _walk(doc, path)  # must exist
            if not path:
                doc = copy.deepcopy(op.get("value"))
            else:
                _remove(doc, path)
                doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "move":
            src = _ptr(op.get("from", ""))
            val = _remove(doc, src)
            doc = _add(doc, path, val)
        elif kind == "copy":
            src = _ptr(op.get("from", ""))
            doc = _add(doc, path, copy.deepcopy(_walk(doc, src)))
        elif kind == "test":
            try:
                cur = _walk(doc, path)
            except PatchError:
                raise PatchError(f"testing value /{'/'.join(path)} failed: path missing") from None
            if cur != op.get("value"):
                raise PatchError(f"testing value /{'/'.join(path)} failed: test failed")
        else:
            raise PatchError(f"Unexpected kind: {kind}")
    return doc


# Strategic merge: list fields merged by key (the patchMergeKey of the built-in types we serve).
_SMP_KEYS: dict[str, str] = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name", "env": "name",
    "volumes": "name", "volumeMounts": "mountPath", "volumeDevices": "devicePath",
    "conditions": "type", "ownerReferences": "uid", "imagePullSecrets": "name", "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey", "resourceClaims": "name", "readinessGates": "conditionType",
}
_SMP_SETS = {"finalizers"}


def _smp_list(path: tuple[str, ...], name: str) -> tuple[str | None, bool]:
    """(merge key, is-primitive-set) for a list field."""
    if name == "ports":
        return ("containerPort" if "containers" in path or "initContainers" in path else "port"), False
    if name in _SMP_KEYS:
        return _SMP_KEYS[name], False
    if name in _SMP_SETS:
        return None, True
    return None, False


def strategic_merge(target: Any, patch: Any, path: tuple[str, ...] = ()) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for k, v in patch.items():
        if k in ("$patch", "$retainKeys") or k.startswith("$setElementOrder/"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            field = k.split("/", 1)[1]
            if isinstance(out.get(field), list):
                out[field] = [x for x in out[field] if x not in (v or [])]
            continue
        if v is None:
            out.pop(k, None)
            continue
        if isinstance(v, list):
            key, is_set = _smp_list(path, k)
            cur = out.get(k)
            if key and isinstance(cur, list):
                merged = [copy.deepcopy(x) for x in cur]
                for item in v:
                    if not isinstance(item, dict) or key not in item:
                        merged = copy.deepcopy(v)
                        break
                    idx = next((i for i, x in enumerate(merged) if isinstance(x, dict) and x.get(key) == item[key]), None)
                    if item.get("$patch") == "delete":
                        if idx is not None:
                            merged.pop(idx)
                        continue
                    if idx is None:
                        merged.append({a: b for a, b in copy.deepcopy(item).items() if not a.startswith("$")})
                    else:
                        merged[idx] = strategic_merge(merged[idx], item, path + (k,))
                out[k] = merged
            elif is_set and isinstance(cur, list):
                out[k] = cur + [x for x in v if x not in cur]
            else:
                out[k] = [strategic_merge(None, x, path + (k,)) if isinstance(x, dict) else copy.deepcopy(x) for x in v]
            continue
        res = strategic_merge(out.get(k), v, path + (k,))
        if res is None:
            out.pop(k, None)
        else:
            out[k] = res
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out


# --------------------------------------------------------------------------------------------
# Misc


def strip_nulls(v: Any) -> Any:
    """Drop null map values (what omitempty JSON of a typed object does on the way through)."""
    if isinstance(v, dict):
        return {k: strip_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [strip_nulls(x) for x in v]
    return v


def stripped_copy(v: Any) -> Any:
    """``strip_nulls(copy.deepcopy(v))`` in one pass: fresh dicts and lists, null map values
    dropped, JSON scalars shared (immutable); anything else goes the long way."""
    t = type(v)
    if t is dict:
        return {k: stripped_copy(x) for k, x in v.items() if x is not None}
    if t is list:
        return [stripped_copy(x) for x in v]
    if t is str or t is int or t is float or t is bool or v is None:
        return v
    return strip_nulls(copy.deepcopy(v))


def strip_nulls_in_place(v: Any) -> Any:
    """:func:`strip_nulls` done on ``v`` itself (for a tree nothing else references): null map
    values removed from every dict and list inside it; returns ``v``."""
    if isinstance(v, dict):
        nulls = [k for k, x in v.items() if x is None]
        for k in nulls:
            del v[k]
        for x in v.values():
            if isinstance(x, (dict, list)):
                strip_nulls_in_place(x)
    elif isinstance(v, list):
        for x in v:
            if isinstance(x, (dict, list)):
                strip_nulls_in_place(x)
    return v


DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


def encode_continue(rv: int, start: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        d = json.loads(raw)
        if d.get("v") != "meta.k8s.io/v1" or not isinstance(d.get("rv"), int) or not isinstance(d.get("start"), str):
            raise ValueError("bad token")
        return d["rv"], d["start"]
    except (ValueError, TypeError, json.JSONDecodeError) as e:
        raise bad_request(f"continue key is not valid: {e}") from None
