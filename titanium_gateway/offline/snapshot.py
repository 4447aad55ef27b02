"""The render snapshot of loaded objects, as the controller's informers would hold it.

:func:`prepare` adds the Namespaces the objects name but the input lacks (assumed, and
reported), leaves out the Secrets the controller would not read (outside
``--secret-namespaces``; so are the ConfigMaps) and fixes ``now`` (:data:`OFFLINE_NOW`), so the same input always
renders the same bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.offline.load import NAMESPACE_NAME_LABEL, apply_defaults, standin_time
from titanium_gateway.render import fields as f
from titanium_gateway.render.snapshot import CLUSTER_SCOPED, Snapshot, object_key

__all__ = ["OFFLINE_NOW", "Prepared", "assumed_namespaces", "build_snapshot", "prepare"]

#: The fixed "now" of an offline render (lastTransitionTime of changed conditions).
OFFLINE_NOW = "1970-01-01T00:00:00Z"


def _ns_of(refs: Any) -> Iterator[str]:
    for ref in refs if isinstance(refs, list) else ():
        if isinstance(ref, Mapping):
            ns = ref.get("namespace")
            if isinstance(ns, str) and ns:
                yield ns


def _filter_refs(filters: Any) -> Iterator[str]:
    for flt in filters if isinstance(filters, list) else ():
        if isinstance(flt, Mapping):
            mirror = flt.get("requestMirror")
            if isinstance(mirror, Mapping):
                yield from _ns_of([mirror.get("backendRef")])


#: The route kinds this controller answers but does not serve: their parentRefs name namespaces.
_OTHER_ROUTES = frozenset(row.kind for row in kinds.OTHER_ROUTES)
#: The route kinds served: their parentRefs, backendRefs and mirrors name namespaces.
_SERVED_ROUTES = frozenset(row.kind for row in kinds.SERVED_ROUTES)
_GATEWAY, _LISTENER_SET = kinds.GATEWAY.kind, kinds.LISTENER_SET.kind
_REFERENCE_GRANT = kinds.REFERENCE_GRANT.kind
#: The kinds whose references can name other namespaces.
_REFERRING = frozenset({_GATEWAY, *_SERVED_ROUTES, _REFERENCE_GRANT, _LISTENER_SET, *_OTHER_ROUTES})
#: The kinds the controller reads in the Secret namespaces only (``--secret-namespaces``).
_SECRET_NAMESPACED = frozenset({"Secret", "ConfigMap"})


def _referenced_namespaces(kind: Any, spec: Any) -> Iterator[str]:
    """The namespaces an object's references name: a Gateway's (a ListenerSet's)
    certificateRefs, a ListenerSet's parentRef, a route's parentRefs, an HTTPRoute's (a GRPCRoute's)
    backendRefs and mirror backendRefs, a ReferenceGrant's ``from``."""
    if not isinstance(spec, Mapping):
        return
    if kind in _SERVED_ROUTES:
        yield from _ns_of(spec.get("parentRefs"))
        for rule in f.items(spec.get("rules")):
            if not isinstance(rule, Mapping):
                continue
            backends = rule.get("backendRefs")
            yield from _ns_of(backends)
            yield from _filter_refs(rule.get("filters"))
            for b in backends if isinstance(backends, list) else ():
                if isinstance(b, Mapping) and b.get("filters"):
                    yield from _filter_refs(b.get("filters"))
    elif kind in kinds.PARENT_KINDS:
        for listener in f.items(spec.get("listeners")):
            if isinstance(listener, Mapping) and isinstance(listener.get("tls"), Mapping):
                yield from _ns_of(listener["tls"].get("certificateRefs"))
        if kind == _LISTENER_SET:
            yield from _ns_of([spec.get("parentRef")])
    elif kind in _OTHER_ROUTES:
        yield from _ns_of(spec.get("parentRefs"))
    elif kind == _REFERENCE_GRANT:
        yield from _ns_of(spec.get("from"))


def _namespace_names(objects: Iterable[Mapping[str, Any]]) -> tuple[set[str], set[str]]:
    """(Namespaces in the input, Namespaces named by an object: its own or a reference)."""
    present: set[str] = set()
    named: set[str] = set()
    for obj in objects:
        meta = obj.get("metadata")
        if not isinstance(meta, Mapping):
            continue
        kind = obj.get("kind")
        if kind == kinds.NAMESPACE.kind:
            present.add(str(meta.get("name")))
        if kind in CLUSTER_SCOPED:
            continue
        ns = meta.get("namespace")
        named.add(ns if isinstance(ns, str) and ns else "default")
        if kind in _REFERRING:
            named.update(_referenced_namespaces(kind, obj.get("spec")))
    return present, named


def _namespace_object(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {NAMESPACE_NAME_LABEL: name},
            "generation": 1,
            "creationTimestamp": standin_time(0),
            "uid": _namespace_uid(name),
        },
    }


def assumed_namespaces(objects: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Namespaces named by an object (its own namespace or a reference) but absent from the input."""
    present, named = _namespace_names(objects)
    return [_namespace_object(name) for name in sorted(named - present)]


def _namespace_uid(name: str) -> str:
    # surrogatepass: a lone surrogate (a YAML "\udfff" escape) is bad input the render reports,
    # not a reason for the loader to crash
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-5{digest[13:16]}-8{digest[17:20]}-{digest[20:32]}"


@dataclass
class Prepared:
    """A snapshot as the controller's informers would hold it, and what was adjusted."""

    snapshot: Snapshot
    #: Names of the Namespaces assumed because they are not in the input.
    assumed: list[str]
    #: Secrets the controller would not read (outside ``--secret-namespaces``), as "ns/name".
    unread_secrets: list[str]
    #: ConfigMaps (BackendTLSPolicy CA certificates) the controller would not read, as "ns/name".
    unread_config_maps: list[str] = field(default_factory=list)


def prepare(
    objects: Iterable[Mapping[str, Any]],
    now: str = OFFLINE_NOW,
    secret_namespaces: Sequence[str] = (),
    *,
    defaulted: bool = False,
    **kwargs: Any,
) -> Prepared:
    """The render snapshot of ``objects`` (defaults applied where missing, unless
    ``defaulted``: they come from :func:`load_manifests`; absent Namespaces assumed). With
    ``secret_namespaces`` (the controller's ``--secret-namespaces``), Secrets and ConfigMaps of
    other namespaces are left out, as the controller's watches never see them."""
    objs = list(objects) if defaulted else apply_defaults(objects)
    unread: dict[str, list[str]] = {"Secret": [], "ConfigMap": []}
    if secret_namespaces:
        allowed = set(secret_namespaces)
        kept = []
        for o in objs:
            if o.get("kind") in _SECRET_NAMESPACED and o["metadata"].get("namespace") not in allowed:
                unread[o["kind"]].append(object_key(o))
            else:
                kept.append(o)
        objs = kept
    present, named = _namespace_names(objs)
    assumed = sorted(named - present)
    snapshot = Snapshot.from_objects([*objs, *(_namespace_object(n) for n in assumed)], now=now, **kwargs)
    return Prepared(snapshot, assumed, unread["Secret"], unread["ConfigMap"])


def build_snapshot(objects: Iterable[Mapping[str, Any]], now: str = OFFLINE_NOW, **kwargs: Any) -> Snapshot:
    """A render snapshot of ``objects`` (defaults applied where missing; absent Namespaces
    assumed; ``secret_namespaces=`` as in :func:`prepare`)."""
    return prepare(objects, now=now, **kwargs).snapshot

