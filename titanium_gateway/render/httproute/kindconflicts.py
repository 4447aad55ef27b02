"""An HTTPRoute and a GRPCRoute on one listener with a hostname in common: exactly one is accepted.

The GRPCRoute API (``GRPCRouteSpec.hostnames``): when a route of one of the two kinds is attached
to a listener that already has a route of the other kind, and their hostnames intersect, exactly
one of them is accepted there: the oldest (creationTimestamp), then the first by
``{namespace}/{name}``; the other gets ``Accepted: False`` on that parent. On each listener that
has a GRPCRoute, :func:`find` goes through the routes of both kinds attached to it, oldest first,
and keeps a route unless a route of the other kind kept before it shares a hostname with it there
(the kept routes' exact hostnames are indexed: a listener with thousands of routes stays cheap).

Only the listeners GRPCRoutes attach to are looked at, and nothing at all without GRPCRoutes. The
translators ask :class:`Conflicts` which listeners a route lost (``Translator.route``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.render import fields as f
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.gateway import GatewayInfo, ListenerInfo, intersect_hostname, valid_hostname
from titanium_gateway.render.httproute.attach import Attachments, effective_hosts, listener_key, ref_identity
from titanium_gateway.render.precedence import creation_timestamp
from titanium_gateway.render.referencegrant import GATEWAY_GROUP

_HTTP_ROUTE, _GRPC_ROUTE = kinds.HTTP_ROUTE.kind, kinds.GRPC_ROUTE.kind
_GATEWAY, _LISTENER_SET = kinds.GATEWAY.kind, kinds.LISTENER_SET.kind
#: (kind, namespace, name) of a route
RouteKey = tuple[str, str, str]


@dataclass
class Conflicts:
    """The listeners each route lost to an older route of the other kind, and to which."""

    #: route -> listener_key -> the route it lost to (``GRPCRoute apps/echo``)
    lost: dict[RouteKey, dict[tuple[Any, ...], str]] = field(default_factory=dict)

    def of(self, kind: str, namespace: str, name: str) -> Mapping[tuple[Any, ...], str]:
        return self.lost.get((kind, namespace, name), {})

    def key(self) -> tuple[Any, ...]:
        """Everything it holds, comparable from one render to the next (the memo's dependencies)."""
        return tuple(sorted((route, tuple(sorted(lost.items()))) for route, lost in self.lost.items()))


@dataclass(frozen=True)
class _Attached:
    route: RouteKey
    age: tuple[str, str]  # (creationTimestamp, "namespace/name")
    hosts: tuple[str | None, ...]


def find(ctx: RenderContext, gateways: Mapping[tuple[str, str], GatewayInfo]) -> Conflicts:
    """Which routes lose which listeners to a route of the other kind (none without GRPCRoutes)."""
    out = Conflicts()
    if not ctx.snapshot.grpcroutes:
        return out
    by_listener: dict[int, tuple[ListenerInfo, dict[RouteKey, _Attached]]] = {}
    _attach(ctx, gateways, _GRPC_ROUTE, ctx.snapshot.grpcroutes, by_listener, None)
    if not by_listener:
        return out
    grpc = _Kept()  # every GRPCRoute's hosts: an HTTPRoute whose hostnames share none of them loses nothing
    for _, entries in by_listener.values():
        for entry in entries.values():
            grpc.add(entry)
    _attach(ctx, gateways, _HTTP_ROUTE, ctx.snapshot.httproutes, by_listener, set(by_listener),
            lambda hosts: not hosts or grpc.oldest_sharing(tuple(hosts)) is not None)
    for li, entries in by_listener.values():
        kept = {_HTTP_ROUTE: _Kept(), _GRPC_ROUTE: _Kept()}
        for entry in sorted(entries.values(), key=_age):
            other = _GRPC_ROUTE if entry.route[0] == _HTTP_ROUTE else _HTTP_ROUTE
            winner = kept[other].oldest_sharing(entry.hosts)
            if winner is None:
                kept[entry.route[0]].add(entry)
            else:
                out.lost.setdefault(entry.route, {})[listener_key(li)] = (
                    f"{winner.route[0]} {winner.route[1]}/{winner.route[2]}")
    return out


class _Kept:
    """The routes of one kind kept on a listener, oldest first, with their exact hostnames indexed."""

    def __init__(self) -> None:
        self.entries: list[_Attached] = []
        #: exact hostname -> position of the oldest kept route with it
        self.exact: dict[str, int] = {}
        #: positions of the kept routes with a wildcard hostname, or any host (None)
        self.broad: list[int] = []

    def add(self, entry: _Attached) -> None:
        at = len(self.entries)
        self.entries.append(entry)
        for host in entry.hosts:
            if host is None or host.startswith("*"):
                if not self.broad or self.broad[-1] != at:
                    self.broad.append(at)
            else:
                self.exact.setdefault(host, at)

    def oldest_sharing(self, hosts: tuple[str | None, ...]) -> _Attached | None:
        """The oldest kept route whose hosts intersect ``hosts`` (None when none does)."""
        if any(h is None or h.startswith("*") for h in hosts):
            return next((e for e in self.entries if _share(e.hosts, hosts)), None)
        found = [self.exact[h] for h in hosts if h in self.exact]
        found += [next((i for i in self.broad if _share(self.entries[i].hosts, hosts)), len(self.entries))]
        at = min(found)
        return self.entries[at] if at < len(self.entries) else None


def _age(entry: _Attached) -> tuple[Any, ...]:
    return (*entry.age, entry.route[0])


def _share(a: tuple[str | None, ...], b: tuple[str | None, ...]) -> bool:
    """Do two routes' hosts on a listener intersect (None: any host)?"""
    if None in a or None in b:
        return True
    return any(intersect_hostname(x, y) for x in a for y in b)  # type: ignore[arg-type]


def _attach(ctx: RenderContext, gateways: Mapping[tuple[str, str], GatewayInfo], kind: str,
            routes: Mapping[str, Any], by_listener: dict[int, tuple[ListenerInfo, dict[RouteKey, _Attached]]],
            only: set[int] | None, may_share: Callable[[list[str]], bool] | None = None) -> None:
    """The listeners each route of ``kind`` attaches to (of ``only``, when given), with its hosts
    there, into ``by_listener``; with ``may_share``, only the routes whose hostnames it accepts
    (a route's hosts on a listener are its hostnames or narrower: one that shares no hostname
    with any route of the other kind shares none there either)."""
    attachments = Attachments(ctx, kind)
    for key in sorted(routes):
        route = routes[key]
        if not f.is_mapping(route):
            continue
        spec = f.mapping(route.get("spec"))
        raw_hosts = f.items(spec.get("hostnames"))
        lowered = [h.lower() for h in raw_hosts if isinstance(h, str)]
        if may_share is not None and not may_share(lowered):
            continue  # (first: most routes stop here, before anything else is read of them)
        hosts = [h for h in lowered if valid_hostname(h)]
        if len(hosts) != len(raw_hosts):  # not accepted anywhere (Translator.route)
            continue
        meta = f.metadata(route)
        name, ns = f.name_of(meta), f.namespace_of(meta)
        if not name or ns is None:
            continue
        entry_route = (kind, ns, name)
        age = (creation_timestamp(route), f"{ns}/{name}")
        for ref in f.items(spec.get("parentRefs")):
            if not f.is_mapping(ref):
                continue
            ident = ref_identity(ref, ns)
            parent: Any = None
            if ident[0] == GATEWAY_GROUP and ident[1] == _GATEWAY:
                parent = gateways.get((ident[2], ident[3]))
            elif ident[0] == GATEWAY_GROUP and ident[1] == _LISTENER_SET:
                parent = ctx.listener_sets.get((ident[2], ident[3]))
            if parent is None:
                continue
            ok, _, _, listeners = attachments.attach(parent, ref, ns, hosts)
            for li in listeners if ok else ():
                if only is not None and id(li) not in only:
                    continue
                attached = by_listener.setdefault(id(li), (li, {}))[1]
                if entry_route not in attached:
                    attached[entry_route] = _Attached(entry_route, age, tuple(effective_hosts([li], hosts)))


__all__ = ["Conflicts", "find", "listener_key"]
