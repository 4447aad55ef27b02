"""GRPCRoute -> model routes + clusters + per-parent status, by the HTTPRoute translator.

A GRPCRoute is served as an HTTPRoute is (render/httproute/: parentRefs and hosts, backendRefs
with ReferenceGrants, the header modifier and mirror filters, status per parent, attachedRoutes),
with its own rules (:func:`translate_rule`): a gRPC call is an HTTP/2 request whose path is
``/package.Service/Method`` (the data plane matches HTTP/2 requests as HTTP/1.1 ones and speaks
HTTP/2 to the backend when the client does: docs/contract.md, "Decisions"). So a method match
becomes a path match:

* ``Exact`` service and method: the Exact path ``/<service>/<method>``;
* ``Exact`` service only: the Prefix ``/<service>`` (every method of the service);
* ``Exact`` method only: the Regex ``/[^/]+/<method>`` (any service);
* ``RegularExpression``: the Regex ``/(?:<service>)/(?:<method>)``, ``[^/]+`` for an empty one.

Header matches: ``Exact``; a ``RegularExpression`` is answered as an HTTPRoute's is (the match
keeps its expressible part, its rule answers 500 in the degraded tier). Filters other than
RequestHeaderModifier, ResponseHeaderModifier and RequestMirror make the rule answer 500.

Precedence (the GRPCRoute API): after the hostname, the longest service, then the longest method,
then the most header matches, then the oldest route and namespace/name (render/precedence.py,
:func:`~titanium_gateway.render.precedence.grpc_match_part`). Route ids:
``grpcroute/<ns>/<name>/r<i>m<j>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.render import fields as f
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.fields import brief, plain
from titanium_gateway.render.gateway import GatewayInfo
from titanium_gateway.render.httproute import Translator
from titanium_gateway.render.httproute.kindconflicts import Conflicts
from titanium_gateway.render.httproute.matches import MatchOut, header_matches
from titanium_gateway.render.httproute.parents import missing_parent_events
from titanium_gateway.render.httproute.rules import NO_FILTERS, RuleOut, newer_rule_fields, read_matches
from titanium_gateway.render.precedence import grpc_match_part
from titanium_gateway.render.regex import check_regex, regex_escape
from titanium_gateway.twp.model import DEFAULT_SETTINGS, Match

KIND = kinds.GRPC_ROUTE.kind

#: The fields of a GRPCRouteRule the render reads; any other (``sessionPersistence``, ...) makes
#: the rule answer 500 naming it.
RULE_FIELDS = frozenset({"matches", "filters", "backendRefs", "name"})
_MATCH_FIELDS = frozenset({"method", "headers"})
#: The filter types a GRPCRoute rule may have that the data plane honours.
FILTERS = frozenset({"RequestHeaderModifier", "ResponseHeaderModifier", "RequestMirror"})
#: The GRPCRoute API's validation of an Exact service and method.
_SERVICE = re.compile(r"(?i)\.?[a-z_][a-z_0-9]*(\.[a-z_][a-z_0-9]*)*")
_METHOD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
#: A service or method a RegularExpression leaves empty: any one.
_ANY = "[^/]+"


def method_path(service: str, method: str, regex: bool) -> tuple[str, str]:
    """The (path, pathKind) a method match is (service or method non-empty; valid)."""
    if regex:
        return f"/(?:{service or _ANY})/(?:{method or _ANY})", "Regex"
    if service and method:
        return f"/{service}/{method}", "Exact"
    if service:
        return f"/{service}", "Prefix"
    return f"/{_ANY}/{regex_escape(method)}", "Regex"


def build_match(raw: Mapping[str, Any]) -> MatchOut:
    """One ``rules[].matches[]`` of a GRPCRoute."""
    problems: list[str] = []
    path: str | None = None
    path_kind: str | None = None
    service = method = ""
    if "method" in raw:
        spec = f.mapping(raw.get("method"))
        mtype = f.string(spec.get("type")) or "Exact"
        service, method = spec.get("service") or "", spec.get("method") or ""
        if not isinstance(service, str) or not isinstance(method, str) or not f.is_mapping(raw.get("method")):
            problems.append("method match is malformed")
            service = method = ""
        elif not service and not method:
            problems.append("a method match needs a service or a method")
        elif mtype == "Exact":
            if service and not _SERVICE.fullmatch(service):
                problems.append(f"method match service {brief(service)} is not a gRPC service name")
            elif method and not _METHOD.fullmatch(method):
                problems.append(f"method match method {brief(method)} is not a gRPC method name")
            else:
                path, path_kind = method_path(service, method, False)
        elif mtype == "RegularExpression":
            why = next((w for w in (check_regex(service) if service else "", check_regex(method) if method else "")
                        if w), "")
            if why:
                problems.append(f"method match RegularExpression: {why}")
            else:
                path, path_kind = method_path(service, method, True)
                why = check_regex(path)
                if why:
                    problems.append(f"method match RegularExpression: {why}")
                    path = path_kind = None
        else:
            problems.append(f"method match type {plain(mtype)} is not supported")
    headers: dict[str, str] = {}
    header_matches(raw.get("headers"), headers, problems)
    for key in raw:
        if key not in _MATCH_FIELDS:
            problems.append(f"match field {plain(key)} is not supported")
    match = Match(path, path_kind, None, tuple(sorted(headers.items())))
    ranks = grpc_match_part(len(service) if isinstance(service, str) else 0,
                            len(method) if isinstance(method, str) else 0, len(headers))
    return MatchOut(match, bool(problems), tuple(problems), ranks)


#: A match nothing of which is known (not a mapping): it answers 500 only where nothing else matches.
MALFORMED = MatchOut(Match(), True, ("a match is malformed",), grpc_match_part(0, 0, 0))


def _match_of(raw: Any) -> MatchOut:
    return build_match(raw) if f.is_mapping(raw) else MALFORMED


def translate_rule(t: Translator, rule: Mapping[str, Any], route_ns: str, one_port: tuple[int, str] | None,
                   index: int = 0) -> RuleOut:
    """One GRPCRoute rule: its matches, filters and backends (``Translator.rules``)."""
    out = RuleOut()
    if not rule.keys() <= RULE_FIELDS:
        out.unsupported += newer_rule_fields(rule, index, RULE_FIELDS)
    read_matches(rule, out, _match_of)
    behavior = NO_FILTERS
    filters = f.items(rule.get("filters"))
    if filters:
        served = []
        for flt in filters:
            ftype = f.string(f.mapping(flt).get("type"))
            if ftype in FILTERS:
                served.append(flt)
            else:
                out.unsupported.append(f"filter type {plain(ftype) if ftype else 'missing'} is not supported")
        got, _ = t.filters.of(served, out.matches, one_port, t.backends, route_ns)
        out.unsupported += got.problems
        out.refs += got.refs
        out.clusters = got.clusters
        behavior = got.behavior
    backends, _ = t.backends.of(f.items(rule.get("backendRefs")), route_ns, DEFAULT_SETTINGS)
    out.unsupported += backends.unsupported
    out.refs += backends.refs
    if backends.first_ref:
        out.first_ref = backends.first_ref
    out.clusters = (*out.clusters, *backends.clusters) if out.clusters else backends.clusters
    out.behavior = behavior.but(action=backends.action)
    return out


def translate(ctx: RenderContext, gateways: dict[tuple[str, str], GatewayInfo], conflicts: Conflicts | None = None
              ) -> None:
    """Every GRPCRoute, in key order; ``conflicts``: the listeners they lost to older HTTPRoutes."""
    routes = ctx.snapshot.grpcroutes
    if not routes:
        return
    translator = Translator(ctx, gateways, KIND, translate_rule, conflicts)
    for key in sorted(routes):
        route = routes[key]
        if f.is_mapping(route):
            translator.route(route)
    missing_parent_events(ctx, KIND)


__all__ = ["FILTERS", "KIND", "build_match", "method_path", "translate", "translate_rule"]
