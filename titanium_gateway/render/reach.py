"""Unreachable rules: the rules whose every data-plane route is taken first by another rule.

The data plane takes the FIRST route (in ``order``) whose match accepts a request, whatever the
listener (routes are global). A route R is *covered* when an earlier route W accepts every
request R accepts: W's host is R's host, a wildcard covering it, or absent; W's path covers
R's; W's method, header and query conditions are a subset of R's. A rule is *unreachable* when
every one of its routes is covered by a route of another rule: it can never answer a request.

:func:`find_unreachable` walks the routes in order once, with the earlier routes indexed by
match host and path, so each route is compared only with the few routes that could cover it
(the same host, the wildcards above it, no host; the path's ancestors, no path). It is
conservative: it says "covered" only when certain (a regular-expression path or a field it does
not know never covers; a bucket too crowded to search is skipped), so a rule it does not report
may still be unreachable. Host and path coverage are decided by the contract's own matching
predicates (:mod:`titanium_gateway.contract.routing`) applied to the covered route's values.

The unit of a report is a rule: an HTTPRoute rule (all its matches x hosts), an Ingress path (its
rule and path; the defaultBackend is rule -1).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any
from urllib.parse import urlencode

from titanium_gateway.contract import routing
from titanium_gateway.render import fields as f
from titanium_gateway.render.model import DirectResponse, Match, Route, Source

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

    def describe(self, of: Source | None = None) -> str:
        """``HTTPRoute ns/name rule 0``, ``Ingress ns/name path /x of host h``; ``rule 0 of this
        HTTPRoute`` when ``of`` is its own source."""
        return describe_unit(self.source, self.rule_index, self.match_index, self.host, self.path, of)


@dataclass(frozen=True)
class Unreachable:
    """A rule none of whose routes can ever win, and the rules that take its requests (in
    route order of their first covering route, each once)."""

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

    def what(self) -> str:
        """``rule 1`` / ``path /x of host h (rule 0 path 1)`` / ``the default backend``."""
        if self.source.kind == "Ingress":
            return _ingress_path(self.rule_index, self.match_index, self.host, self.path)
        return f"rule {self.rule_index}"

    def message(self, limit: int = 3) -> str:
        """The sentence of its event (stable text, takers in route order, at most ``limit``)."""
        names = [t.describe(self.source) for t in self.takers[:limit]]
        more = len(self.takers) - limit
        if more > 0:
            names.append(f"{more} more")
        return f"{self.what()} is unreachable: every request it matches is taken first by {_join(names)}"


def describe_unit(source: Source, rule: int, match: int, host: str | None, path: str | None,
                  of: Source | None = None) -> str:
    if source.kind == "Ingress":
        what = _ingress_path(rule, match, host, path)
        return what + " of this Ingress" if of == source else f"Ingress {source.namespace}/{source.name} {what}"
    if of == source:
        return f"rule {rule} of this HTTPRoute"
    return f"{source.kind} {source.namespace}/{source.name} rule {rule}"


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


def covers(w_host: str | None, w: Match, r_host: str | None, r: Match) -> bool:
    """Does every request the route (``r_host``, ``r``) accepts also satisfy (``w_host``, ``w``)?
    True only when certain."""
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


def _path_key(match: Match) -> tuple[str | None, str | None] | None:
    """A route's index bucket as a possible coverer (None: it covers nothing)."""
    if match.path is None:
        return (None, None)
    if match.path_kind == "Exact":
        return ("Exact", match.path)
    if match.path_kind == "Prefix":
        return ("Prefix", match.path.rstrip("/") or "/")
    return None


def _candidate_paths(match: Match) -> list[tuple[str | None, str | None]]:
    """The buckets of the routes whose path may cover ``match``'s (verified by :func:`covers`)."""
    out: list[tuple[str | None, str | None]] = [(None, None), ("Prefix", "/")]
    path, kind = match.path, match.path_kind
    if path is None or kind not in ("Exact", "Prefix") or not path.startswith("/"):
        return out
    if kind == "Exact":
        out.append(("Exact", path))
    stripped = path.rstrip("/")
    for i in range(1, len(stripped)):
        if stripped[i] == "/":
            out.append(("Prefix", stripped[:i]))
    if stripped:
        out.append(("Prefix", stripped))
    return out


def _candidate_hosts(host: str | None) -> list[str | None]:
    """The match hosts that may cover ``host`` (verified by :func:`covers`)."""
    if host is None:
        return [None]
    out: list[str | None] = [None, host]
    labels = host.split(".")
    for i in range(1, len(labels)):
        wildcard = "*." + ".".join(labels[i:])
        if wildcard != host:
            out.append(wildcard)
    return out


def _answers_500(route: Route) -> bool:
    action = route.behavior.action
    return type(action) is DirectResponse and action.status == 500


def unit_of(route: Route) -> Unit | None:
    source = route.source
    if source is None:
        return None
    return (source, route.rule_index, route.match_index if source.kind == "Ingress" else -1)


def find_unreachable(routes: Iterable[Route]) -> tuple[Unreachable, ...]:
    """The unreachable rules of ``routes`` (in data-plane order), in the order of their first
    route."""
    index: dict[str | None, dict[tuple[str | None, str | None], list[tuple[int, Route, Unit | None]]]] = {}
    #: unit -> [its first route, all covered so far, {taker unit: (first covering position, route)}]
    units: dict[Unit, list[Any]] = {}
    for pos, r in enumerate(routes):
        unit = unit_of(r)
        if unit is not None and not _answers_500(r):  # (a rule not honoured is reported already)
            state = units.get(unit)
            if state is None:
                state = units[unit] = [r, True, {}]
            if state[1]:
                hit = _first_cover(index, r, unit)
                if hit is None:
                    state[1] = False
                else:
                    wpos, w, wunit = hit
                    takers = state[2]
                    if wunit not in takers or takers[wunit][0] > wpos:
                        takers[wunit] = (wpos, w)
        key = _path_key(r.match)
        if key is not None and (key[1] is None or key[1].startswith("/")):  # (a relative path matches nothing)
            index.setdefault(r.host, {}).setdefault(key, []).append((pos, r, unit))
    out: list[Unreachable] = []
    for (source, rule, match), (first, covered, takers) in units.items():
        if not covered or not takers:
            continue
        ordered = sorted(takers.items(), key=lambda item: item[1][0])
        out.append(Unreachable(source, rule, match, first.host, first.match.path, first.match.path_kind,
                               tuple(Taker(u[0], u[1], u[2], w.host, w.match.path, w.match.path_kind)
                                     for u, (_, w) in ordered)))
    return tuple(out)


def _first_cover(index: dict[Any, dict[Any, list[tuple[int, Route, Unit | None]]]], r: Route,
                 unit: Unit) -> tuple[int, Route, Unit | None] | None:
    """The earliest indexed route of another unit that covers ``r``."""
    best: tuple[int, Route, Unit | None] | None = None
    paths = None
    for host in _candidate_hosts(r.host):
        by_path = index.get(host)
        if by_path is None:
            continue
        if paths is None:
            paths = _candidate_paths(r.match)
        for pkey in paths:
            bucket = by_path.get(pkey)
            if not bucket:
                continue
            for entry in islice(bucket, _BUCKET_SCAN):
                if best is not None and entry[0] >= best[0]:
                    break  # (buckets are in route order)
                if entry[2] == unit:
                    continue
                w = entry[1]
                if covers(w.host, w.match, r.host, r.match):
                    best = entry
                    break
    return best


# -- where users see them ----------------------------------------------------------------------
#: The Event reason of an unreachable rule.
SHADOWED_RULE = "ShadowedRule"
#: At most this many unreachable rules are named in one Accepted message (all have events).
_NOTE_RULES = 3


def is_route_conflict(u: Unreachable) -> bool:
    """An Ingress path taken by older Ingresses with the very same host and path: the
    RouteConflict event already says so."""
    return u.source.kind == "Ingress" and all(
        t.source.kind == "Ingress" and t.source != u.source and (t.host, t.path, t.path_kind) == (u.host, u.path, u.path_kind)
        for t in u.takers)


def report(ctx: Any, unreachable: Sequence[Unreachable]) -> tuple[Unreachable, ...]:
    """A Warning Event ``ShadowedRule`` per unreachable rule (on its HTTPRoute or Ingress) and,
    for an HTTPRoute, a sentence in the message of each parent's ``Accepted: True`` condition
    (the route stays Accepted: it is valid). Returns the rules reported (an Ingress path that is
    a RouteConflict is not reported twice)."""
    from titanium_gateway.render.httproute.status import API_VERSION, with_accepted_note
    from titanium_gateway.render.ingress import INGRESS_API_VERSION
    from titanium_gateway.render.result import EventRecord

    snapshot = ctx.snapshot
    reported: list[Unreachable] = []
    notes: dict[Source, list[Unreachable]] = {}
    for u in unreachable:
        if is_route_conflict(u):
            continue
        src = u.source
        objects, api_version = ((snapshot.httproutes, API_VERSION) if src.kind == "HTTPRoute"
                                else (snapshot.ingresses, INGRESS_API_VERSION))
        uid = f.string(f.metadata(objects.get(f"{src.namespace}/{src.name}")).get("uid"))
        ctx.add_event(EventRecord(kind=src.kind, namespace=src.namespace, name=src.name, type="Warning",
                                  reason=SHADOWED_RULE, message=u.message(), uid=uid, api_version=api_version))
        reported.append(u)
        if src.kind == "HTTPRoute":
            notes.setdefault(src, []).append(u)
    for src, rules in notes.items():
        rules.sort(key=lambda u: u.rule_index)
        key = (src.kind, src.namespace, src.name)
        status = ctx.statuses.get(key)
        if status is None:
            continue
        sentences = [u.message() for u in rules[:_NOTE_RULES]]
        if len(rules) > _NOTE_RULES:
            sentences.append(f"{len(rules) - _NOTE_RULES} more rules are unreachable ({SHADOWED_RULE} events)")
        ctx.statuses[key] = with_accepted_note(status, "; ".join(sentences))
    return tuple(reported)
