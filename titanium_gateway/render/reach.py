"""Unreachable rules: the rules whose every data-plane route is taken first by another rule.

The data plane takes the FIRST route (in ``order``) whose match accepts a request. A route R is
*covered* when an earlier route W of the same data plane accepts every request R accepts: W
serves every listener port R serves (W lists no ports, or every port R lists); W's host is R's
host, a wildcard covering it, or absent; W's path covers R's; W's method, header and query
conditions are a subset of R's. A rule is *unreachable* when every one of its routes (in every
data plane) is covered by a route of another rule: it can never answer a request.

:func:`find_unreachable` walks the routes in order once, with the earlier routes indexed by
match host and path: in precedence order a route that covers another and comes before it has
the same host and an equivalent path (see the function), so each route is compared only with the
few earlier routes of its key. It is conservative: it says "covered" only when certain (a
regular-expression path or a match field it does not know never covers; past a crowded key's
first routes nothing is compared), so a rule it does not report may still be unreachable.
Coverage (:func:`covers`) is decided with the contract's own matching predicates
(:mod:`titanium_gateway.contract.routing`) applied to the covered route's values.

The unit of a report is a rule: an HTTPRoute rule (all its matches x hosts), an Ingress path (its
rule and path; the defaultBackend is rule -1). This module only analyses: the render tells what
it finds (events, status notes) through the status of each kind.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from titanium_gateway import kinds
from titanium_gateway.contract import routing
from titanium_gateway.twp.model import DirectResponse, Match, Route, Source

_INGRESS = kinds.INGRESS.kind

#: the Match fields whose coverage is decided here; a route with another field set (one this
#: module does not know yet) never covers another
_KNOWN_FIELDS = frozenset({"path", "path_kind", "method", "headers", "query", "query_regex"})
_OTHER_FIELDS = tuple(f for f in dataclasses.fields(Match) if f.name not in _KNOWN_FIELDS)
#: at most this many earlier routes are compared per (host, path) bucket: past it, say nothing
_BUCKET_SCAN = 64

#: (kind, namespace, name), rule index, path index (-1 for an HTTPRoute rule)
Unit = tuple[Source, int, int]


@dataclass(frozen=True)
class Taker:
    """A rule that takes (some of) an unreachable rule's requests."""

    source: Source
    rule_index: int
    match_index: int  # an Ingress path; -1 for an HTTPRoute rule
    host: str | None
    path: str | None
    path_kind: str | None

    def describe(self, of: Source | None = None, names: RuleNames | None = None) -> str:
        """``HTTPRoute ns/name rule 0``, ``Ingress ns/name path /x of host h``; ``rule 0 of this
        HTTPRoute`` when ``of`` is its own source; ``rule 0 ("checkout")`` for a named rule
        (``names``)."""
        return describe_unit(self.source, self.rule_index, self.match_index, self.host, self.path, of,
                             names(self.source, self.rule_index) if names is not None else "")


@dataclass(frozen=True)
class Unreachable:
    """A rule none of whose routes can ever win, and the rules that take its requests (each
    once, in the order they first take one of its routes)."""

    source: Source
    rule_index: int
    match_index: int  # an Ingress path; -1 for an HTTPRoute rule
    host: str | None  # of its first route (for Ingress: its host)
    path: str | None
    path_kind: str | None
    takers: tuple[Taker, ...]

    @property
    def same_object_only(self) -> bool:
        return all(t.source == self.source for t in self.takers)

    def what(self, names: RuleNames | None = None) -> str:
        """``rule 1`` / ``rule 1 ("checkout")`` / ``path /x of host h (rule 0 path 1)`` / ``the
        default backend``."""
        if self.source.kind == _INGRESS:
            return _ingress_path(self.rule_index, self.match_index, self.host, self.path)
        return f"rule {self.rule_index}" + _named(names(self.source, self.rule_index) if names is not None else "")

    def message(self, limit: int = 3, names: RuleNames | None = None) -> str:
        """The sentence of its event (stable text, takers in route order, at most ``limit``);
        ``names``: the names of HTTPRoute rules, shown beside their index."""
        takers = [t.describe(self.source, names) for t in self.takers[:limit]]
        return self._sentence(takers, limit, names)

    def _sentence(self, names: list[str], limit: int, rule_names: RuleNames | None) -> str:
        more = len(self.takers) - limit
        if more > 0:
            names.append(f"{more} more")
        return f"{self.what(rule_names)} is unreachable: every request it matches is taken first by {_join(names)}"


#: (source, rule index) -> the rule's name ("" when it has none)
RuleNames = Callable[[Source, int], str]


def _named(name: str) -> str:
    return f" ({name!r})" if name else ""


def describe_unit(source: Source, rule: int, match: int, host: str | None, path: str | None,
                  of: Source | None = None, name: str = "") -> str:
    if source.kind == _INGRESS:
        what = _ingress_path(rule, match, host, path)
        return what + " of this Ingress" if of == source else f"Ingress {source.namespace}/{source.name} {what}"
    if of == source:
        return f"rule {rule}{_named(name)} of this HTTPRoute"
    return f"{source.kind} {source.namespace}/{source.name} rule {rule}{_named(name)}"


def _ingress_path(rule: int, match: int, host: str | None, path: str | None) -> str:
    if rule < 0:
        return "the default backend"
    where = f"host {host}" if host else "any host"
    return f"path {path if path is not None else '/'} of {where} (rule {rule} path {match})"


def _join(names: Sequence[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


# -- coverage ----------------------------------------------------------------------------------
def _query_match(match: Match) -> Any:
    """``match`` as the contract's predicates read its exact query parameters."""
    return _QueryView(match.query)


@dataclass(frozen=True)
class _QueryView:
    query: tuple[tuple[str, str], ...]
    query_regex: tuple[()] = ()


def ports_cover(w_ports: tuple[int, ...], r_ports: tuple[int, ...]) -> bool:
    """Does a route serving the listener ports ``w_ports`` serve every port of ``r_ports``
    (empty: every listener)?"""
    return not w_ports or (bool(r_ports) and set(r_ports) <= set(w_ports))


def covers(w_host: str | None, w: Match, r_host: str | None, r: Match) -> bool:
    """Does every request the route (``r_host``, ``r``) accepts also satisfy (``w_host``, ``w``)?
    True only when certain. (The routes' ports: :func:`ports_cover`.)"""
    for fld in _OTHER_FIELDS:
        if getattr(w, fld.name) != fld.default:
            return False  # a condition of a kind not known here
    # host: a wildcard's '*' label is an ordinary label to the contract's predicate, so the
    # pattern covers the covered route's host exactly when it matches that host as a name
    if w_host is not None and (r_host is None or not routing.host_matches(w_host, r_host)):
        return False
    # path
    if w.path is not None:
        if w.path_kind not in ("Exact", "Prefix"):
            return False  # a regular expression: never certain
        if r.path is None or r.path_kind not in ("Exact", "Prefix") or not r.path.startswith("/"):
            # any path or a regular expression: only a prefix matching every path covers it
            if not (w.path_kind == "Prefix" and not w.path.rstrip("/")):
                return False
        elif r.path_kind == "Exact":
            if not routing.path_matches(w, r.path):  # type: ignore[arg-type]
                return False
        else:  # a prefix covers a prefix when it matches the prefix itself (segment semantics)
            if w.path_kind != "Prefix" or not routing.path_matches(w, r.path.rstrip("/") or "/"):  # type: ignore[arg-type]
                return False
    # method, headers, query: the covered route's own conditions, as a request, must satisfy them
    if w.method is not None and w.method != r.method:
        return False
    if w.headers and not routing.headers_match(w, routing.Request(headers=r.headers)):  # type: ignore[arg-type]
        return False
    if w.query and not routing.query_matches(_query_match(w), routing.Request(query=urlencode(r.query))):
        return False
    if w.query_regex:
        mine = set(r.query_regex)
        if not all(item in mine for item in w.query_regex):
            return False  # (only the very same pattern on the same name is certain)
    return True


def _answers_500(route: Route) -> bool:
    action = route.behavior.action
    return type(action) is DirectResponse and action.status == 500


def unit_of(route: Route) -> Unit | None:
    source = route.source
    if source is None:
        return None
    return (source, route.rule_index, route.match_index if source.kind == _INGRESS else -1)


def find_unreachable(routes: Iterable[Route]) -> tuple[Unreachable, ...]:
    """The unreachable rules of ``routes`` (in data-plane order), in the order of their first
    route.

    Which earlier routes are compared: the routes are in precedence order (render/precedence.py),
    and within one tier a route that covers another and comes first has the same match host and
    an equivalent path (a wildcard or no host, a shorter prefix, an Exact path, fewer conditions
    all sort after the more specific route). So the index is keyed by (data plane, host, path: no
    path and the prefix ``/`` are one key) and a route is compared with the earlier routes of its own key
    only (at most ``_BUCKET_SCAN`` of them). Across tiers, the routes ordered after the normal
    ones are 500 routes (not reported) and Ingress defaultBackends (no host, any path: their
    key is that of the catch-all routes that cover them). Whatever is compared,
    :func:`covers` decides.
    """
    #: (prefixes, Exact paths): match host -> path -> the first routes of that key, in order
    index: tuple[dict[tuple[str, str | None], dict[str, list[Route]]], ...] = ({}, {})
    #: unit -> {taker unit: (its first covering route's position, that route)}, units covered so far
    covered: dict[Unit, dict[Unit | None, tuple[int, Route]]] = {}
    first_route: dict[Unit, Route] = {}
    #: the routes not covered (their units are looked at only when another route of theirs is)
    uncovered: list[Route] = []
    for pos, r in enumerate(routes):
        match = r.match
        path = match.path
        if path is None:
            table, pkey = 0, ""
        elif path.startswith("/") and ((kind := match.path_kind) == "Prefix" or kind == "Exact"):
            table, pkey = (0, path.rstrip("/")) if kind == "Prefix" else (1, path)
        else:
            uncovered.append(r)  # a regular expression (or a path no request has): never certain
            continue
        # (bucket_key's key, spelled out: this runs once per route of a full render)
        where = (r.plane, r.host)
        by_path = index[table].get(where)
        if by_path is None:
            by_path = index[table][where] = {}
        bucket = by_path.get(pkey)
        if bucket is None:
            by_path[pkey] = [r]
            uncovered.append(r)
            continue
        hit = _first_cover(bucket, r)
        if hit is None:
            uncovered.append(r)
        elif not _answers_500(r):
            _taken(covered, first_route, pos, r, hit)
        if len(bucket) < _BUCKET_SCAN:
            bucket.append(r)  # (past it, the later routes of the key are not compared with it)
    if covered:
        names = {unit[0].name for unit in covered}
        for r in uncovered:
            source = r.source
            if source is not None and source.name in names:
                covered.pop(unit_of(r), None)  # type: ignore[arg-type]
    return _told(covered, first_route)


def _told(covered: dict[Unit, dict[Unit | None, tuple[int, Route]]], first_route: dict[Unit, Route]
          ) -> tuple[Unreachable, ...]:
    out: list[Unreachable] = []
    for unit, takers in covered.items():
        source, rule, match_index = unit
        first = first_route[unit]
        ordered = sorted(takers.items(), key=lambda item: item[1][0])
        out.append(Unreachable(source, rule, match_index, first.host, first.match.path, first.match.path_kind,
                               tuple(Taker(u[0], u[1], u[2], w.host, w.match.path, w.match.path_kind)  # type: ignore[index]
                                     for u, (_, w) in ordered)))
    return tuple(out)


# -- the same search, one key at a time (render/memo.py: only the keys whose routes changed) --------
#: (table: 0 prefixes, 1 Exact paths; data plane; match host; path key)
BucketKey = tuple[int, str, str | None, str]


def bucket_key(r: Route) -> BucketKey | None:
    """The key whose earlier routes :func:`find_unreachable` compares ``r`` with; None for a
    route it never compares (a regular expression, or a path no request has)."""
    match = r.match
    path = match.path
    if path is None:
        return (0, r.plane, r.host, "")
    kind = match.path_kind
    if path.startswith("/") and (kind == "Prefix" or kind == "Exact"):
        return (0, r.plane, r.host, path.rstrip("/")) if kind == "Prefix" else (1, r.plane, r.host, path)
    return None


def bucket_records(routes: Sequence[Route]) -> tuple[list[tuple[Route, Route]], list[Route]]:
    """What :func:`find_unreachable` finds of the routes of one key (in order): ``(covered: each
    route covered, with its first cover, not a 500 route; the routes not covered)``."""
    covered: list[tuple[Route, Route]] = []
    uncovered: list[Route] = []
    bucket: list[Route] = []
    for r in routes:
        if not bucket:
            bucket.append(r)
            uncovered.append(r)
            continue
        hit = _first_cover(bucket, r)
        if hit is None:
            uncovered.append(r)
        elif not _answers_500(r):
            covered.append((r, hit))
        if len(bucket) < _BUCKET_SCAN:
            bucket.append(r)
    return covered, uncovered


def unreachable_of(covered: Iterable[tuple[Route, Route]], open_units: Callable[[Unit], bool],
                   position: Callable[[Route], int]) -> tuple[Unreachable, ...]:
    """:func:`find_unreachable`'s answer from what :func:`bucket_records` found of every key:
    ``covered`` (in any order), ``open_units(unit)``: whether a route of the unit is not
    covered, ``position(route)``: its place in the routes."""
    entries = sorted((position(r), r, w) for r, w in covered if not open_units(unit_of(r)))  # type: ignore[arg-type]
    found: dict[Unit, dict[Unit | None, tuple[int, Route]]] = {}
    first_route: dict[Unit, Route] = {}
    for pos, r, hit in entries:
        _taken(found, first_route, pos, r, hit)
    return _told(found, first_route)


def _taken(covered: dict[Unit, dict[Unit | None, tuple[int, Route]]], first_route: dict[Unit, Route], pos: int,
           r: Route, hit: Route) -> None:
    """``r`` (at ``pos``) is covered by ``hit``: its unit's takers, each once, at the first route
    of the unit it takes."""
    unit = unit_of(r)
    assert unit is not None
    takers = covered.get(unit)
    if takers is None:
        takers = covered[unit] = {}
        first_route[unit] = r
    wunit = unit_of(hit)
    if wunit not in takers:
        takers[wunit] = (pos, hit)


def _first_cover(bucket: list[Route], r: Route) -> Route | None:
    """The earliest route of ``bucket`` (earlier routes of ``r``'s key, in order) of another
    rule that covers ``r`` (None: ``r`` has no source, or none covers it)."""
    source = r.source
    if source is None:
        return None
    rhost, rmatch, rule, rports = r.host, r.match, r.rule_index, r.ports
    index = r.match_index if source.kind == _INGRESS else -1
    for w in bucket:
        if w.source == source and w.rule_index == rule and (index == -1 or w.match_index == index):
            continue  # (a route of the same rule)
        if (not w.ports or ports_cover(w.ports, rports)) and covers(w.host, w.match, rhost, rmatch):
            return w
    return None


# -- what is told -----------------------------------------------------------------------------
#: The Event reason of an unreachable rule (the statuses of HTTPRoutes and Ingresses tell it).
SHADOWED_RULE = "ShadowedRule"


def is_route_conflict(u: Unreachable) -> bool:
    """An Ingress path taken by older Ingresses with the very same host and path: the
    RouteConflict event already says so."""
    return u.source.kind == _INGRESS and all(
        t.source.kind == _INGRESS and t.source != u.source and (t.host, t.path, t.path_kind) == (u.host, u.path, u.path_kind)
        for t in u.takers)
