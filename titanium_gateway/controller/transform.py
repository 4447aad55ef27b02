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
  the data-plane Services' slices, where the prober names pods by ``targetRef.name``;
* Service: ``status``, except the data-plane Services' (their load-balancer addresses are
  published): the shared one's, and those the controller created for Gateways (labelled,
  render/planes.py);
* Secret: ``data``/``stringData`` of any type but ``kubernetes.io/tls`` (the render rejects
  those by type before reading data; the field selector keeps them out of the cache anyway);
* ConfigMap (watched where BackendTLSPolicy is installed, for the CA certificates policies
  name): every ``data`` key but ``ca.crt``, and ``binaryData``;
* Pod (every Pod of the data-plane namespace: which ones are the data plane is decided from the
  data-plane Service at each reconcile): everything but the fields in
  ``prober.POD_FIELDS_USED``: ``metadata`` name, namespace, uid, resourceVersion,
  deletionTimestamp, labels and the config-poke and listeners annotations, and
  ``status.podIP``/``podIPs`` (the discovery maps endpoints to pods by targetRef or address and
  matches labels against the Service's selector; the pod writers read metadata only).

Then every kept object is *compacted* (:func:`compact`): rebuilt with each mapping key and
each short string value interned, so the 10k HTTPRoutes of a large cluster share one ``"name"``,
``"PathPrefix"`` or ``"gateway.networking.k8s.io"`` instead of holding 10k copies each (a
watch event is decoded on its own, so nothing is shared across objects otherwise). Equal
mappings and lists below ``metadata`` are stored once as well (:class:`SharedValues`: status
conditions, ``parentRefs``, endpoint conditions, matches, backends). Values are unchanged
(strictly equal): at 10k HTTPRoutes + 10k Ingresses (benchmark workload, converged statuses) the
caches take ~82 MiB of RSS instead of ~143 MiB with interning alone (~180 MiB without).

A watched update is compacted against the cached version of the object (the reflector hands it
over, see ``Reflector.transform``): its parts that are strictly equal to the cached ones (the
spec and labels when only the status changed, as in an echo of our own status write) are
reused as they are, checked at C speed instead of rebuilt.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from typing import Any

from titanium_gateway.render.planes import is_managed

Obj = dict[str, Any]
Transform = Callable[[Obj], Obj]

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
TLS_SECRET_TYPE = "kubernetes.io/tls"
#: the key of a CA certificate ConfigMap (BackendTLSPolicy ``caCertificateRefs``)
CA_KEY = "ca.crt"
ENDPOINT_FIELDS_DROPPED = ("targetRef", "nodeName", "zone", "hints", "deprecatedTopology")
POD_FIELDS_KEPT = ("apiVersion", "kind", "metadata", "status")
POD_METADATA_KEPT = ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp", "labels", "annotations")
POD_ANNOTATIONS_KEPT = ("gateway.titaniumproxy.com/config-poke", "gateway.titaniumproxy.com/listeners")
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
    """Whether ``obj`` is the shared data plane's Service (or one of its slices: ``by_label``),
    or the Service (or a slice) of a Gateway's own data plane (labelled by the controller, and
    the EndpointSlice controller copies a Service's labels to its slices)."""
    md = obj.get("metadata")
    if not isinstance(md, dict):
        return False
    if is_managed(md.get("labels")):
        return True
    if md.get("namespace") != service[0]:
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


def config_map_transform(obj: Obj) -> Obj:
    """ConfigMaps are read for the CA certificate a BackendTLSPolicy names (key ``ca.crt``)."""
    obj = strip_metadata(obj)
    data = obj.get("data")
    if "binaryData" not in obj and (not isinstance(data, dict) or set(data) <= {CA_KEY}):
        return obj
    out = {k: v for k, v in obj.items() if k not in ("data", "binaryData")}
    if isinstance(data, dict) and CA_KEY in data:
        out["data"] = {CA_KEY: data[CA_KEY]}
    return out


def pod_transform(obj: Obj) -> Obj:
    """The Pod with only what the data-plane discovery, the prober and the pod writers read (the
    input itself when it holds nothing else)."""
    md = obj.get("metadata")
    status = obj.get("status")
    ann = md.get("annotations") if isinstance(md, dict) else None
    if (all(k in POD_FIELDS_KEPT for k in obj)
            and (not isinstance(md, dict) or all(k in POD_METADATA_KEPT for k in md))
            and (not isinstance(ann, dict) or all(k in POD_ANNOTATIONS_KEPT for k in ann))
            and (not isinstance(status, dict) or all(k in POD_STATUS_KEPT for k in status))):
        return obj
    out: Obj = {k: v for k, v in obj.items() if k in POD_FIELDS_KEPT and k not in ("metadata", "status")}
    if isinstance(md, dict):
        meta = {k: v for k, v in md.items() if k in POD_METADATA_KEPT}
        if isinstance(ann, dict):
            kept = {k: v for k, v in ann.items() if k in POD_ANNOTATIONS_KEPT}
            if kept:
                meta["annotations"] = kept
            else:
                meta.pop("annotations", None)
        out["metadata"] = meta
    elif md is not None:
        out["metadata"] = md
    if isinstance(status, dict):
        out["status"] = {k: v for k, v in status.items() if k in POD_STATUS_KEPT}
    return out


#: Strings up to this length are interned (names, kinds, types, timestamps, short messages);
#: longer ones (certificates, long messages) are kept as they are, never copied.
MAX_INTERNED = 64
_intern = sys.intern
_LIST = "[list]"


def _same(a: Any, b: Any) -> bool:
    """``a == b`` strictly, for two mappings or two lists whose containers are shared: the same
    keys in the same order, and each value the same object or an equal one of the same type
    (``True`` is not ``1``; floats only when identical, ``-0.0`` == ``0.0``)."""
    if type(a) is not type(b) or a != b:
        return False
    if type(a) is dict:
        return all(ka is kb and (x is y or (type(x) is type(y) and type(x) is not float))
                   for (ka, x), (kb, y) in zip(a.items(), b.items(), strict=True))
    return all(x is y or (type(x) is type(y) and type(x) is not float) for x, y in zip(a, b, strict=True))


class SharedValues:
    """Equal mappings and lists below the objects' ``metadata`` are stored once (hash-consing,
    as interning does for strings): every HTTPRoute of a Gateway holds the same ``parentRefs``
    and status conditions, every ready endpoint the same ``conditions``, every Ingress of one
    load balancer the same ``status``, so the informer caches keep one copy of each.

    Equality is strict and ordered (same keys in the same order, same value types: ``True`` is
    not ``1``; a value holding a float is never shared): a shared value reads exactly like the
    decoded one. Values are built bottom-up, so a container's children are already shared and
    hash and compare by identity. The table maps a value's hash to its one instance; a hash
    collision just leaves the newer value unshared. Entries whose value no object holds any more are pruned whenever
    the table has doubled since the last prune (children after their parents), so the table
    stays proportional to what the caches hold. The cached objects are read-only (as in
    client-go): nothing may modify a shared value in place, and nothing in the controller does
    (the render is checked by ``tests/render/test_render.py``).

    Thread-safe: the informers' threads share one table; a race at worst leaves a value unshared.
    """

    #: Prune no sooner than at this many entries.
    MIN_PRUNE = 4096

    def __init__(self) -> None:
        self._table: dict[int, Any] = {}
        self._prune_at = self.MIN_PRUNE
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._table)

    def _share(self, value: Any, key: tuple[Any, ...], plain: bool) -> Any:
        """The one instance of ``value`` (``plain``: it holds only strings, None and shared
        containers, so ``==`` is strict but for a mapping's key order)."""
        table = self._table
        h = hash(key)
        cur = table.get(h)
        if cur is None:
            return table.setdefault(h, value)
        if plain:
            same = type(cur) is type(value) and cur == value and (type(value) is list or tuple(cur) == tuple(value))
        else:
            same = _same(cur, value)
        return cur if same else value  # (not the same: a hash collision, not shared)

    def value(self, value: Any) -> Any:
        """``value`` compacted: keys and short strings interned, mappings and lists shared."""
        kind = type(value)
        if kind is str:
            return _intern(value) if len(value) <= MAX_INTERNED else value
        # the dict and list loops are written out on purpose: a shared helper (one call per
        # container, keys and values zipped) made compacting 24k objects ~50% slower at start-up
        plain = True
        if kind is dict:
            out = {}
            flat: list[Any] = []
            for k, v in value.items():
                if type(k) is str:
                    k = _intern(k)
                t = type(v)
                if t is dict or t is list:
                    v = self.value(v)
                    flat.append(id(v))
                elif t is str:
                    if len(v) <= MAX_INTERNED:
                        v = _intern(v)
                    flat.append(v)
                else:
                    flat.append(v)
                    if v is not None:
                        plain = False
                out[k] = v
                flat.append(k)
            return self._share(out, tuple(flat), plain)
        if kind is list:
            items = []
            flat = [_LIST]
            for v in value:
                t = type(v)
                if t is dict or t is list:
                    v = self.value(v)
                    flat.append(id(v))
                elif t is str:
                    if len(v) <= MAX_INTERNED:
                        v = _intern(v)
                    flat.append(v)
                else:
                    flat.append(v)
                    if v is not None:
                        plain = False
                items.append(v)
            return self._share(items, tuple(flat), plain)
        return value

    def object(self, obj: Obj, previous: Obj | None = None) -> Obj:
        """A compacted copy of a whole object: its ``metadata`` (unique per object) and the object
        itself are never shared, only what they hold.

        ``previous``: an earlier compacted version of the object (the cached one); each of its
        top-level and ``metadata`` mappings and lists that is strictly equal to the new one is
        reused as it is instead of being compacted again (a status write changes the status and
        the resourceVersion only: the spec is compared, not rebuilt)."""
        out: Obj = {}
        if type(previous) is not dict:
            previous = None
        for k, v in obj.items():
            if type(k) is str:
                k = _intern(k)
            if k == "metadata" and type(v) is dict:
                old_meta = previous.get(k) if previous is not None else None
                if type(old_meta) is dict:
                    out[k] = {_intern(mk) if type(mk) is str else mk: self._reused(old_meta.get(mk), mv)
                              for mk, mv in v.items()}
                else:
                    out[k] = {_intern(mk) if type(mk) is str else mk: self.value(mv) for mk, mv in v.items()}
            elif previous is not None:
                out[k] = self._reused(previous.get(k), v)
            else:
                out[k] = self.value(v)
        if len(self._table) >= self._prune_at:
            self.prune()
        return out

    def _reused(self, old: Any, new: Any) -> Any:
        """``old`` (already compacted) when it is a mapping or list strictly equal to ``new``,
        else ``new`` compacted."""
        kind = type(new)
        if (kind is dict or kind is list) and type(old) is kind and strictly_equal(old, new):
            return old
        return self.value(new)

    def prune(self) -> int:
        """Drop the entries no object holds any more; returns how many."""
        table = self._table
        dropped = 0
        with self._lock:
            while True:  # a parent's drop frees its children: sweep again until nothing goes
                gone = 0
                for h in list(table):
                    v = table.get(h)
                    # held by: the table, ``v`` and getrefcount's argument
                    if v is not None and sys.getrefcount(v) <= 3 and table.get(h) is v:
                        del table[h]
                        gone += 1
                    del v
                dropped += gone
                if not gone:
                    break
            self._prune_at = max(self.MIN_PRUNE, 2 * len(table))
        return dropped


_encode = json.JSONEncoder(ensure_ascii=True, allow_nan=True, check_circular=False).encode


def strictly_equal(a: Any, b: Any) -> bool:
    """``a == b`` for decoded JSON values, strictly: the same keys in the same order and the same
    types (``True`` is not ``1``, ``1.0`` is not ``1``, ``-0.0`` is not ``0.0``). Equality is
    checked first (C speed, fails fast), then the JSON texts, which tell those apart."""
    try:
        return bool(a == b) and _encode(a) == _encode(b)
    except (TypeError, ValueError, RecursionError):
        return False


#: The table the informers' transforms share.
SHARED = SharedValues()


def compact(obj: Obj, shared: SharedValues | None = None, previous: Obj | None = None) -> Obj:
    """A copy of ``obj`` with mapping keys and short strings interned and equal mappings and lists
    below ``metadata`` shared with other objects (equal values, shared storage); ``obj`` itself
    when it is nested too deeply to rebuild. ``previous``: the cached, compacted version of the
    object, whose unchanged parts are reused (see :meth:`SharedValues.object`)."""
    try:
        return (shared or SHARED).object(obj, previous)
    except RecursionError:
        return obj


def _compacting(fn: Transform) -> Transform:
    def transform(obj: Obj) -> Obj:
        return compact(fn(obj))

    def with_previous(obj: Obj, previous: Obj) -> Obj:
        return compact(fn(obj), previous=previous)

    transform.__name__ = f"compact_{getattr(fn, '__name__', 'transform')}"
    transform.with_previous = with_previous  # type: ignore[attr-defined]  # see Reflector.transform
    return transform


def metadata_transform(obj: Obj) -> Obj:
    """Only the metadata (a Gateway's own data-plane Deployment: the provisioner compares the
    hash of what it applied, an annotation, and reads its labels and owner)."""
    obj = strip_metadata(obj)
    return {k: v for k, v in obj.items() if k in ("apiVersion", "kind", "metadata")}


def transform_for(kind: str, data_plane_service: tuple[str, str]) -> Transform:
    """The transform of the informer of ``kind``: drop what nothing reads, then compact."""
    if kind == "PlaneDeployment":
        return _compacting(metadata_transform)
    if kind == "PlanePod":
        return _compacting(pod_transform)
    if kind == "EndpointSlice":
        return _compacting(endpoint_slice_transform(data_plane_service))
    if kind == "Service":
        return _compacting(service_transform(data_plane_service))
    if kind == "Secret":
        return _compacting(secret_transform)
    if kind == "Pod":
        return _compacting(pod_transform)
    if kind == "ConfigMap":
        return _compacting(config_map_transform)
    return _compacting(strip_metadata)
