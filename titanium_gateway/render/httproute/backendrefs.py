"""HTTPRoute ``backendRefs`` -> clusters and the rule's action.

A Service reference resolves to a cluster (``backends.resolve_backend``); a reference that does
not resolve is a ResolvedRefs problem (``BackendNotFound``, ``InvalidKind``, ``RefNotPermitted``)
and its weight goes to the empty ``invalid-backend`` cluster (503 for that share); when nothing
valid remains the rule answers 500.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from titanium_gateway.render import backends as be
from titanium_gateway.render import fields as f
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.fields import brief, shown
from titanium_gateway.render.referencegrant import GATEWAY_GROUP
from titanium_gateway.render.unhonoured import unhonoured
from titanium_gateway.twp.model import (
    Action,
    Cluster,
    ClusterSettings,
    Forward,
    Split,
    WeightedCluster,
)

INVALID_BACKEND_CLUSTER = "invalid-backend"
#: The cluster of an invalid backend's share of a weighted split: no destinations, 503.
INVALID_BACKEND = Cluster(id=INVALID_BACKEND_CLUSTER)
MAX_WEIGHT = 1_000_000
#: A backendRef with these fields only names a Service in the route's namespace (a short key).
_PLAIN_REF_KEYS = frozenset({"name", "port", "weight"})
#: The fields of an HTTPBackendRef in Gateway API v1.2.1 (any other is of a newer release).
_REF_FIELDS = frozenset({"group", "kind", "name", "namespace", "port", "weight", "filters"})

Resolved = tuple[Cluster | None, str, str]


@dataclass(frozen=True, slots=True)
class BackendsOut:
    """What a rule's ``backendRefs`` make: the action (a cluster, a weighted split, or a 500),
    the clusters to add, the problems (``unsupported``; ``refs``: (reason, message) of each
    reference that does not resolve; ``first_ref``: the one a 500 names)."""

    action: Action
    clusters: tuple[Cluster, ...]
    unsupported: tuple[str, ...]
    refs: tuple[tuple[str, str], ...]
    first_ref: str


def resolve_ref(ctx: RenderContext, ref: Mapping[str, Any], route_ns: str, settings: ClusterSettings) -> Resolved:
    """A Service backendRef -> (cluster, reason, message)."""
    group = ref.get("group") if isinstance(ref.get("group"), str) else ""
    kind = f.string(ref.get("kind")) or "Service"
    name = f.text(ref.get("name"))
    ns = f.text(ref.get("namespace")) or route_ns
    if group != "" or kind != "Service":
        return None, "InvalidKind", f"backendRef {shown(group)}/{shown(kind)} {name} is not a core Service"
    if not ctx.grants.allows(
        from_group=GATEWAY_GROUP, from_kind="HTTPRoute", from_namespace=route_ns,
        to_group="", to_kind="Service", to_namespace=ns, to_name=name,
    ):
        return None, "RefNotPermitted", ctx.grants.refusal("Service", ns, name)
    port = ref.get("port")
    if isinstance(port, bool) or not isinstance(port, int):
        return None, "BackendNotFound", f"backendRef to Service {ns}/{name} has no port"
    if ctx.backend_tls:  # (a BackendTLSPolicy of the Service port: TLS to its backends)
        svc_port = ctx.backends.service_port(ns, name, port)
        if svc_port is not None:
            settings = ctx.backend_tls.settings(ns, name, f.string(svc_port.get("name")), settings)
    res = be.resolve_backend(ctx.backends, ns, name, port, settings)
    if not res.ok:
        return None, res.reason, res.message
    return res.cluster, "", ""


class Backends:
    """The backends of one render: each distinct reference resolved once (a Service is usually
    the backend of many routes), each distinct ``backendRefs`` list made once."""

    __slots__ = ("ctx", "_refs", "_lists")

    def __init__(self, ctx: RenderContext) -> None:
        self.ctx = ctx
        self._refs: dict[tuple[Any, ...], Resolved] = {}
        self._lists: dict[tuple[Any, ...], BackendsOut] = {}

    def ref(self, ref: Mapping[str, Any], route_ns: str, settings: ClusterSettings) -> Resolved:
        try:
            port, name = ref.get("port"), ref.get("name")
            if type(port) is int and type(name) is str and ref.keys() <= _PLAIN_REF_KEYS:  # the common shape
                key: tuple[Any, ...] = (route_ns, name, port, settings)
            else:  # (type(port): True == 1, but it is not a port)
                key = (route_ns, ref.get("group"), ref.get("kind"), name, ref.get("namespace"), port, type(port),
                       settings, "")
            hit = self._refs.get(key)
        except TypeError:  # a malformed (unhashable) field: resolved every time
            return resolve_ref(self.ctx, ref, route_ns, settings)
        if hit is None:
            hit = self._refs[key] = resolve_ref(self.ctx, ref, route_ns, settings)
        return hit

    def of(self, refs: list[Any], route_ns: str, settings: ClusterSettings) -> tuple[BackendsOut, tuple[Any, ...] | None]:
        """``(what the references make (read-only), their key or None)``."""
        key = _list_key(refs, route_ns, settings)
        if key is None:
            return self._make(refs, route_ns, settings), None
        hit = self._lists.get(key)
        if hit is None:
            hit = self._lists[key] = self._make(refs, route_ns, settings)
        return hit, key

    def _make(self, refs: list[Any], route_ns: str, settings: ClusterSettings) -> BackendsOut:
        unsupported: list[str] = []
        problems: list[tuple[str, str]] = []
        clusters: list[Cluster] = []
        shares: list[tuple[str, int]] = []
        invalid_weight = 0
        first_error = ("", "")
        for ref in refs:
            ref = f.mapping(ref)
            weight = ref.get("weight", 1)
            if type(weight) is not int and (isinstance(weight, bool) or not isinstance(weight, int)) or weight < 0:
                unsupported.append(f"backendRef weight {brief(weight)} is invalid")
                continue
            if weight > MAX_WEIGHT:
                unsupported.append(f"backendRef weight {weight} is larger than {MAX_WEIGHT}")
                continue
            if not ref.keys() <= _REF_FIELDS:  # a field of a newer release
                unsupported += [f"backendRef field {f.plain(k)} is not supported" for k in ref if k not in _REF_FIELDS]
                continue
            if f.items(ref.get("filters")):
                unsupported.append("filters on a backendRef are not supported")
                continue
            cluster, reason, message = self.ref(ref, route_ns, settings)
            if cluster is None:
                problems.append((reason, message))
                if not first_error[0]:
                    first_error = (reason, message)
                invalid_weight += weight
                continue
            clusters.append(cluster)
            if weight > 0:
                shares.append((cluster.id, weight))
        action: Action
        if not shares:
            if first_error[0]:
                action = unhonoured(first_error[0])
            elif refs:
                action = unhonoured("NoBackends")
            else:
                action = unhonoured("NoBackends")
        else:
            if invalid_weight:
                clusters.append(INVALID_BACKEND)
                shares.append((INVALID_BACKEND_CLUSTER, invalid_weight))
            merged: dict[str, int] = {}
            for cid, w in shares:
                merged[cid] = merged.get(cid, 0) + w
            if len(merged) == 1:
                action = Forward(next(iter(merged)))
            else:
                action = Split(tuple(WeightedCluster(cid, w) for cid, w in merged.items()))
        return BackendsOut(action, tuple(clusters), tuple(unsupported), tuple(problems), first_error[1])


def _list_key(refs: list[Any], route_ns: str, settings: ClusterSettings) -> tuple[Any, ...] | None:
    """The content of a list of plain references (a Service name, a port and a weight, exact
    types), with what else a list's outcome depends on; None for any other list."""
    out: list[Any] = [route_ns, settings]
    for ref in refs:
        if type(ref) is not dict:
            return None
        name, port, weight = ref.get("name"), ref.get("port"), ref.get("weight", 1)
        if type(name) is not str or type(port) is not int or type(weight) is not int or not ref.keys() <= _PLAIN_REF_KEYS:
            return None
        out += (name, port, weight)
    return tuple(out)
