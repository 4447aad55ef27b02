"""HTTPRoute ``rules[].matches[]`` -> :class:`~titanium_gateway.twp.model.Match` (its host aside).

A match the data plane cannot express exactly (a header RegularExpression, a bad regex, a
malformed field) keeps its expressible part and is *degraded*: its rule answers 500 in the
degraded tier, after every normal route, so it never shadows another rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from titanium_gateway.render import fields as f
from titanium_gateway.render.fields import brief, plain
from titanium_gateway.render.precedence import match_part
from titanium_gateway.render.regex import check_regex
from titanium_gateway.twp.model import Match

#: Gateway API HTTPHeaderName (headers and query parameter names): an RFC 7230 token, 1-256 characters.
HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+\-.^_`|~]{1,256}$")


@dataclass(frozen=True, slots=True)
class MatchOut:
    """What one raw match makes: the match, whether it is degraded, the problems it reports
    and its precedence part (:func:`~titanium_gateway.render.precedence.match_part`)."""

    match: Match
    degraded: bool
    problems: tuple[str, ...]
    ranks: str


#: A match nothing of which is known (not a mapping): it answers 500 only where nothing else matches.
MALFORMED = MatchOut(Match(), True, ("a match is malformed",), match_part(Match()))


def normalize_prefix(value: str) -> str:
    return value.rstrip("/") or "/"


def build_match(raw: Mapping[str, Any]) -> MatchOut:
    problems: list[str] = []
    degraded = False
    path_value: str | None = None
    path_kind: str | None = None
    path = raw.get("path")
    if type(path) is dict and len(path) == 2 and type(path.get("value")) is str and path["value"].startswith("/") and (
            path.get("type") in ("PathPrefix", "Exact")) and f.writable(path["value"]):  # the common shape
        value = path["value"]
        if path["type"] == "PathPrefix":
            path_value, path_kind = normalize_prefix(value), "Prefix"
        else:
            path_value, path_kind = value, "Exact"
        path = None
    else:
        path = f.mapping(path)
    if path is None:
        pass
    elif path or "path" not in raw:
        ptype = f.string(path.get("type")) or "PathPrefix"
        value = path.get("value") if "value" in path else "/"
        if ptype in ("Exact", "PathPrefix"):
            if not isinstance(value, str) or not value.startswith("/"):
                problems.append(f"path {brief(value)} does not start with /")
                degraded = True
            elif not f.writable(value):
                problems.append(f"path {brief(value)} holds a lone UTF-16 surrogate")
                degraded = True
            else:
                path_value = normalize_prefix(value) if ptype == "PathPrefix" else value
                path_kind = "Prefix" if ptype == "PathPrefix" else "Exact"
        elif ptype == "RegularExpression":
            why = check_regex(value)
            if why:
                problems.append(f"path RegularExpression: {why}")
                degraded = True
            else:
                path_value, path_kind = value, "Regex"
        else:
            problems.append(f"path match type {brief(ptype)} is not supported")
            degraded = True
    method: str | None = None
    raw_method = raw.get("method")
    if raw_method is not None:
        if not isinstance(raw_method, str) or not raw_method:
            problems.append("method is malformed")
            degraded = True
        elif not f.writable(raw_method):
            problems.append(f"method {brief(raw_method)} holds a lone UTF-16 surrogate")
            degraded = True
        else:
            method = raw_method.upper()
    headers: dict[str, str] = {}
    if "headers" in raw and not header_matches(raw["headers"], headers, problems):
        degraded = True
    query: dict[str, str] = {}
    query_regex: dict[str, str] = {}
    for q in f.items(raw.get("queryParams")):
        q = f.mapping(q)
        name, value, qtype = f.string(q.get("name")), q.get("value"), f.string(q.get("type")) or "Exact"
        if not name or not isinstance(value, str):
            problems.append("a query parameter match is malformed")
            degraded = True
            continue
        if not HEADER_NAME.match(name):
            problems.append("a query parameter match name is not a name of at most 256 token characters")
            degraded = True
            continue
        if name in query or name in query_regex:
            continue
        if qtype == "Exact":
            if not f.writable(value):
                problems.append(f"query {plain(name)} value {brief(value)} holds a lone UTF-16 surrogate")
                degraded = True
                continue
            query[name] = value
        elif qtype == "RegularExpression":
            why = check_regex(value)
            if why:
                problems.append(f"query {plain(name)} RegularExpression: {why}")
                degraded = True
                continue
            query_regex[name] = value
        else:
            problems.append(f"query match type {plain(qtype)} is not supported")
            degraded = True
    if not raw.keys() <= _MATCH_FIELDS:  # a field of a newer release: ignoring it would widen the match
        for key in raw:
            if key not in _MATCH_FIELDS:
                problems.append(f"match field {plain(key)} is not supported")
                degraded = True
    match = Match(path_value, path_kind, method, tuple(sorted(headers.items())), tuple(sorted(query.items())),
                  tuple(sorted(query_regex.items())))
    return MatchOut(match, degraded, tuple(problems), match_part(match))


def header_matches(items: Any, headers: dict[str, str], problems: list[str]) -> bool:
    """A match's ``headers`` (an HTTPRoute's, a GRPCRoute's: Exact only) into ``headers`` (names
    lower-cased, the first of a name kept); False when one cannot be honoured (said in ``problems``)."""
    ok = True
    for h in f.items(items):
        h = f.mapping(h)
        name, value, htype = f.string(h.get("name")).lower(), h.get("value"), f.string(h.get("type")) or "Exact"
        if not name or not isinstance(value, str):
            problems.append("a header match is malformed")
        elif not HEADER_NAME.match(name):
            problems.append("a header match name is not a header name of at most 256 token characters")
        elif htype != "Exact":
            problems.append(f"header match type {plain(htype)} ({plain(name)}) is not supported")
        elif not f.writable(value):
            problems.append(f"header match {plain(name)} value {brief(value)} holds a lone UTF-16 surrogate")
        else:
            headers.setdefault(name, value)
            continue
        ok = False
    return ok


_MATCH_FIELDS = frozenset({"path", "method", "headers", "queryParams"})
_PATH_FIELDS = frozenset({"type", "value"})
_NAMED_FIELDS = frozenset({"name", "value", "type"})
_ABSENT = object()


def _named_key(items: Any) -> tuple[Any, ...] | None:
    """The content of a headers/queryParams list whose items are mappings of strings (absent
    fields as None: read with ``get``, as :func:`build_match` does); () for none; None for any
    other value (not a list, an item of another shape)."""
    if items is _ABSENT or items is None:
        return ()
    if type(items) is not list:
        return None
    out: list[Any] = []
    for item in items:
        if type(item) is not dict or not item.keys() <= _NAMED_FIELDS:
            return None
        name, value, kind = item.get("name"), item.get("value"), item.get("type")
        if type(name) is not str or type(value) is not str or (kind is not None and type(kind) is not str):
            return None
        out += (name, value, kind)
    return tuple(out)


def match_key(raw: Any) -> tuple[Any, ...] | None:
    """A key of everything :func:`build_match` reads of ``raw``, for the common shapes only
    (every value a string, a mapping of strings or a list of mappings of strings, so equal keys
    make the very same match and problems); None for anything else (built every time)."""
    if type(raw) is not dict:
        return None
    path, method = raw.get("path", _ABSENT), raw.get("method", _ABSENT)
    headers, query = raw.get("headers", _ABSENT), raw.get("queryParams", _ABSENT)
    if len(raw) != (path is not _ABSENT) + (method is not _ABSENT) + (headers is not _ABSENT) + (query is not _ABSENT):
        return None  # another field
    if path is _ABSENT:
        pkey: tuple[Any, ...] | None = None
    elif type(path) is dict and path.keys() <= _PATH_FIELDS:
        ptype, value = path.get("type"), path.get("value")
        if (ptype is not None and type(ptype) is not str) or (value is not None and type(value) is not str):
            return None
        pkey = (ptype, value, "value" in path, len(path) > 0)  # {} matches nothing, {"type": None} is "/"
    else:
        return None
    if method is _ABSENT:
        method = None
    elif method is not None and type(method) is not str:
        return None
    hkey, qkey = _named_key(headers), _named_key(query)
    if hkey is None or qkey is None:
        return None
    return (pkey, method, hkey, qkey)


class Matches:
    """The matches of one render: a common-shape match (:func:`match_key`) is built once for
    every rule that has it (a few paths and headers recur across thousands of routes)."""

    __slots__ = ("_made",)

    def __init__(self) -> None:
        self._made: dict[tuple[Any, ...], MatchOut] = {}

    def of(self, raw: Any) -> MatchOut:
        key = match_key(raw)
        if key is not None:
            hit = self._made.get(key)
            if hit is None:
                hit = self._made[key] = build_match(raw)
            return hit
        if f.is_mapping(raw):
            return build_match(raw)
        return MALFORMED
