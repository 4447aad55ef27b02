"""One HTTPRoute rule -> its matches, filters, backends and the problems they report.

:func:`translate_rule` reads the rule in the order its problems are reported: matches,
timeouts, filters (a mirror's backend with them), backends. What it makes (:class:`RuleOut`)
is what the rule's routes are built from (``Translator.emit_rules``): each of its matches x the
route's hosts is one data-plane route sharing the rule's
:class:`~titanium_gateway.twp.model.Behavior`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from titanium_gateway.render import fields as f
from titanium_gateway.render.fields import brief
from titanium_gateway.render.httproute.filters import PrefixRewrite
from titanium_gateway.render.httproute.matches import MatchOut
from titanium_gateway.twp.model import (
    DEFAULT_SETTINGS,
    Action,
    Cluster,
    ClusterSettings,
    Limits,
    Mirror,
    Policy,
    Redirect,
    Transform,
)

if TYPE_CHECKING:
    from titanium_gateway.render.httproute import Translator


class RuleOut:
    """What one rule makes (a plain slotted class: one per rule at 10k+)."""

    __slots__ = ("matches", "unsupported", "refs", "first_ref", "clusters", "action", "redirect", "mirror",
                 "transforms", "policies", "prefix_rewrite", "limits", "key")

    def __init__(self) -> None:
        self.matches: list[MatchOut] = []
        self.unsupported: list[str] = []
        #: (reason, message) of each reference that does not resolve
        self.refs: list[tuple[str, str]] = []
        #: the backend problem the rule's 500 body names
        self.first_ref = ""
        #: the clusters to add (a mirror's first)
        self.clusters: Sequence[Cluster] = ()
        #: the action; None when ``redirect`` needs the host of each route
        self.action: Action | None = None
        #: a RequestRedirect without a hostname: each route redirects to its own hostname
        self.redirect: Redirect | None = None
        self.mirror: Mirror | None = None
        self.transforms: Sequence[Transform | PrefixRewrite] = ()
        self.policies: Sequence[Policy] = ()
        self.prefix_rewrite = False
        self.limits: Limits | None = None
        #: the content of what the rule's behavior is made of (backendRefs, filters, timeouts),
        #: None when it is not of the common shapes: equal keys make equal behaviors
        self.key: tuple[Any, ...] | None = None


def _timeouts(rule: Mapping[str, Any], out: RuleOut) -> ClusterSettings:
    """A rule's ``timeouts``: the request limit into ``out.limits``, problems into ``out``; the
    backend request timeout as the settings of its clusters."""
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
    if request_ms:
        out.limits = Limits(f.timespan(request_ms))
    return ClusterSettings(request_timeout=f.timespan(backend_ms)) if backend_ms else DEFAULT_SETTINGS


#: The fields of an HTTPRouteRule the render reads (Gateway API v1.2.1 standard channel), and
#: ``name`` (standard since v1.4), which names the rule and changes no traffic. Any other field
#: comes from a newer release or the experimental channel (the API server prunes fields its
#: schema does not have, so a field that reaches us is one the installed CRD defines): ``retry``,
#: ``sessionPersistence``, ... The rule answers 500 naming it rather than forwarding as if it
#: were absent (docs/gateway-api.md, "Fields of newer Gateway API releases").
RULE_FIELDS = frozenset({"matches", "filters", "backendRefs", "timeouts", "name"})


def newer_rule_fields(rule: Mapping[str, Any], index: int) -> list[str]:
    """The problems of a rule's fields the render does not know (``spec.rules[0].retry is not
    supported``), in the rule's order."""
    return [f"spec.rules[{index}].{f.plain(key)} is not supported" for key in rule if key not in RULE_FIELDS]


def translate_rule(t: Translator, rule: Mapping[str, Any], route_ns: str, one_port: tuple[int, str] | None,
                   index: int = 0) -> RuleOut:
    out = RuleOut()
    if not rule.keys() <= RULE_FIELDS:
        out.unsupported += newer_rule_fields(rule, index)
    raw_matches = rule.get("matches")
    if raw_matches is None or raw_matches == []:
        raw_matches = [{}]
    elif not isinstance(raw_matches, list):
        out.unsupported.append("matches is malformed")
        raw_matches = [None]
    for raw in raw_matches:
        m = t.matches.of(raw)
        out.matches.append(m)
        if m.problems:
            out.unsupported += m.problems
    settings = _timeouts(rule, out) if "timeouts" in rule else DEFAULT_SETTINGS
    raw_filters = rule.get("filters")
    redirect: Redirect | None = None
    filters_key: tuple[Any, ...] | None = ()
    if raw_filters:
        filters, filters_key = t.filters.of(f.items(raw_filters), out.matches, one_port)
        out.unsupported += filters.problems
        out.transforms = filters.transforms
        out.policies = filters.policies
        out.prefix_rewrite = filters.prefix_rewrite
        redirect = filters.redirect
        if filters.mirror is not None:
            spec, percent = filters.mirror
            cluster, reason, message = t.backends.ref(spec, route_ns, DEFAULT_SETTINGS)
            if cluster is None:
                out.refs.append((reason, f"RequestMirror: {message}"))
            else:
                out.clusters = (cluster,)
                if percent > 0:
                    out.mirror = Mirror(cluster.id, percent)
    if redirect is not None:
        if redirect.host:
            out.action = redirect
        else:
            out.redirect = redirect
        return out
    got, refs_key = t.backends.of(f.items(rule.get("backendRefs")), route_ns, settings)
    if refs_key is not None and filters_key is not None:
        out.key = (refs_key, filters_key, out.limits.request_timeout if out.limits is not None else None)
    out.unsupported += got.unsupported
    out.refs += got.refs
    if got.first_ref:
        out.first_ref = got.first_ref
    out.clusters = (*out.clusters, *got.clusters) if out.clusters else got.clusters
    out.action = got.action
    return out
