"""TLSRoute, TCPRoute, UDPRoute: answered, never served.

The listeners of this controller serve HTTPRoute and GRPCRoute only (their ``supportedKinds`` say
so), so a route of another kind cannot attach to any of them. One whose ``parentRefs`` name a Gateway (or a
ListenerSet) of ours gets one parent entry of ours per such parentRef, in spec order, saying why
(the Gateway API's reasons): ``Accepted: False``, reason ``NoMatchingParent`` when the parentRef's
``sectionName``/``port`` select no listener, else ``NotAllowedByListeners`` (no listener of the
parent allows the kind). parentRefs to other parents are not ours (``NotOurs``), and a route that
no longer names a parent of ours but carries an entry of ours is released. The route's outcome
(``RouteStatusOutcome``) is built into its status by render/status/routes.py, as every route's
is: the conditions keep their transition times, so the status is written once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.render import fields as f
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.gateway import GatewayInfo
from titanium_gateway.render.httproute.attach import parent_ref_echo, ref_identity
from titanium_gateway.render.referencegrant import GATEWAY_GROUP
from titanium_gateway.render.result import NotOurs, Released
from titanium_gateway.render.status.conditions import existing_conditions, generation
from titanium_gateway.render.status.routes import RouteParentOutcome, RouteStatusOutcome

API_VERSION = kinds.GATEWAY_API_VERSION
#: kind -> its Snapshot attribute (the table of kinds' rows translated here: ``kinds.OTHER_ROUTES``)
KINDS: tuple[tuple[str, str], ...] = tuple((row.kind, row.field) for row in kinds.OTHER_ROUTES)
_GATEWAY = kinds.GATEWAY.kind
_LISTENER_SET = kinds.LISTENER_SET.kind
_SERVED = " and ".join(row.kind for row in kinds.SERVED_ROUTES)


def translate(ctx: RenderContext, gateways: Mapping[tuple[str, str], GatewayInfo]) -> None:
    """Every route of the other kinds, in key order."""
    foreign = ctx.foreign_parents()
    for kind, attr in KINDS:
        objs = getattr(ctx.snapshot, attr)
        for key in sorted(objs):
            route = objs[key]
            if f.is_mapping(route):
                _route(ctx, kind, route, gateways, foreign)


def _parent(ctx: RenderContext, gateways: Mapping[tuple[str, str], GatewayInfo], ident: tuple[Any, ...]) -> Any:
    if ident[0] != GATEWAY_GROUP:
        return None
    if ident[1] == _GATEWAY:
        return gateways.get((ident[2], ident[3]))
    if ident[1] == _LISTENER_SET:
        return ctx.listener_sets.get((ident[2], ident[3]))
    return None


def _route(ctx: RenderContext, kind: str, route: Mapping[str, Any], gateways: Mapping[tuple[str, str], GatewayInfo],
           foreign: Mapping[str, Mapping[tuple[str, str], str]]) -> None:
    meta = f.metadata(route)
    name, ns = f.name_of(meta), f.namespace_of(meta)
    if not name or ns is None:
        return
    controller = ctx.options.controller_name
    old = [p for p in f.items(f.mapping(route.get("status")).get("parents"))
           if f.is_mapping(p) and p.get("controllerName") == controller]
    entries: list[RouteParentOutcome] = []
    seen: list[tuple[Any, ...]] = []
    not_ours: list[str] = []
    for ref in f.items(f.mapping(route.get("spec")).get("parentRefs")):
        if not f.is_mapping(ref):
            continue
        ident = ref_identity(ref, ns)
        parent = _parent(ctx, gateways, ident)
        if parent is None:
            group, pkind, pns, pname = ident[:4]
            if group != GATEWAY_GROUP or pkind not in foreign:
                not_ours.append(f"parent {pkind} {pname} is not a Gateway")
            else:
                why = foreign[pkind].get((pns, pname))
                not_ours.append(f"parent {pkind} {pns}/{pname} is " + (f"not ours ({why})" if why else "not in the input"))
            continue
        if ident in seen:
            continue
        seen.append(ident)
        previous: list[Mapping[str, Any]] = []
        for entry in old:
            got = entry.get("parentRef")
            if f.is_mapping(got) and ref_identity(got, ns) == ident:
                previous = existing_conditions(entry)
                break
        entries.append(RouteParentOutcome(parent_ref_echo(ref), (("Accepted", False, *_why(parent, ident, kind)),),
                                          previous))
    if not_ours:
        ctx.not_ours(NotOurs(kind, ns, name, "; ".join(not_ours)))
    if entries:
        ctx.route_status(RouteStatusOutcome(kind, ns, name, generation(route), tuple(entries)))
    elif old:
        ctx.add_status(Released.of(API_VERSION, kind, ns, name))


def _why(parent: Any, ident: tuple[Any, ...], kind: str) -> tuple[str, str]:
    """(reason, message) of a parentRef to a parent of ours."""
    section, port = ident[4], ident[5]
    selected = [li for li in parent.listeners
                if (not section or li.name == section) and (port is None or li.port == port)
                and (li.listener_set is None or parent.kind != _GATEWAY)]
    where = f"{parent.kind} {parent.namespace}/{parent.name}"
    if not selected:
        what = f"sectionName {f.brief(section)}" if section else ""
        what += (" and " if what and port is not None else "") + (f"port {port}" if port is not None else "")
        return "NoMatchingParent", f"{where} has no listener with {what or 'that reference'}"
    return "NotAllowedByListeners", (f"no listener of {where} allows {kind}: this controller serves "
                                     f"{_SERVED} only (the listeners' supportedKinds)")
