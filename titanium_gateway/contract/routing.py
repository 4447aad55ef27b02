"""Which route answers a request, and why.

``select_route(config, request) -> Selection(winner, losers)``: routes are evaluated in
ascending ``order``, the FIRST whose match accepts the request wins; ``losers`` are the other
routes whose match also accepts it, in the order they lost. ``decide(config, request)`` adds
what the winner does with it (:class:`Decision`: forward to weighted clusters, redirect with
its ``Location``, a direct answer, or 404 when no route matches).

Matching (docs/contract.md): the listener's port one of ``ports`` (absent: every listener);
host exact or ``*.suffix`` (one or more labels, not the apex),
case-insensitive, the port in Host ignored; path ``Exact``, ``Prefix`` on a segment boundary,
``Regex`` full match, on the path without the query string; method exact; headers all present
and equal, names and values case-insensitive (repeated lines of a header compared as their
``, `` join); query parameters all present and equal (case-sensitive; the first value of a
repeated name), ``queryRegex`` full match.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from titanium_gateway.contract.redirect import location
from titanium_gateway.contract.request import Request, hostname_of
from titanium_gateway.twp import model as m
from titanium_gateway.twp.regex import compiled

__all__ = ["Check", "Decision", "ForwardTo", "NotFound", "RedirectTo", "Request", "Respond", "Selection", "checks",
           "decide", "host_matches", "hostname_of", "matches", "path_matches", "port_matches", "select_route"]


class Routes(Protocol):
    """What routing reads of a config: its routes in ascending ``order`` (a loaded
    :class:`~titanium_gateway.twp.load.Config` or a :class:`~titanium_gateway.twp.model.Document`)."""

    @property
    def routes(self) -> Sequence[m.Route]: ...


# -- the match predicates --------------------------------------------------------------------
def host_matches(pattern: str | None, hostname: str) -> bool:
    if pattern is None:
        return True
    if pattern.startswith("*."):
        suffix = pattern[1:]  # ".example.com"
        return hostname.endswith(suffix) and len(hostname) > len(suffix)
    return hostname == pattern


def path_matches(match: m.Match, path: str) -> bool:
    if match.path is None:
        return True
    if match.path_kind == "Exact":
        return path == match.path
    if match.path_kind == "Prefix":
        prefix = match.path.rstrip("/")
        if not prefix:
            return True  # "/" matches every path
        return path == prefix or path.startswith(prefix + "/")
    return compiled(match.path).fullmatch(path) is not None


def headers_match(match: m.Match, request: Request) -> bool:
    for name, expected in match.headers:
        got = request.header(name)
        if got is None or got.strip().lower() != expected.lower():
            return False
    return True


def query_matches(match: m.Match, request: Request) -> bool:
    if not match.query and not match.query_regex:
        return True
    params = request.query_params()
    for name, expected in match.query:
        if params.get(name) != expected:
            return False
    for name, pattern in match.query_regex:
        got = params.get(name)
        if got is None or compiled(pattern).fullmatch(got) is None:
            return False
    return True


def port_matches(ports: tuple[int, ...], port: int | None) -> bool:
    """A route's ``ports`` (empty: every listener) against the listener port of a request (None:
    unknown, not checked)."""
    return not ports or port is None or port in ports


def matches(route: m.Route, request: Request) -> bool:
    """Does the route's match accept the request?"""
    mt = route.match
    return (port_matches(route.ports, request.port)
            and host_matches(route.host, request.hostname)
            and path_matches(mt, request.path)
            and (mt.method is None or mt.method == request.method)
            and headers_match(mt, request)
            and query_matches(mt, request))


@dataclass(frozen=True)
class Check:
    """One condition of a route's match against a request (for explaining a choice)."""

    field: str  # port | host | path | method | header <name> | query <name> | queryRegex <name>
    expected: str
    actual: str | None
    ok: bool


def checks(route: m.Route, request: Request) -> tuple[Check, ...]:
    """Every condition of the route's match, what the request has, and whether it holds
    (an empty tuple: the route matches any request)."""
    mt = route.match
    out: list[Check] = []
    if route.ports:
        out.append(Check("port", ", ".join(map(str, route.ports)), None if request.port is None else str(request.port),
                         port_matches(route.ports, request.port)))
    if route.host is not None:
        out.append(Check("host", route.host, request.hostname, host_matches(route.host, request.hostname)))
    if mt.path is not None:
        out.append(Check("path", f"{mt.path_kind} {mt.path}", request.path, path_matches(mt, request.path)))
    if mt.method is not None:
        out.append(Check("method", mt.method, request.method, mt.method == request.method))
    for name, expected in mt.headers:
        got = request.header(name)
        out.append(Check(f"header {name}", expected, got,
                         got is not None and got.strip().lower() == expected.lower()))
    params = request.query_params()
    for name, expected in mt.query:
        out.append(Check(f"query {name}", expected, params.get(name), params.get(name) == expected))
    for name, pattern in mt.query_regex:
        got = params.get(name)
        out.append(Check(f"queryRegex {name}", pattern, got,
                         got is not None and compiled(pattern).fullmatch(got) is not None))
    return tuple(out)


class Selection(NamedTuple):
    """The winning route (None: no route matches, 404) and the other matching routes, in order."""

    winner: m.Route | None
    losers: tuple[m.Route, ...]


def select_route(config: Routes, request: Request, *, all_matches: bool = True) -> Selection:
    """The first route in ascending ``order`` whose match accepts the request. With
    ``all_matches`` (the default) the routes that also match but lose are listed too; the data
    plane passes False and stops at the winner."""
    winner: m.Route | None = None
    losers: list[m.Route] = []
    for route in config.routes:
        if matches(route, request):
            if winner is None:
                winner = route
                if not all_matches:
                    break
            else:
                losers.append(route)
    return Selection(winner, tuple(losers))


# -- what the winner does ----------------------------------------------------------------------
@dataclass(frozen=True)
class ForwardTo:
    """Forward to one of the weighted clusters (``clusterId`` is one cluster of weight 1)."""

    clusters: tuple[m.WeightedCluster, ...]
    kind = "forward"


@dataclass(frozen=True)
class RedirectTo:
    status: int
    location: str
    kind = "redirect"


@dataclass(frozen=True)
class Respond:
    status: int
    body: str
    content_type: str = "text/plain; charset=utf-8"
    kind = "direct"


@dataclass(frozen=True)
class NotFound:
    status: int = 404
    body: str = "no route matches the request\n"
    kind = "none"


Outcome = ForwardTo | RedirectTo | Respond | NotFound


@dataclass(frozen=True)
class Decision:
    """What the data plane does with a request: the route (None for 404), its outcome, the
    transforms and policies it applies, and the routes that also matched but lost."""

    request: Request
    route: m.Route | None
    outcome: Outcome
    losers: tuple[m.Route, ...] = ()

    @property
    def route_id(self) -> str | None:
        return None if self.route is None else self.route.id

    @property
    def transforms(self) -> tuple[m.Transform, ...]:
        return () if self.route is None else self.route.behavior.transforms

    @property
    def policies(self) -> tuple[m.Policy, ...]:
        return () if self.route is None else self.route.behavior.policies

    @property
    def why(self) -> tuple[Check, ...]:
        """The winner's match conditions and how the request meets them."""
        return () if self.route is None else checks(self.route, self.request)


#: action class -> what the data plane answers with it: ``(action, request) -> outcome``
ACTIONS: dict[type[Any], Callable[[Any, Request], Outcome]] = {
    m.Forward: lambda action, request: ForwardTo((m.WeightedCluster(action.cluster_id, 1),)),
    m.Split: lambda action, request: ForwardTo(action.clusters),
    m.Redirect: lambda action, request: RedirectTo(action.status_code, location(action, request)),
    m.DirectResponse: lambda action, request: Respond(action.status, action.body),
}


def outcome_of(route: m.Route | None, request: Request) -> Outcome:
    if route is None:
        return NotFound()
    action = route.behavior.action
    return ACTIONS[type(action)](action, request)


def decide(config: Routes, request: Request, *, all_matches: bool = True) -> Decision:
    winner, losers = select_route(config, request, all_matches=all_matches)
    return Decision(request, winner, outcome_of(winner, request), losers)
