"""Pure status merging: the status an object ends with once the controller writes its own.

The render produces only this controller's view (:class:`~titanium_gateway.render.result.ObjectStatus`);
the status writer merges it into the object's current status and sends a JSON merge patch
(RFC 7386) to the ``/status`` subresource. These functions compute the same thing without a
cluster, so the offline render (``status.yaml``) shows what the controller would end with and the
writer and the offline CLI can share one definition:

* :func:`merged_status` - the merge-patch body the writer sends (same result as
  ``writers/status.py:merged_status``): for a route (HTTPRoute, GRPCRoute, TLSRoute, TCPRoute,
  UDPRoute), ``status.parents`` = the entries of other controllers from the current status (kept,
  in their order) + ours from the render (ours that the render no longer lists are dropped); for a
  BackendTLSPolicy ``status.ancestors`` the same way; for every other kind the whole status is ours
  (a field the render no longer sets is ``None``: removed by the merge patch).
* :func:`final_status` - that patch applied to the current status (RFC 7386), i.e. the status the
  object carries after the write.

A status that releases an object no longer ours (``result.Released``) is merged the same way.

Pure, deterministic, never raises on malformed input (non-mapping values are ignored).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from titanium_gateway import kinds


def _status_of(current: Any) -> Mapping[str, Any]:
    status = current.get("status") if isinstance(current, Mapping) else None
    return status if isinstance(status, Mapping) else {}


#: kind -> the status list shared with other controllers (entries told apart by ``controllerName``;
#: ``Kind.status``)
SHARED_LISTS: Mapping[str, str] = MappingProxyType(
    {row.kind: row.shared_list for row in kinds.KINDS if row.shared_list is not None})


def merged_status(kind: str, current: Any, wanted: Mapping[str, Any], controller_name: str) -> dict[str, Any]:
    """The merge-patch body for ``wanted`` (this controller's status) given the object ``current``."""
    cur = _status_of(current)
    shared = SHARED_LISTS.get(kind)
    if shared is None:
        out: dict[str, Any] = {k: None for k in cur if k not in wanted}
        out.update(wanted)
        return out
    entries = cur.get(shared)
    others = [
        p
        for p in (entries if isinstance(entries, list) else [])
        if isinstance(p, Mapping) and p.get("controllerName") != controller_name
    ]
    wanted_entries = wanted.get(shared)
    ours = [
        p
        for p in (wanted_entries if isinstance(wanted_entries, (list, tuple)) else [])
        if isinstance(p, Mapping) and p.get("controllerName") == controller_name
    ]
    merged = {k: v for k, v in wanted.items() if k != shared}
    merged[shared] = others + ours
    return merged


def _plain(value: Any) -> Any:
    """A copy made of plain dicts and lists (mappings and tuples, e.g. MappingProxyType, included)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (a new value of plain dicts/lists; the inputs are not modified)."""
    if not isinstance(patch, Mapping):
        return _plain(patch)
    out: dict[str, Any] = _plain(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(str(key), None)
        else:
            out[str(key)] = apply_merge_patch(out.get(str(key)), value)
    return out


def final_status(kind: str, current: Any, wanted: Mapping[str, Any], controller_name: str) -> dict[str, Any]:
    """The status the object ends with after the controller's write of ``wanted``."""
    result = apply_merge_patch(_status_of(current), merged_status(kind, current, wanted, controller_name))
    return result if isinstance(result, dict) else {}


__all__ = ["SHARED_LISTS", "merged_status", "apply_merge_patch", "final_status"]
