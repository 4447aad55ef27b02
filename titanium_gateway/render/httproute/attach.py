"""A route's ``parentRefs`` (an HTTPRoute's, a GRPCRoute's): which Gateway listeners it attaches
to, and its hosts.

Per parentRef to one of our Gateways or ListenerSets (refs to others are never reported; a
Gateway's listeners are its own, not its ListenerSets'): listeners by
``sectionName`` and ``port`` (none -> NoMatchingParent); of those, the attachable listeners that
allow the route's namespace and kind (none -> NotAllowedByListeners); of those, the listeners
whose hostname intersects the route's hostnames (none -> NoMatchingListenerHostname). Routes
are global in the data plane, so the emitted hosts are the union of the intersections over
every attached listener (:func:`effective_hosts`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.render import fields as f
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.fields import brief
from titanium_gateway.render.gateway import GatewayInfo, ListenerInfo, intersect_hostname
from titanium_gateway.render.referencegrant import GATEWAY_GROUP

#: (group, kind, namespace, name, sectionName, port) of a parentRef, defaults filled in
Identity = tuple[str, str, str, str, str, Any]
_GATEWAY = kinds.GATEWAY.kind


def listener_key(li: ListenerInfo) -> tuple[Any, ...]:
    """A listener's identity, the same from one render to the next."""
    return (li.gateway_ns, li.gateway_name, li.listener_set, li.index, li.name)


def ref_identity(ref: Mapping[str, Any], route_ns: str) -> Identity:
    group = ref.get("group")
    port = ref.get("port")
    return (
        group if isinstance(group, str) else GATEWAY_GROUP,
        f.string(ref.get("kind")) or _GATEWAY,
        f.text(ref.get("namespace")) or route_ns,
        f.text(ref.get("name")),
        f.text(ref.get("sectionName")),
        port if isinstance(port, int) else None,
    )


def parent_ref_echo(ref: Mapping[str, Any]) -> dict[str, Any]:
    """The parentRef as given, with group/kind defaults filled (as conformance expects)."""
    out: dict[str, Any] = {
        "group": ref["group"] if isinstance(ref.get("group"), str) else GATEWAY_GROUP,
        "kind": f.string(ref.get("kind")) or _GATEWAY,
    }
    if f.text(ref.get("namespace")):
        out["namespace"] = ref["namespace"]
    out["name"] = f.text(ref.get("name"))
    if f.text(ref.get("sectionName")):
        out["sectionName"] = ref["sectionName"]
    if isinstance(ref.get("port"), int) and not isinstance(ref.get("port"), bool):
        out["port"] = ref["port"]
    return out


@dataclass(slots=True)
class Parent:
    """One parentRef to one of our Gateways, and what attaching to it gave."""

    ref: Mapping[str, Any]
    identity: Identity
    accepted: bool
    reason: str
    message: str
    #: the listeners it is attached to (accepted: the route counts in their attachedRoutes
    #: unless a rule makes it Accepted=False)
    listeners: list[ListenerInfo]


class Attachments:
    """The listeners a (Gateway, sectionName, port, route namespace) selects, counts and admits
    for routes of the kind ``kind``, once per render (every route of a namespace usually names
    its Gateway the same way)."""

    __slots__ = ("ctx", "kind", "_made")

    def __init__(self, ctx: RenderContext, kind: str = kinds.HTTP_ROUTE.kind) -> None:
        self.ctx = ctx
        self.kind = kind
        self._made: dict[tuple[Any, ...], tuple[bool, list[ListenerInfo], bool]] = {}

    def _listeners(self, gw: GatewayInfo, section: str, port: int | None, route_ns: str
                   ) -> tuple[bool, list[ListenerInfo], bool]:
        key = (gw.kind, gw.namespace, gw.name, section, port, route_ns)
        hit = self._made.get(key)
        if hit is None:
            selected = [li for li in gw.listeners  # (a Gateway's: not its ListenerSets')
                        if (not section or li.name == section) and (port is None or li.port == port)
                        and (li.listener_set is None or gw.kind != _GATEWAY)]
            allowed = [li for li in selected
                       if self.kind in li.route_kinds and li.attachable and li.allows_namespace(self.ctx, route_ns)]
            hit = self._made[key] = (bool(selected), allowed, any(li.hostname is not None for li in allowed))
        return hit

    def attach(self, gw: GatewayInfo, ref: Mapping[str, Any], route_ns: str, route_hosts: list[str]
               ) -> tuple[bool, str, str, list[ListenerInfo]]:
        """``(accepted, reason, message, attached listeners)`` (the list is shared: read-only)."""
        section = f.text(ref.get("sectionName"))
        port = f.integer(ref.get("port"))
        if not gw.listeners and not gw.accepted:  # (a ListenerSet not accepted has none)
            return False, "NotAllowedByListeners", f"the {gw.kind} is not accepted", []
        any_selected, allowed, hostnames = self._listeners(gw, section, port, route_ns)
        if not any_selected:
            what = f"sectionName {brief(section)}" if section else ""
            what += (" and " if what and port is not None else "") + (f"port {port}" if port is not None else "")
            return (False, "NoMatchingParent",
                    f"{gw.kind} {gw.namespace}/{gw.name} has no listener with {what or 'that reference'}", [])
        if not allowed:
            if not gw.accepted:
                return False, "NotAllowedByListeners", f"the {gw.kind} is not accepted", []
            return False, "NotAllowedByListeners", "no valid listener allows routes from this namespace and kind", []
        # (a listener without a hostname accepts every route hostname: then the shared list)
        matched = allowed if not route_hosts or not hostnames else [
            li for li in allowed if li.hostname is None or any(intersect_hostname(li.hostname, h) for h in route_hosts)]
        if not matched:
            return False, "NoMatchingListenerHostname", "no listener hostname intersects the route's hostnames", []
        return True, "Accepted", "the route is accepted", matched


def effective_hosts(listeners: list[ListenerInfo], route_hosts: list[str]) -> list[str | None]:
    """The match hosts of a route's data-plane routes. ``route_hosts``: its valid hostnames,
    lowercased."""
    hosts: set[str] = set()
    for li in listeners:
        if not route_hosts:
            if li.hostname is None:
                return [None]
            hosts.add(li.hostname.lower())
        elif li.hostname is None:
            hosts.update(route_hosts)  # (intersect_hostname(None, h) is h)
        else:
            for h in route_hosts:
                got = intersect_hostname(li.hostname, h)
                if got:
                    hosts.add(got.lower())
    # a wildcard that covers an exact host already emitted is kept: exact ranks first anyway
    return sorted(hosts)
