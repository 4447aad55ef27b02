"""Which route answers a request, and why.

``select_route(config, request) -> Selection(winner, losers)``: routes are evaluated in
ascending ``order``, the FIRST whose match accepts the request wins; ``losers`` are the other
routes whose match also accepts it, in the order they lost. ``decide(config, request)`` adds
what the winner does with it (:class:`Decision`: forward to weighted clusters, redirect with
its ``Location``, a direct answer, or 404 when no route matches).

Matching (docs/contract.md): host exact or ``*.suffix`` (one or more labels, not the apex),
case-insensitive, the port in Host ignored; path ``Exact``, ``Prefix`` on a segment boundary,
``Regex`` full match, on the path without the query string; method exact; headers all present
and equal, names and values case-insensitive (repeated lines of a header compared as their
``, `` join); query parameters all present and equal (case-sensitive; the first value of a
repeated name), ``queryRegex`` full match.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple
from urllib.parse import parse_qsl

from titanium_gateway.contract import model as m
from titanium_gateway.contract.redirect import location


@dataclass(frozen=True)
class Request:
    """The head of a request as the data plane sees it.

    ``host`` is the Host header as sent (it may carry a port), ``path`` the path without the
    query string, ``query`` the raw query string without ``?``, ``headers`` the header lines
    in order, ``client_address`` the socket peer, ``scheme`` the listener's (``https`` when it
    terminates TLS).
    """

    method: str = "GET"
    host: str = ""
    path: str = "/"
    query: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    client_address: str = ""
    scheme: str = "http"

    @classmethod
    def from_target(cls, method: str, target: str, headers: tuple[tuple[str, str], ...] | list = (),
                    client_address: str = "", scheme: str = "http", host: str | None = None) -> Request:
        """A request from its request-target (``/path?query``); ``host`` defaults to the Host header."""
        path, _, query = target.partition("?")
        hdrs = tuple((str(k), str(v)) for k, v in headers)
        if host is None:
            host = next((v for k, v in hdrs if k.lower() == "host"), "")
        return cls(method, host, path or "/", query, hdrs, client_address, scheme)

    @cached_property
    def hostname(self) -> str:
        """The Host without its port, lower-cased (``[::1]:80`` -> ``::1``)."""
        return hostname_of(self.host)

    def header(self, name: str) -> str | None:
        """Every line of ``name`` joined with ``, `` (None when absent)."""
        lname = name.lower()
        values = [v for k, v in self.headers if k.lower() == lname]
        return ", ".join(values) if values else None

    def query_params(self) -> dict[str, str]:
        """Decoded query parameters, the first value of each name."""
        return self._query_params

    @cached_property
    def _query_params(self) -> dict[str, str]:
        params: dict[str, str] = {}
        for k, v in parse_qsl(self.query, keep_blank_values=True):
            params.setdefault(k, v)
        return params


def hostname_of(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        return host[1:end] if end > 0 else host
    if host.count(":") == 1:
        name, _, port = host.partition(":")
        if port.isdigit() or port == "":
            return name
    elif host.count(":") > 1:  # a bare IPv6 literal
        try:
            return str(ipaddress.ip_address(host))
        except ValueError:
            return host
    return host


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
    assert match.path_regex is not None
    return match.path_regex.fullmatch(path) is not None


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
    for name, regex in match.query_regex:
        got = params.get(name)
        if got is None or regex.fullmatch(got) is None:
            return False
    return True


def matches(route: m.Route, request: Request) -> bool:
    """Does the route's match accept the request?"""
    mt = route.match
    return (host_matches(mt.host, request.hostname)
            and path_matches(mt, request.path)
            and (mt.method is None or mt.method == request.method)
            and headers_match(mt, request)
            and query_matches(mt, request))


@dataclass(frozen=True)
class Check:
    """One condition of a route's match against a request (for explaining a choice)."""

    field: str  # host | path | method | header <name> | query <name> | queryRegex <name>
    expected: str
    actual: str | None
    ok: bool


def checks(route: m.Route, request: Request) -> tuple[Check, ...]:
    """Every condition of the route's match, what the request has, and whether it holds
    (an empty tuple: the route matches any request)."""
    mt = route.match
    out: list[Check] = []
    if mt.host is not None:
        out.append(Check("host", mt.host, request.hostname, host_matches(mt.host, request.hostname)))
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
    for name, regex in mt.query_regex:
        got = params.get(name)
        out.append(Check(f"queryRegex {name}", regex.pattern, got, got is not None and regex.fullmatch(got) is not None))
    return tuple(out)


class Selection(NamedTuple):
    """The winning route (None: no route matches, 404) and the other matching routes, in order."""

    winner: m.Route | None
    losers: tuple[m.Route, ...]


def select_route(config: m.Config, request: Request, *, all_matches: bool = True) -> Selection:
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
        return () if self.route is None else self.route.transforms

    @property
    def policies(self) -> tuple[m.Policy, ...]:
        return () if self.route is None else self.route.policies

    @property
    def why(self) -> tuple[Check, ...]:
        """The winner's match conditions and how the request meets them."""
        return () if self.route is None else checks(self.route, self.request)


def outcome_of(route: m.Route | None, request: Request) -> Outcome:
    if route is None:
        return NotFound()
    action = route.action
    if isinstance(action, m.Forward):
        return ForwardTo(action.clusters)
    if isinstance(action, m.Redirect):
        return RedirectTo(action.status_code, location(action, request))
    return Respond(action.status, action.body)


def decide(config: m.Config, request: Request, *, all_matches: bool = True) -> Decision:
    winner, losers = select_route(config, request, all_matches=all_matches)
    return Decision(request, winner, outcome_of(winner, request), losers)
