"""HTTPRoute -> model routes + clusters + per-parent status.

Modules, one per concern: ``attach`` (parentRefs, listeners, hosts), ``matches``, ``filters``,
``backendrefs``, ``rules`` (one rule: the three together), ``status``. :class:`Translator` holds
one render's state of the HTTPRoute translation and turns each route into model values.

Each rule x match x host gives one data-plane route ``httproute/<ns>/<name>/r<i>m<j>`` (plus
``/<host>`` when the match emits more than one route); the routes of a rule share its match
over the hosts and its :class:`~titanium_gateway.twp.model.Behavior` over the matches. A rule
that cannot be honoured answers ``directResponse 500`` for its own matches only; a match that
cannot be expressed exactly (header RegularExpression, a bad regex) is emitted with its
expressible part in the degraded tier, after every normal route, so it never shadows another rule.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from titanium_gateway import kinds
from titanium_gateway.render import fields as f
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.fields import brief, parse_duration_ms, summarize, timespan
from titanium_gateway.render.gateway import GatewayInfo, ListenerInfo, valid_hostname
from titanium_gateway.render.httproute.attach import (
    Attachments,
    Identity,
    Parent,
    effective_hosts,
    listener_key,
    ref_identity,
)
from titanium_gateway.render.httproute.backendrefs import Backends
from titanium_gateway.render.httproute.filters import Filters, expand, prefix_rewrite_transforms
from titanium_gateway.render.httproute.matches import Matches
from titanium_gateway.render.httproute.parents import missing_parent_event
from titanium_gateway.render.httproute.rules import RuleOut, RuleTranslator, named, translate_rule
from titanium_gateway.render.httproute.status import (
    API_VERSION,
    Problems,
    RouteOutcome,
    Statuses,
    not_served_reason,
)
from titanium_gateway.render.listenerset import ListenerSetInfo
from titanium_gateway.render.memo import RenderCache, replay_or_translate
from titanium_gateway.render.planes import SHARED
from titanium_gateway.render.precedence import (
    TIER_DEGRADED,
    TIER_NORMAL,
    creation_timestamp,
    key_from_parts,
    owner_part,
)
from titanium_gateway.render.referencegrant import GATEWAY_GROUP
from titanium_gateway.render.regex import check_regex, regex_escape
from titanium_gateway.render.result import NotOurs, Released
from titanium_gateway.render.unhonoured import unhonoured
from titanium_gateway.twp.model import (
    RESPONSE_TRANSFORMS,
    Behavior,
    DirectResponse,
    Redirect,
    Route,
    Source,
)

if TYPE_CHECKING:
    from titanium_gateway.render.httproute.kindconflicts import Conflicts

__all__ = ["translate", "Translator", "check_regex", "regex_escape", "parse_duration_ms", "timespan",
           "prefix_rewrite_transforms"]

_NO_REDIRECT_HOST = "RequestRedirect without hostname needs a concrete route hostname"

_KIND = kinds.HTTP_ROUTE.kind
_GATEWAY = kinds.GATEWAY.kind
_LISTENER_SET = kinds.LISTENER_SET.kind


class Translator:
    """The HTTPRoute translation of one render: its memos are keyed by content (a common-shape
    match, a list of header modifiers, a backendRefs list, a parent's listeners by Gateway and
    reference), so they give the same for equal input whatever object holds it, and the
    routes of equal rules share one behavior."""

    def __init__(self, ctx: RenderContext, gateways: dict[tuple[str, str], GatewayInfo], kind: str = _KIND,
                 rules: RuleTranslator = translate_rule, conflicts: Conflicts | None = None) -> None:
        self.ctx = ctx
        self.gateways = gateways
        #: the listeners routes lost to a route of the other kind (render/httproute/kindconflicts.py)
        self.conflicts = conflicts
        #: the route kind translated (HTTPRoute; GRPCRoute: render/grpcroute.py), and its rule translation
        self.kind = kind
        self.rules = rules
        #: the data-plane route ids start with it: ``httproute/<ns>/<name>/r``
        self.id_kind = kind.lower()
        #: parent kind -> (namespace, name) -> why a Gateway (a ListenerSet) of the snapshot is not ours
        self.foreign = ctx.foreign_parents()
        self.matches = Matches()
        self.filters = Filters()
        self.backends = Backends(ctx, kind)
        #: a rule's content (RuleOut.key) -> its routes' behavior
        self.behaviors: dict[tuple[Any, ...], Behavior] = {}
        self.attachments = Attachments(ctx, kind)
        self.statuses = Statuses(ctx, kind)

    def route(self, route: Mapping[str, Any]) -> list[ListenerInfo]:
        """One route of the kind; returns the listeners whose attachedRoutes it counted (already counted)."""
        ctx = self.ctx
        controller = ctx.options.controller_name
        meta = f.metadata(route)
        name, ns = f.name_of(meta), f.namespace_of(meta)
        if not name or ns is None:
            return []
        spec = f.mapping(route.get("spec"))
        old_parents = [p for p in f.items(f.mapping(route.get("status")).get("parents"))
                       if f.is_mapping(p) and p.get("controllerName") == controller]
        route_hosts: list[str] = []
        bad_hosts: list[str] = []
        for index, h in enumerate(f.items(spec.get("hostnames"))):
            if isinstance(h, str) and valid_hostname(low := h.lower()):
                route_hosts.append(low)
            else:
                bad_hosts.append(f"spec.hostnames[{index}] {brief(h)} is not a valid hostname")
        parents: list[Parent] = []
        refs = f.items(spec.get("parentRefs"))
        not_ours: list[str] = [] if refs else ["it has no parentRefs"]
        lost = self.conflicts.of(self.kind, ns, name) if self.conflicts is not None and self.conflicts.lost else None
        for ref in refs:
            ident = ref_identity(ref if f.is_mapping(ref) else {}, ns)
            gw = self.parent(ident)
            if gw is None or not f.is_mapping(ref):  # not ours: never reported in its status
                not_ours.append(self.not_ours(ident))
                continue
            if any(p.identity == ident for p in parents):
                continue
            ok, reason, message, listeners = self.attachments.attach(gw, ref, ns, route_hosts)
            if lost and ok:
                ok, reason, message, listeners = _not_lost(ok, reason, message, listeners, lost)
            if bad_hosts and ok:
                # emitting the valid names only could widen the route (none left = any host)
                ok, reason, message, listeners = False, "UnsupportedValue", summarize(bad_hosts), []
            parents.append(Parent(ref, ident, ok, reason, message, listeners))
        if not_ours:
            ctx.not_ours(NotOurs(self.kind, ns, name, "; ".join(not_ours)))
        if not parents:
            if old_parents:  # our entries on a route that no longer names a Gateway of ours go
                ctx.add_status(Released.of(API_VERSION, self.kind, ns, name))
            return []
        if len(parents) == 1:  # (the list of one parent holds each listener once; read-only)
            attached = parents[0].listeners if parents[0].accepted else []
        else:
            attached = list({id(li): li for p in parents if p.accepted for li in p.listeners}.values())
        serving = [li for li in attached if li.usable]
        problems = Problems()
        if not serving:
            # rules are always validated (status), but only emitted when a programmed listener serves them
            hosts = effective_hosts(attached, route_hosts) if attached else (
                sorted({h.lower() for h in route_hosts}) or [None])
            emitted = self.emit_rules(route, ns, name, spec, hosts, _one_port(attached), problems, emit=False)
        else:
            # the routes of each data plane serving it: the hosts and ports of its listeners there
            emitted = 0
            for plane, group in _by_plane(serving):
                mine = problems if not emitted else Problems()
                emitted += self.emit_rules(route, ns, name, spec, effective_hosts(group, route_hosts),
                                           _one_port(group), mine, emit=True, plane=plane,
                                           scope=self.scope(plane, group))
                if mine is not problems:
                    _merge(problems, mine)
        # accepted but not in the config: the status and an event say why
        unserved = "" if emitted or not attached else (
            not_served_reason(attached) if not serving
            else "it has no rules" if not f.items(spec.get("rules")) else "none of its rules makes a route")
        # attachedRoutes counts the route on the listeners it is Accepted on (ListenerStatus, v1.5+:
        # a route whose Accepted condition is not True is not counted); a rule's unsupported field
        # makes every parent Accepted=False
        counted = attached if not (problems.firsts or problems.unsupported) else []
        for li in counted:
            li.attached += 1
        self.statuses.route(RouteOutcome(route, ns, name, parents, old_parents, problems, unserved))
        return counted

    def parent(self, ident: Identity) -> GatewayInfo | ListenerSetInfo | None:
        """The Gateway or ListenerSet of ours a parentRef names (None: not ours)."""
        if ident[0] != GATEWAY_GROUP:
            return None
        if ident[1] == _GATEWAY:
            return self.gateways.get((ident[2], ident[3]))
        if ident[1] == _LISTENER_SET:
            return self.ctx.listener_sets.get((ident[2], ident[3]))  # type: ignore[no-any-return]
        return None

    def not_ours(self, ident: Identity) -> str:
        """Why a parentRef does not name a Gateway (or a ListenerSet) of ours."""
        group, kind, ns, name = ident[:4]
        if group != GATEWAY_GROUP or kind not in self.foreign:
            return f"parent {kind} {name} is not a Gateway"
        why = self.foreign[kind].get((ns, name))
        if why is None:
            return f"parent {kind} {ns}/{name} is not in the input"
        return f"parent {kind} {ns}/{name} is not ours ({why})"

    def scope(self, plane: str, listeners: list[ListenerInfo]) -> tuple[int, ...]:
        """The ``ports`` of the routes a route attached to ``listeners`` makes in the data plane
        ``plane``: none (every listener) in the shared data plane, whose routes are global
        (docs/contract.md); in a Gateway's own, the data-plane ports of those listeners when
        they are not all of the plane's."""
        if plane == SHARED:
            return ()
        mine = {li.dp_port for li in listeners}
        every = self.ctx.plane_listeners.get(plane, {})
        return () if mine >= every.keys() else tuple(sorted(mine))

    def emit_rules(self, route: Mapping[str, Any], ns: str, name: str, spec: Mapping[str, Any],
                   hosts: list[str | None], one_port: tuple[int, str] | None, problems: Problems, *,
                   emit: bool, plane: str = SHARED, scope: tuple[int, ...] = ()) -> int:
        """The rules' routes (when ``emit``) in the data plane ``plane``, matching on the
        listener ports ``scope`` (none: every listener), problems into ``problems``; returns how
        many routes were added."""
        ctx = self.ctx
        added = 0
        source = Source(self.kind, ns, name)
        owner = owner_part(creation_timestamp(route), ns, name)
        host_keys = [(host, ctx.host_part(host)) for host in hosts]  # (each host with its precedence part)
        multi = len(hosts) > 1
        id_prefix = f"{self.id_kind}/{ns}/{name}/r"
        last_clusters: list[Any] = []
        for ri, rule in enumerate(f.items(spec.get("rules"))):
            if not f.is_mapping(rule):
                rule = {"matches": [None]}  # malformed: reported, answered 500 in the degraded tier
            out = self.rules(self, rule, ns, one_port, ri)
            problems.refs += out.refs
            rule_unsupported = named(rule, out.unsupported) if out.unsupported and "name" in rule else out.unsupported
            if rule_unsupported:
                problems.firsts.append(rule_unsupported[0])
            elif out.first_ref and type(out.behavior.action) is DirectResponse:
                problems.ref_firsts.append(out.first_ref)
            action = out.behavior.action
            per_host = type(action) is Redirect and not action.host  # each route redirects to its own hostname
            if not emit:  # validated for the status only
                if per_host and not rule_unsupported and not all(h and h[0] != "*" for h in hosts):
                    self._redirect_behavior(out, None, problems)  # (reports the missing hostname)
                problems.unsupported += rule_unsupported
                continue
            if not rule_unsupported:
                clusters = out.clusters
                # (the rules of a route often have the very same backends: adding them again is a no-op)
                if len(clusters) != len(last_clusters) or any(map(operator.is_not, clusters, last_clusters)):
                    for cluster in clusters:
                        ctx.add_cluster(cluster)
                    last_clusters = clusters
            shared = self._shared_behavior(out)
            for mi, m in enumerate(out.matches):
                tier = TIER_DEGRADED if m.degraded else TIER_NORMAL
                behavior = shared
                if behavior is None and not per_host:  # transforms made for this match's path
                    behavior = out.behavior.but(transforms=expand(out.behavior.transforms, m.match.path))
                for host, host_rank in host_keys:
                    rid = f"{id_prefix}{ri}m{mi}/{host}" if multi and host else f"{id_prefix}{ri}m{mi}"
                    b = behavior if behavior is not None else self._redirect_behavior(out, host, problems)
                    added += ctx.add_route(Route(rid, host, m.match, b,
                                                 key_from_parts(tier, host_rank, m.ranks, owner, ri, mi), source, ri, mi,
                                                 scope, plane))
            problems.unsupported += rule_unsupported
        return added

    def _shared_behavior(self, out: RuleOut) -> Behavior | None:
        """The behavior of every route of a rule; None when it depends on the route (a redirect
        to each route's own hostname; transforms made for each match's path)."""
        if out.unsupported:
            return Behavior(unhonoured("UnsupportedValue"))
        b = out.behavior
        action = b.action
        if type(action) is Redirect:
            return _answer(b) if action.host else None
        return None if out.prefix_rewrite else b

    def _redirect_behavior(self, out: RuleOut, host: str | None, problems: Problems) -> Behavior:
        """A redirect to the route's own hostname (``host``), or a 500 saying there is none."""
        if host and not host.startswith("*"):
            b = out.behavior
            return _answer(b.but(action=dataclasses.replace(b.action, host=host)))
        if _NO_REDIRECT_HOST not in problems.unsupported:
            problems.unsupported.append(_NO_REDIRECT_HOST)
            problems.firsts.append(_NO_REDIRECT_HOST)
        return Behavior(unhonoured("UnsupportedValue"))


def _not_lost(ok: bool, reason: str, message: str, listeners: list[ListenerInfo], lost: Mapping[Any, str]
              ) -> tuple[bool, str, str, list[ListenerInfo]]:
    """An attachment without the listeners the route lost to an older route of the other kind
    sharing a hostname there; not accepted when it lost them all."""
    kept = [li for li in listeners if listener_key(li) not in lost]
    if len(kept) == len(listeners):
        return ok, reason, message, listeners
    if kept:
        return ok, reason, message, kept
    winners = sorted({lost[listener_key(li)] for li in listeners})
    return (False, "NotAllowedByListeners",
            f"{', '.join(winners)} came first (older, or as old and first by namespace/name) and shares a hostname "
            "with this route on the listeners it would attach to: a listener serves only one of an HTTPRoute and a "
            "GRPCRoute with hostnames in common", [])


def _one_port(listeners: list[ListenerInfo]) -> tuple[int, str] | None:
    """The (Gateway port, protocol) of the listeners when they have one (a redirect's port)."""
    ports = {(li.port, li.protocol) for li in listeners}
    return next(iter(ports)) if len(ports) == 1 else None


def _by_plane(listeners: list[ListenerInfo]) -> list[tuple[str, list[ListenerInfo]]]:
    """The listeners by data plane, in the order of their first listener (all usable: each has one)."""
    groups: dict[str, list[ListenerInfo]] = {}
    for li in listeners:
        assert li.plane is not None
        groups.setdefault(li.plane, []).append(li)
    return list(groups.items())


def _merge(into: Problems, more: Problems) -> None:
    """The problems of another data plane's routes of the same rules, each told once."""
    for mine, theirs in ((into.unsupported, more.unsupported), (into.refs, more.refs), (into.firsts, more.firsts),
                         (into.ref_firsts, more.ref_firsts)):
        for item in theirs:
            if item not in mine:
                mine.append(item)  # type: ignore[arg-type]


def _answer(behavior: Behavior) -> Behavior:
    """A behavior whose action the data plane answers itself (a redirect): only the response
    header changes apply to it."""
    return Behavior(behavior.action, transforms=tuple(t for t in behavior.transforms
                                                      if isinstance(t, RESPONSE_TRANSFORMS)))


def translate(ctx: RenderContext, gateways: dict[tuple[str, str], GatewayInfo], cache: RenderCache | None = None,
              deps: Any = None, conflicts: Conflicts | None = None) -> None:
    """Every HTTPRoute, in key order. With a ``cache`` and the route dependencies ``deps`` (see
    render/memo.py; None: nothing is memoized), a route whose ``(uid, resourceVersion)`` and
    dependencies are unchanged replays its recorded effects instead of being translated. Each
    route's ``NoMatchingParent`` Event (render/httproute/parents.py) is part of its translation.
    ``conflicts``: the listeners HTTPRoutes lost to older GRPCRoutes (part of ``deps``)."""
    routes = ctx.snapshot.httproutes
    translator = Translator(ctx, gateways, conflicts=conflicts)
    if cache is None:
        for key in sorted(routes):
            route = routes[key]
            if f.is_mapping(route):
                translator.route(route)
                missing_parent_event(ctx, route)
    else:
        listeners = {(key, li.index): li for key, gw in gateways.items() for li in gw.listeners}

        def attach(route: Mapping[str, Any]) -> list[Any]:  # (the listeners it counted, by key)
            counted = translator.route(route)
            missing_parent_event(ctx, route)
            return [((li.gateway_ns, li.gateway_name), li.index) for li in counted]

        def count(attached: Mapping[Any, int]) -> None:
            for key, n in attached.items():
                listeners[key].attached += n

        replay_or_translate(ctx, cache, routes, deps, attach, count, _not_a_mapping)


def _not_a_mapping(obj: object) -> bool:
    return not f.is_mapping(obj)
