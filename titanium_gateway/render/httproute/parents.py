"""HTTPRoute (GRPCRoute) parentRefs that name a Gateway which does not exist.

No controller owns such a parent, so none may report on it in the route's status (a status entry
names the parent and the controller that owns it), and the route would leave no trace anywhere.
It gets a Warning Event instead, with the Gateway API's reason for a parent that does not exist,
``NoMatchingParent``; the controller logs the Event when it posts it. Every route is looked at,
whoever's Gateway it meant: the Event states a fact about the cluster, not a claim on the route.
A route being deleted, or in a namespace being deleted (whose Gateways may go first), gets none.
"""

from __future__ import annotations

from titanium_gateway import kinds
from titanium_gateway.render import fields as f
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.httproute.attach import ref_identity
from titanium_gateway.render.httproute.status import API_VERSION
from titanium_gateway.render.referencegrant import GATEWAY_GROUP
from titanium_gateway.render.result import EventRecord

_GATEWAY = kinds.GATEWAY.kind
_HTTP_ROUTE = kinds.HTTP_ROUTE.kind

NO_MATCHING_PARENT = "NoMatchingParent"


def missing_parent_events(ctx: RenderContext, route_kind: str = _HTTP_ROUTE) -> None:
    """One ``NoMatchingParent`` Event per route of the kind ``route_kind`` (a served route kind) naming
    every Gateway parentRef whose Gateway is not in the snapshot (in any order: the render sorts
    its Events)."""
    routes = (ctx.snapshot.httproutes if route_kind == _HTTP_ROUTE
              else getattr(ctx.snapshot, kinds.BY_KIND[route_kind].field))
    for route in routes.values():
        missing_parent_event(ctx, route, route_kind)


def missing_parent_event(ctx: RenderContext, route: object, route_kind: str = _HTTP_ROUTE) -> None:
    """The ``NoMatchingParent`` Event of one route, if it names a Gateway that does not exist
    (what it reads besides the route: the keys of the Gateways and the route's Namespace)."""
    meta = f.metadata(route)
    name, ns = f.name_of(meta), f.namespace_of(meta)
    if not name or ns is None or meta.get("deletionTimestamp") or _going(ctx.snapshot.namespaces.get(ns)):
        return
    assert f.is_mapping(route)
    gateways = ctx.snapshot.gateways
    missing = []
    for index, ref in enumerate(f.items(f.mapping(route.get("spec")).get("parentRefs"))):
        if not f.is_mapping(ref):
            continue
        group, kind, gw_ns, gw_name, _, _ = ref_identity(ref, ns)
        if group == GATEWAY_GROUP and kind == _GATEWAY and gw_name and f"{gw_ns}/{gw_name}" not in gateways:
            missing.append(f"parentRefs[{index}]: Gateway {gw_ns}/{gw_name} does not exist")
    if missing:
        ctx.add_event(EventRecord(
            kind=route_kind, namespace=ns, name=name, type="Warning", reason=NO_MATCHING_PARENT,
            message="; ".join(missing) + ", so nothing serves the route through "
            + ("it" if len(missing) == 1 else "them"),
            uid=f.string(meta.get("uid")), api_version=API_VERSION))


def _going(namespace: object) -> bool:
    """The Namespace is being deleted."""
    if not f.is_mapping(namespace):
        return False
    return bool(f.metadata(namespace).get("deletionTimestamp")) or (
        f.mapping(f.mapping(namespace).get("status")).get("phase") == "Terminating")
