"""Informer transforms (client-go ``SharedInformer.SetTransform``): what the caches keep.

Every object the reflectors list or watch goes through ``transform_for(kind)`` before it is
stored, so fields that neither the render nor the controller ever reads do not take memory for
the life of the process. Each transform is pure: it never modifies its input (the API client's
decoded dict may be shared) and returns the same object when there is nothing to drop.

Dropped (checked against every read in ``titanium_gateway/render/``, the reconciler, the
writers and the prober; ``tests/controller/test_transform.py`` renders every golden input with
and without the transforms and requires identical results):

* every kind: ``metadata.managedFields`` and the annotation
  ``kubectl.kubernetes.io/last-applied-configuration`` (a copy of the whole applied object);
* EndpointSlice endpoints: ``targetRef``, ``nodeName``, ``zone``, ``hints``,
  ``deprecatedTopology`` (the render reads ``addresses`` and ``conditions.ready``), except on
  the data-plane Service's slices, where the prober names pods by ``targetRef.name``;
* Service: ``status``, except the data-plane Service's (its load-balancer address is published);
* Secret: ``data``/``stringData`` of any type but ``kubernetes.io/tls`` (the render rejects
  those by type before reading data; the field selector keeps them out of the cache anyway);
* Pod (data-plane pods): everything but ``metadata`` and ``status.podIP``/``podIPs`` (the
  fields in ``prober.POD_FIELDS_USED``: the prober maps endpoints to pods by address, the pod
  writers read metadata only).

Then every kept object is *compacted* (:func:`compact`): rebuilt with each mapping key and
each short string value interned, so the 10k HTTPRoutes of a large cluster share one ``"name"``,
``"PathPrefix"`` or ``"gateway.networking.k8s.io"`` instead of holding 10k copies each (a
watch event is decoded on its own, so nothing is shared across objects otherwise). Values are
unchanged (equal strings): at 10k HTTPRoutes + 10k Ingresses the caches hold ~125 MiB instead
of ~180 MiB (benchmarks/FINDINGS.md C4).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]
Transform = Callable[[Obj], Obj]

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
TLS_SECRET_TYPE = "kubernetes.io/tls"
ENDPOINT_FIELDS_DROPPED = ("targetRef", "nodeName", "zone", "hints", "deprecatedTopology")
POD_FIELDS_KEPT = ("apiVersion", "kind", "metadata")
POD_STATUS_KEPT = ("podIP", "podIPs")


def strip_metadata(obj: Obj) -> Obj:
    """``obj`` without ``metadata.managedFields`` and the last-applied-configuration annotation."""
    md = obj.get("metadata")
    if not isinstance(md, dict):
        return obj
    ann = md.get("annotations")
    drop_applied = isinstance(ann, dict) and LAST_APPLIED in ann
    if not drop_applied and "managedFields" not in md:
        return obj
    meta = {k: v for k, v in md.items() if k != "managedFields"}
    if drop_applied:
        assert isinstance(ann, dict)
        meta["annotations"] = {k: v for k, v in ann.items() if k != LAST_APPLIED}
    out = dict(obj)
    out["metadata"] = meta
    return out


def _is_service(obj: Obj, service: tuple[str, str], *, by_label: bool) -> bool:
    md = obj.get("metadata")
    if not isinstance(md, dict) or md.get("namespace") != service[0]:
        return False
    if by_label:
        labels = md.get("labels")
        return isinstance(labels, dict) and labels.get(SERVICE_NAME_LABEL) == service[1]
    return md.get("name") == service[1]


def endpoint_slice_transform(data_plane_service: tuple[str, str]) -> Transform:
    def transform(obj: Obj) -> Obj:
        obj = strip_metadata(obj)
        eps = obj.get("endpoints")
        if not isinstance(eps, list) or _is_service(obj, data_plane_service, by_label=True):
            return obj
        if not any(isinstance(ep, dict) and any(f in ep for f in ENDPOINT_FIELDS_DROPPED) for ep in eps):
            return obj
        out = dict(obj)
        out["endpoints"] = [{k: v for k, v in ep.items() if k not in ENDPOINT_FIELDS_DROPPED}
                            if isinstance(ep, dict) else ep for ep in eps]
        return out

    return transform


def service_transform(data_plane_service: tuple[str, str]) -> Transform:
    def transform(obj: Obj) -> Obj:
        obj = strip_metadata(obj)
        if "status" not in obj or _is_service(obj, data_plane_service, by_label=False):
            return obj
        return {k: v for k, v in obj.items() if k != "status"}

    return transform


def secret_transform(obj: Obj) -> Obj:
    obj = strip_metadata(obj)
    if obj.get("type") == TLS_SECRET_TYPE or ("data" not in obj and "stringData" not in obj):
        return obj
    return {k: v for k, v in obj.items() if k not in ("data", "stringData")}


def pod_transform(obj: Obj) -> Obj:
    obj = strip_metadata(obj)
    status = obj.get("status")
    status_ok = status is None or (isinstance(status, dict) and all(k in POD_STATUS_KEPT for k in status))
    if status_ok and all(k in POD_FIELDS_KEPT or k == "status" for k in obj):
        return obj
    out = {k: v for k, v in obj.items() if k in POD_FIELDS_KEPT}
    if isinstance(status, dict):
        out["status"] = {k: v for k, v in status.items() if k in POD_STATUS_KEPT}
    return out


#: Strings up to this length are interned (names, kinds, types, timestamps, short messages);
#: longer ones (certificates, long messages) are kept as they are, never copied.
MAX_INTERNED = 64
_intern = sys.intern


def _compact(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {_intern(k) if type(k) is str else k: _compact(v) for k, v in value.items()}
    if kind is list:
        return [_compact(v) for v in value]
    if kind is str and len(value) <= MAX_INTERNED:
        return _intern(value)
    return value


def compact(obj: Obj) -> Obj:
    """A copy of ``obj`` with mapping keys and short strings interned (equal values, shared
    storage); ``obj`` itself when it is nested too deeply to rebuild."""
    try:
        out: Obj = _compact(obj)
    except RecursionError:
        return obj
    return out


def _compacting(fn: Transform) -> Transform:
    def transform(obj: Obj) -> Obj:
        return compact(fn(obj))

    transform.__name__ = f"compact_{getattr(fn, '__name__', 'transform')}"
    return transform


def transform_for(kind: str, data_plane_service: tuple[str, str]) -> Transform:
    """The transform of the informer of ``kind``: drop what nothing reads, then compact."""
    if kind == "EndpointSlice":
        return _compacting(endpoint_slice_transform(data_plane_service))
    if kind == "Service":
        return _compacting(service_transform(data_plane_service))
    if kind == "Secret":
        return _compacting(secret_transform)
    if kind == "Pod":
        return _compacting(pod_transform)
    return _compacting(strip_metadata)
