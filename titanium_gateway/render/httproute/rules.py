"""One HTTPRoute rule -> its matches, filters, backends and the problems they report.

:func:`translate_rule` reads the rule in the order its problems are reported: matches,
timeouts, filters (a mirror's backend with them), backends. What it makes (:class:`RuleOut`)
is what the rule's routes are built from (``Translator.emit_rules``): each of its matches x the
route's hosts is one data-plane route sharing the rule's
:class:`~titanium_gateway.twp.model.Behavior` (``RuleOut.behavior``: the filters' behavior,
finished with the action of the backends and the limits of the timeouts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from titanium_gateway.render import fields as f
from titanium_gateway.render.fields import brief
from titanium_gateway.render.httproute.filters import UNDECIDED
from titanium_gateway.render.httproute.matches import MatchOut
from titanium_gateway.twp.model import (
    DEFAULT_SETTINGS,
    Behavior,
    Cluster,
    ClusterSettings,
    Limits,
    Redirect,
)

if TYPE_CHECKING:
    from titanium_gateway.render.httproute import Translator


class RuleOut:
    """What one rule makes (a plain slotted class: one per rule at 10k+)."""

    __slots__ = ("matches", "unsupported", "refs", "first_ref", "clusters", "behavior", "prefix_rewrite", "key")

    def __init__(self) -> None:
        self.matches: list[MatchOut] = []
        self.unsupported: list[str] = []
        #: (reason, message) of each reference that does not resolve
        self.refs: list[tuple[str, str]] = []
        #: the backend problem the rule's 500 body names
        self.first_ref = ""
        #: the clusters to add (a mirror's first)
        self.clusters: Sequence[Cluster] = ()
        #: the rule's behavior: its filters' (``filters.RuleFilters.behavior``) with the action of
        #: its backends and the limits of its timeouts; a RequestRedirect's action when it
        #: redirects (``host`` "": each route's own hostname)
        self.behavior: Behavior = NO_FILTERS
        #: a PrefixRewrite stands among the behavior's transforms (made for each match's path)
        self.prefix_rewrite = False
        #: the content of what the rule's behavior is made of (backendRefs, filters, timeouts),
        #: None when it is not of the common shapes: equal keys make equal behaviors
        self.key: tuple[Any, ...] | None = None


#: The behavior of a rule without filters, before its backends and timeouts decide the rest.
NO_FILTERS = Behavior(UNDECIDED)

#: What translates one rule of a route kind: (translator, rule, route namespace, one_port, index)
RuleTranslator = Callable[["Translator", Mapping[str, Any], str, "tuple[int, str] | None", int], RuleOut]


def _timeouts(rule: Mapping[str, Any], out: RuleOut) -> tuple[ClusterSettings, Limits | None]:
    """A rule's ``timeouts``: the backend request timeout as the settings of its clusters, and
    the request limit; problems into ``out``."""
    timeouts = f.mapping(rule.get("timeouts"))
    backend_ms: int | None = None
    request_ms: int | None = None
    if "request" in timeouts:
        request_ms = f.parse_duration_ms(timeouts.get("request"))
        if request_ms is None:
            out.unsupported.append(f"timeouts.request {brief(timeouts.get('request'))} is not a valid duration")
    if "backendRequest" in timeouts:
        backend_ms = f.parse_duration_ms(timeouts.get("backendRequest"))
        if backend_ms is None:
            out.unsupported.append(f"timeouts.backendRequest {brief(timeouts.get('backendRequest'))} is not a valid duration")
    if request_ms and backend_ms and backend_ms > request_ms:
        out.unsupported.append("timeouts.backendRequest is longer than timeouts.request")
    limits = Limits(f.timespan(request_ms)) if request_ms else None
    return (ClusterSettings(request_timeout=f.timespan(backend_ms)) if backend_ms else DEFAULT_SETTINGS), limits


#: The fields of an HTTPRouteRule the render reads (Gateway API v1.2.1 standard channel), and
#: ``name`` (standard since v1.4), which names the rule and changes no traffic. Any other field
#: comes from a newer release or the experimental channel (the API server prunes fields its
#: schema does not have, so a field that reaches us is one the installed CRD defines): ``retry``,
#: ``sessionPersistence``, ... The rule answers 500 naming it rather than forwarding as if it
#: were absent (docs/gateway-api.md, "Fields of newer Gateway API releases").
RULE_FIELDS = frozenset({"matches", "filters", "backendRefs", "timeouts", "name"})


def rule_name(route: Any, index: int) -> str:
    """The ``name`` of rule ``index`` of an HTTPRoute object ("" when it has none). Rule names
    (standard since Gateway API v1.4) are shown in messages and by ``explain``; the data-plane
    route ids keep the rule's index (``r0m0``): an id must stay the same while the rule does, and
    a name may be added, changed or removed without changing the rule's traffic."""
    rules = f.items(f.mapping(f.mapping(route).get("spec")).get("rules"))
    rule = rules[index] if 0 <= index < len(rules) else None
    return f.text(f.mapping(rule).get("name"))


def named(rule: Mapping[str, Any], problems: list[str]) -> list[str]:
    """A named rule's problems, each saying which rule (``rule "checkout": ...``)."""
    name = f.text(rule.get("name"))
    return [f"rule {name!r}: {p}" for p in problems] if name else problems


def newer_rule_fields(rule: Mapping[str, Any], index: int, known: frozenset[str] = RULE_FIELDS) -> list[str]:
    """The problems of a rule's fields the render does not know (``spec.rules[0].retry is not
    supported``; ``known``: the fields of the route kind's rules it reads), in the rule's order."""
    return [f"spec.rules[{index}].{f.plain(key)} is not supported" for key in rule if key not in known]


def read_matches(rule: Mapping[str, Any], out: RuleOut, of: Callable[[Any], MatchOut]) -> None:
    """A rule's ``matches`` (none: one match of everything) made by ``of`` into ``out``, their
    problems with them."""
    raw_matches = rule.get("matches")
    if raw_matches is None or raw_matches == []:
        raw_matches = [{}]
    elif not isinstance(raw_matches, list):
        out.unsupported.append("matches is malformed")
        raw_matches = [None]
    for raw in raw_matches:
        m = of(raw)
        out.matches.append(m)
        if m.problems:
            out.unsupported += m.problems


def translate_rule(t: Translator, rule: Mapping[str, Any], route_ns: str, one_port: tuple[int, str] | None,
                   index: int = 0) -> RuleOut:
    out = RuleOut()
    if not rule.keys() <= RULE_FIELDS:
        out.unsupported += newer_rule_fields(rule, index)
    read_matches(rule, out, t.matches.of)
    settings, limits = _timeouts(rule, out) if "timeouts" in rule else (DEFAULT_SETTINGS, None)
    raw_filters = rule.get("filters")
    behavior = NO_FILTERS
    filters_key: tuple[Any, ...] | None = ()
    if raw_filters:
        filtered, filters_key = t.filters.of(f.items(raw_filters), out.matches, one_port, t.backends, route_ns)
        out.unsupported += filtered.problems
        out.refs += filtered.refs
        out.clusters = filtered.clusters
        out.prefix_rewrite = filtered.prefix_rewrite
        behavior = filtered.behavior
    if type(behavior.action) is Redirect:  # the data plane answers itself: no backends
        out.behavior = behavior
        return out
    got, refs_key = t.backends.of(f.items(rule.get("backendRefs")), route_ns, settings)
    if refs_key is not None and filters_key is not None:
        out.key = (refs_key, filters_key, limits.request_timeout if limits is not None else None)
    out.unsupported += got.unsupported
    out.refs += got.refs
    if got.first_ref:
        out.first_ref = got.first_ref
    out.clusters = (*out.clusters, *got.clusters) if out.clusters else got.clusters
    key = out.key
    if key is None:
        out.behavior = behavior.but(action=got.action, limits=limits)
    else:  # one object for the rules of equal content (their routes share it)
        made = t.behaviors.get(key)
        if made is None:
            made = t.behaviors[key] = behavior.but(action=got.action, limits=limits)
        out.behavior = made
    return out
