"""A served route's status (an HTTPRoute's, a GRPCRoute's): one entry per parentRef to our
Gateways, in spec order.

Accepted (the parent's attachment, or UnsupportedValue listing the rule problems) and
ResolvedRefs (the first backend problem's reason); every problem a 500 body names is listed.
The parentRef is echoed with ``group``/``kind`` filled (as the conformance suite compares them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.render import fields as f
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.fields import listed, summarize
from titanium_gateway.render.gateway import ListenerInfo
from titanium_gateway.render.httproute.attach import Identity, Parent, parent_ref_echo, ref_identity
from titanium_gateway.render.httproute.rules import rule_name
from titanium_gateway.render.reach import SHADOWED_RULE, Unreachable
from titanium_gateway.render.result import EventRecord, ObjectStatus
from titanium_gateway.render.status.conditions import bound_message, existing_conditions, generation
from titanium_gateway.render.status.routes import RouteParentOutcome, RouteStatusOutcome, with_accepted_note
from titanium_gateway.twp.model import Source

API_VERSION = kinds.GATEWAY_API_VERSION
KIND = kinds.HTTP_ROUTE.kind
_SERVED = frozenset(row.kind for row in kinds.SERVED_ROUTES)
_ALL_RESOLVED = ("ResolvedRefs", True, "ResolvedRefs", "all references are resolved")
_NO_CONDITIONS: list[Mapping[str, Any]] = []  # (read only)
#: The Event reason of an accepted route (or an owned Ingress) that has no route in the config.
NOT_SERVED = "NotServed"
#: At most this many unprogrammed listeners are named in a NotServed message.
_NAMED_LISTENERS = 3
#: At most this many unreachable rules are named in one Accepted message (all have events).
_NOTE_RULES = 3


def not_served_reason(listeners: list[ListenerInfo]) -> str:
    """Why a route attached only to ``listeners`` (none of them programmed) is not served:
    ``listener "https" of Gateway ns/gw is not programmed (Secret ns/x not found)``."""
    parts = []
    for li in listeners[:_NAMED_LISTENERS]:
        resolved, _, message = li.resolved
        why = message if not resolved else "its Gateway has no data plane" if li.valid and li.plane is None else ""
        owner = f"ListenerSet {li.listener_set[0]}/{li.listener_set[1]}" if li.listener_set is not None else (
            f"Gateway {li.gateway_ns}/{li.gateway_name}")
        parts.append(f'listener "{li.name}" of {owner} is not programmed'
                     + (f" ({why})" if why else ""))
    if len(listeners) > _NAMED_LISTENERS:
        parts.append(f"{len(listeners) - _NAMED_LISTENERS} more listeners are not programmed")
    return "; ".join(parts)


def shadowed_rules(ctx: RenderContext, source: Source, rules: list[Unreachable]) -> None:
    """Unreachable rules of one HTTPRoute (GRPCRoute): a ``ShadowedRule`` Warning Event per rule
    and a sentence in the message of each parent's ``Accepted: True`` condition (the route stays
    Accepted: it is valid)."""
    objects = getattr(ctx.snapshot, kinds.BY_KIND[source.kind].field)
    uid = f.string(f.metadata(objects.get(f"{source.namespace}/{source.name}")).get("uid"))
    names = rule_names(ctx)
    for u in rules:
        ctx.add_event(EventRecord(kind=source.kind, namespace=source.namespace, name=source.name, type="Warning",
                                  reason=SHADOWED_RULE, message=u.message(names=names), uid=uid,
                                  api_version=API_VERSION))
    status = ctx.status.get((source.kind, source.namespace, source.name))
    if status is None or type(status) is not ObjectStatus:
        return
    rules = sorted(rules, key=_rule_index)
    sentences = [u.message(names=names) for u in rules[:_NOTE_RULES]]
    if len(rules) > _NOTE_RULES:
        sentences.append(f"{len(rules) - _NOTE_RULES} more rules are unreachable ({SHADOWED_RULE} events)")
    ctx.add_status(with_accepted_note(status, "; ".join(sentences)))


def rule_names(ctx: RenderContext) -> Callable[[Source, int], str]:
    """The names of the HTTPRoute (GRPCRoute) rules of this render's snapshot (``rules.rule_name``)."""
    snapshot = ctx.snapshot

    def name(source: Source, index: int) -> str:
        if source.kind not in _SERVED:
            return ""
        routes = getattr(snapshot, kinds.BY_KIND[source.kind].field)
        return rule_name(routes.get(f"{source.namespace}/{source.name}"), index)

    return name


def _rule_index(u: Unreachable) -> int:
    return u.rule_index


class Problems:
    """A route's problems: ``unsupported`` and ``refs`` (reason, message) as they come;
    ``firsts``/``ref_firsts``: the ones its 500 bodies start with (always listed)."""

    __slots__ = ("unsupported", "refs", "firsts", "ref_firsts")

    def __init__(self) -> None:
        self.unsupported: list[str] = []
        self.refs: list[tuple[str, str]] = []
        self.firsts: list[str] = []
        self.ref_firsts: list[str] = []


@dataclass(slots=True)
class RouteOutcome:
    """What the translation of one HTTPRoute found, for its status: its parentRefs to our
    Gateways (and its previous entries of ours), its problems, and why an accepted route has
    no route in the config (``unserved``: a ``NotServed`` event; an Accepted parent's message
    says it)."""

    route: Mapping[str, Any]
    namespace: str
    name: str
    parents: list[Parent]
    old_parents: list[Mapping[str, Any]]
    problems: Problems
    unserved: str = ""


class Statuses:
    """The statuses of one render's routes of one kind (``kind``): each route's outcome, made
    from what its translation found, recorded for the status package to build
    (render/status/routes.py). Like the conditions the builder makes, the parentRef echoes are
    made once and shared read-only between the routes' statuses."""

    __slots__ = ("ctx", "kind", "_echoes")

    def __init__(self, ctx: RenderContext, kind: str = KIND) -> None:
        self.ctx = ctx
        self.kind = kind
        self._echoes: dict[tuple[Any, ...], dict[str, Any]] = {}

    def echo(self, ref: Mapping[str, Any], identity: Identity) -> dict[str, Any]:
        port = ref.get("port")
        key = (identity, bool(f.text(ref.get("namespace"))), type(port))
        try:
            hit = self._echoes.get(key)
        except TypeError:
            return parent_ref_echo(ref)
        if hit is None:
            hit = self._echoes[key] = parent_ref_echo(ref)
        return hit

    def route(self, outcome: RouteOutcome) -> None:
        """The status of one HTTPRoute: an entry per parent, the problems its 500 bodies start
        with listed first."""
        ctx = self.ctx
        route, ns, name, parents, old_parents, unserved = (outcome.route, outcome.namespace, outcome.name,
                                                           outcome.parents, outcome.old_parents, outcome.unserved)
        problems = outcome.problems
        unsupported = problems.firsts + problems.unsupported
        refs = problems.ref_firsts + [m for _, m in problems.refs]
        ref_reason = problems.refs[0][0] if problems.refs else ""
        n_firsts, n_ref_firsts = len(set(problems.firsts)), len(set(problems.ref_firsts))
        if unserved:
            ctx.add_event(EventRecord(kind=self.kind, namespace=ns, name=name, type="Warning", reason=NOT_SERVED,
                                      message=f"the route is not served: {unserved}",
                                      uid=f.string(f.metadata(route).get("uid")), api_version=API_VERSION))
        resolved = ("ResolvedRefs", False, ref_reason, summarize(refs, listed(n_ref_firsts))) if refs else _ALL_RESOLVED
        entries: list[RouteParentOutcome] = []
        for p in parents:
            previous: list[Mapping[str, Any]] = _NO_CONDITIONS
            for old in old_parents:
                old_ref = old.get("parentRef")
                # (an equal parentRef has an equal identity: the usual case, our own echo of it)
                if old_ref == p.ref or (f.is_mapping(old_ref) and ref_identity(old_ref, ns) == p.identity):
                    previous = existing_conditions(old)
                    break
            if not p.accepted:
                accepted = ("Accepted", False, p.reason, p.message)
            elif unsupported:
                accepted = ("Accepted", False, "UnsupportedValue", summarize(unsupported, listed(n_firsts)))
            elif unserved:
                accepted = ("Accepted", True, "Accepted", bound_message(f"{p.message}, but not served: {unserved}"))
            else:
                accepted = ("Accepted", True, "Accepted", p.message)
            entries.append(RouteParentOutcome(self.echo(p.ref, p.identity), (accepted, resolved), previous))
        ctx.route_status(RouteStatusOutcome(self.kind, ns, name, generation(route), tuple(entries)))
