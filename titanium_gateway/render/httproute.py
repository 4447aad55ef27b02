"""HTTPRoute -> data-plane routes + per-parent status.

Attachment (per parentRef to one of our Gateways): listeners selected by ``sectionName`` and
``port`` (none -> Accepted False NoMatchingParent); of those, the usable listeners that allow
the route's namespace and kind (none -> NotAllowedByListeners); of those, the listeners whose
hostname intersects the route's hostnames (none -> NoMatchingListenerHostname). Routes are
global in the data plane, so the emitted hosts are the union of the intersections over every
attached listener.

Each rule x match x host gives one data-plane route ``httproute/<ns>/<name>/r<i>m<j>`` (plus
``/<host>`` when the match emits more than one route). A rule that cannot be honoured answers
``directResponse 500`` for its own matches only; a match that cannot be expressed exactly
(header RegularExpression, a bad regex) is emitted with its expressible part in the degraded
tier, after every normal route, so it never shadows another rule.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from titanium_gateway.render import backends as be
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.conditions import existing_conditions, generation
from titanium_gateway.render.emit import match_body, plain_name, route_tail, transforms_block
from titanium_gateway.render.gateway import GatewayInfo, ListenerInfo, intersect_hostname, valid_hostname
from titanium_gateway.render.memo import Recording, RenderCache, resource_version
from titanium_gateway.render.precedence import (
    TIER_DEGRADED,
    TIER_NORMAL,
    creation_timestamp,
    key_from_parts,
    match_part,
    owner_part,
)
from titanium_gateway.render.referencegrant import GATEWAY_GROUP
from titanium_gateway.render.result import ObjectStatus

API_VERSION = "gateway.networking.k8s.io/v1"
MAX_REGEX_LENGTH = 1024
INVALID_BACKEND_CLUSTER = "invalid-backend"
#: Placeholder transform for ReplacePrefixMatch, replaced per match by PathRegexReplace.
_PREFIX_REWRITE = "_ReplacePrefixMatch"

_DURATION = re.compile(r"^(?:[0-9]{1,5}(?:h|ms|m|s)){1,4}$")
_DURATION_PART = re.compile(r"([0-9]{1,5})(h|ms|m|s)")
_UNIT_MS = {"h": 3_600_000, "m": 60_000, "s": 1000, "ms": 1}
# A group that contains a quantifier and is itself quantified: catastrophic backtracking.
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[+*}](?:\?)?\)\s*(?:[+*]|\{[0-9,]+\})")
_BACKREFERENCE = re.compile(r"\\[1-9]|\\k<")
# Python-only syntax the data plane's .NET engine would reject (a config it cannot load).
_PYTHON_ONLY = re.compile(r"\(\?P|\(\?[aLu]+[):]|\\N\{")
#: Metacharacters of .NET/ECMAScript regexes outside a character class (nothing else is
#: escaped: ``\-`` or ``\#`` are errors in ECMAScript's unicode mode).
_REGEX_SPECIAL = set("\\.^$|?*+()[]{}")


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


_EMPTY: Mapping[str, Any] = {}


def _dict(value: Any) -> Mapping[str, Any]:
    if type(value) is dict:  # the common case, without the slower ABC check
        return value
    return value if isinstance(value, Mapping) else _EMPTY


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# -- small validated conversions ------------------------------------------------------------
_BRIEF_LIMIT = 64
MAX_PROBLEMS_LISTED = 5
MAX_WEIGHT = 1_000_000


def brief(value: Any) -> str:
    """A short, safe rendering of an input value for messages (never a deep repr)."""
    if isinstance(value, str):
        text = value if len(value) <= _BRIEF_LIMIT else value[:_BRIEF_LIMIT] + "..."
        return repr(text)
    if value is None or isinstance(value, (bool, int, float)):
        text = repr(value)
        return text if len(text) <= _BRIEF_LIMIT else text[:_BRIEF_LIMIT] + "..."
    return f"a {type(value).__name__}"


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: Gateway API HTTPHeaderName (headers and query parameter names): an RFC 7230 token, 1-256 characters.
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+\-.^_`|~]{1,256}$")


def has_control(text: str) -> bool:
    """CR, LF, NUL and other control characters: never forwarded in a header or a path."""
    if text.isascii() and text.isprintable():  # the common case, without the regex
        return False
    return _CONTROL.search(text) is not None


def plain(value: Any) -> str:
    """A short identifier-like string as is (names, type names); anything else via :func:`brief`."""
    if isinstance(value, str) and len(value) <= _BRIEF_LIMIT and value.isascii() and value.isprintable():
        return value
    return brief(value)


def _listed(named: int) -> int:
    """How many problems a condition lists: every one a 500 body names, within the API's
    32768-character message limit (at most 90 problems of at most 303 characters)."""
    return min(90, max(MAX_PROBLEMS_LISTED, named))


def summarize(problems: list[str], limit: int = MAX_PROBLEMS_LISTED) -> str:
    """The first ``limit`` distinct problems joined, plus how many more (bounded length)."""
    unique = list(dict.fromkeys(problems))
    text = "; ".join(p if len(p) <= 300 else p[:300] + "..." for p in unique[:limit])
    if len(unique) > limit:
        text += f"; and {len(unique) - limit} more"
    return text

def parse_duration_ms(text: Any) -> int | None:
    """GEP-2257 duration (``10s``, ``500ms``, ``1h30m``) -> milliseconds; None when invalid."""
    if not isinstance(text, str) or not _DURATION.match(text):
        return None
    units = [u for _, u in _DURATION_PART.findall(text)]
    if len(set(units)) != len(units):
        return None
    return sum(int(n) * _UNIT_MS[u] for n, u in _DURATION_PART.findall(text))


def timespan(ms: int) -> str:
    """Milliseconds -> TimeSpan ``[d.]hh:mm:ss[.fff]``."""
    seconds, millis = divmod(ms, 1000)
    minutes, sec = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    days, hour = divmod(hours, 24)
    text = f"{hour:02d}:{minute:02d}:{sec:02d}"
    if days:
        text = f"{days}.{text}"
    if millis:
        text += f".{millis:03d}"
    return text


def _quantifier_at(pattern: str, i: int) -> bool:
    """Is there a repeating quantifier (``*``, ``+``, ``{n}``, ``{n,}``, ``{n,m}``) at ``i``?"""
    if i >= len(pattern):
        return False
    if pattern[i] in "*+":
        return True
    if pattern[i] == "{":
        m = re.match(r"\{([0-9]+)(,([0-9]*))?\}", pattern[i:])
        if m:
            low, comma, high = int(m.group(1)), m.group(2), m.group(3)
            return bool(comma) or low > 1 or (bool(high) and int(high) > 1)
    return False


MAX_UNBOUNDED_QUANTIFIERS = 3


def _after_class(pattern: str, i: int) -> int:
    """The index just past the character class that opens at ``pattern[i] == "["`` (a leading
    ``^`` and a leading ``]`` belong to the class; escapes are skipped)."""
    n = len(pattern)
    j = i + 1
    if j < n and pattern[j] == "^":
        j += 1
    if j < n and pattern[j] == "]":
        j += 1
    while j < n and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return j + 1


def unbounded_quantifiers(pattern: str) -> int:
    """How many ``*``, ``+`` and ``{n,}`` the pattern has outside character classes.

    k unbounded quantifiers in sequence over overlapping sets (``.*a.*a.*a``) backtrack in
    O(n^k) on a non-matching path, so more than a few are refused."""
    count, i, n = 0, 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _after_class(pattern, i)
            continue
        lazy_or_repeat = c in "*+" and i > 0 and pattern[i - 1] in "*+?"
        if (c in "*+" and not lazy_or_repeat) or (c == "{" and re.match(r"\{[0-9]+,\}", pattern[i:])):
            count += 1
        i += 1
    return count


def backtracking_risk(pattern: str) -> bool:
    """True when a repeated group contains a quantifier or an alternation.

    ``(a+)+``, ``(a|aa)*``, ``(\\w+\\s?)*``, ``(.*a){20}`` all backtrack exponentially (or
    with a high polynomial) in a backtracking engine such as .NET's. Conservative: some safe
    patterns (``(/[a-z]+)*``) are rejected too.
    """
    stack: list[bool] = [False]  # per open group: does its body hold a quantifier or "|"?
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _after_class(pattern, i)
            continue
        if c == "(":
            stack.append(False)
            i += 1
            if i < n and pattern[i] == "?":  # (?:, (?=, (?!, (?<=, (?<!, (?i) ...
                i += 1
                if i < n and pattern[i] == "<" and i + 1 < n and pattern[i + 1] in "=!":
                    i += 1
                i += 1
            continue
        if c == ")":
            risky = stack.pop() if len(stack) > 1 else False
            repeated = _quantifier_at(pattern, i + 1)
            if risky and repeated:
                return True
            stack[-1] = stack[-1] or risky or repeated
            i += 1
            continue
        if c == "|" or c in "*+?" or (c == "{" and re.match(r"\{[0-9]", pattern[i:])):
            stack[-1] = True
        i += 1
    return False


def check_regex(pattern: Any) -> str:
    """'' when the regex is acceptable, else why not (length, syntax, unsafe constructs)."""
    if not isinstance(pattern, str) or not pattern:
        return "the regular expression is empty"
    if len(pattern) > MAX_REGEX_LENGTH:
        return f"the regular expression is longer than {MAX_REGEX_LENGTH} characters"
    if _NESTED_QUANTIFIER.search(pattern) or backtracking_risk(pattern):
        return ("the regular expression repeats a group that holds a quantifier or an alternation "
                "(catastrophic backtracking)")
    if _BACKREFERENCE.search(pattern):
        return "the regular expression uses a backreference"
    if unbounded_quantifiers(pattern) > MAX_UNBOUNDED_QUANTIFIERS:
        return (f"the regular expression has more than {MAX_UNBOUNDED_QUANTIFIERS} unbounded quantifiers "
                "(polynomial backtracking)")
    if _PYTHON_ONLY.search(pattern):
        return "the regular expression uses syntax the data plane does not support"
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        return f"the regular expression does not compile: {exc}"
    return ""


def regex_escape(text: str) -> str:
    """Escape for .NET/ECMAScript regexes (the data plane's dialect)."""
    return "".join("\\" + c if c in _REGEX_SPECIAL else c for c in text)


def normalize_prefix(value: str) -> str:
    return value.rstrip("/") or "/"


def prefix_rewrite_transforms(prefix: str, replacement: str) -> list[dict[str, Any]]:
    """PathRegexReplace transforms for URLRewrite ReplacePrefixMatch (contract Decisions).

    ``/foo`` + ``/bar``: ``/foo/x`` -> ``/bar/x``, ``/foo`` -> ``/bar``; ``/foo`` + ``/``:
    ``/foo/bar`` -> ``/bar``, ``/foo`` -> ``/`` (never ``//bar``).
    """
    p = normalize_prefix(prefix)
    replacement = replacement or "/"  # "" removes the prefix, as "/" does (/foo/bar -> /bar)

    def t(pattern: str, repl: str) -> dict[str, Any]:
        return {"kind": "PathRegexReplace", "parameters": {"pattern": pattern, "replacement": repl}}

    if p == "/":
        if replacement.endswith("/"):
            return [t("^/", replacement)]
        return [t("^(?=/.)", replacement), t("^/$", replacement)]
    esc = regex_escape(p)
    if replacement.endswith("/"):
        return [t(f"^{esc}/?", replacement)]
    return [t(f"^{esc}", replacement)]


# -- parent refs ----------------------------------------------------------------------------
def parent_ref_echo(ref: Mapping[str, Any]) -> dict[str, Any]:
    """The parentRef as given, with group/kind defaults filled (as conformance expects)."""
    out: dict[str, Any] = {
        "group": ref["group"] if isinstance(ref.get("group"), str) else GATEWAY_GROUP,
        "kind": _s(ref.get("kind")) or "Gateway",
    }
    if _s(ref.get("namespace")):
        out["namespace"] = ref["namespace"]
    out["name"] = _s(ref.get("name"))
    if _s(ref.get("sectionName")):
        out["sectionName"] = ref["sectionName"]
    if isinstance(ref.get("port"), int) and not isinstance(ref.get("port"), bool):
        out["port"] = ref["port"]
    return out


def _identity(ctx: RenderContext, ref: Mapping[str, Any], route_ns: str) -> tuple[Any, ...]:
    """:func:`_ref_identity` once per render for each parentRef object and route namespace: the
    compacted informer caches store equal parentRefs once (in specs, and in the statuses we
    wrote), so thousands of routes hold the same one (kept alive in the memo's value)."""
    known = ctx.parent_identities.get((id(ref), route_ns))
    if known is not None and known[0] is ref:
        return known[1]
    ident = _ref_identity(ref, route_ns)
    ctx.parent_identities[(id(ref), route_ns)] = (ref, ident)
    return ident


def _ref_identity(ref: Mapping[str, Any], route_ns: str) -> tuple[Any, ...]:
    group = ref.get("group")
    return (
        group if isinstance(group, str) else GATEWAY_GROUP,
        _s(ref.get("kind")) or "Gateway",
        _s(ref.get("namespace")) or route_ns,
        _s(ref.get("name")),
        _s(ref.get("sectionName")),
        ref.get("port") if isinstance(ref.get("port"), int) else None,
    )


# -- rules ----------------------------------------------------------------------------------
class MatchOut:
    """A data-plane match made of a rule's match. ``ranks`` (its precedence part) and ``body``
    (its text without a host) are filled in when it is shared by the rules of many routes (see
    :func:`_match_key`), so they are worked out once; it is read-only then."""

    __slots__ = ("match", "degraded", "ranks", "body")

    def __init__(self, match: dict[str, Any], degraded: bool = False) -> None:
        self.match = match
        self.degraded = degraded
        self.ranks: str | None = None
        self.body: str | None = None


_MATCH_FIELDS = frozenset({"path", "method", "headers", "queryParams"})
_PATH_FIELDS = frozenset({"type", "value"})
_NAMED_FIELDS = frozenset({"name", "value", "type"})
_ABSENT = object()


def _named_key(items: Any) -> tuple[tuple[Any, ...], ...] | None:
    """The content of a headers/queryParams list whose items are mappings of strings (absent
    fields as None: read with ``get``, as :func:`_build_match` does); None otherwise."""
    out = []
    for item in items:
        if type(item) is not dict or not item.keys() <= _NAMED_FIELDS:
            return None
        name, value, kind = item.get("name"), item.get("value"), item.get("type")
        if type(name) is not str or type(value) is not str or (kind is not None and type(kind) is not str):
            return None
        out.append((name, value, kind))
    return tuple(out)


def _match_key(raw: Any) -> tuple[Any, ...] | None:
    """A key of everything :func:`_build_match` reads of ``raw``, for the common shapes only
    (every value a string, a mapping of strings or a list of mappings of strings, so equal keys
    make the very same match and problems); None for anything else (built every time)."""
    if type(raw) is not dict or not raw.keys() <= _MATCH_FIELDS:
        return None
    path = raw.get("path", _ABSENT)
    if path is _ABSENT:
        pkey: tuple[Any, ...] | None = None
    elif type(path) is dict and path.keys() <= _PATH_FIELDS:
        ptype, value = path.get("type"), path.get("value")
        if (ptype is not None and type(ptype) is not str) or (value is not None and type(value) is not str):
            return None
        pkey = (ptype, value, "value" in path, len(path) > 0)  # {} matches nothing, {"type": None} is "/"
    else:
        return None
    method = raw.get("method")
    if method is not None and type(method) is not str:
        return None
    headers, query = raw.get("headers"), raw.get("queryParams")
    hkey = _named_key(headers) if type(headers) is list else None
    qkey = _named_key(query) if type(query) is list else None
    if (headers is not None and hkey is None) or (query is not None and qkey is None):
        return None  # not a list, or an item of another shape
    return (pkey, method, hkey, qkey)


class RuleOut:
    """What :func:`_rule` makes of one rule (a plain slotted class: one per rule at 10k+)."""

    __slots__ = ("matches", "action", "extras", "unsupported", "refs", "redirect", "first_ref", "clusters",
                 "prefix_rewrite")

    def __init__(self) -> None:
        self.matches: list[MatchOut] = []
        self.action: dict[str, Any] = {}
        self.extras: dict[str, Any] = {}
        self.unsupported: list[str] = []
        self.refs: list[tuple[str, str]] = []
        self.redirect: dict[str, Any] | None = None  # redirect needing a host per route hostname
        self.first_ref = ""  # the backend problem the rule's 500 body names
        self.clusters: list[dict[str, Any]] = []
        self.prefix_rewrite = False  # a ReplacePrefixMatch placeholder is in extras["transforms"]


def _build_match(raw: Mapping[str, Any], out: RuleOut) -> MatchOut:
    match: dict[str, Any] = {}
    degraded = False
    path = raw.get("path")
    if type(path) is dict and len(path) == 2 and type(path.get("value")) is str and path["value"].startswith("/") and (
            path.get("type") in ("PathPrefix", "Exact")):  # the common shape, the same as below
        value = path["value"]
        if path["type"] == "PathPrefix":
            match["path"], match["pathKind"] = normalize_prefix(value), "Prefix"
        else:
            match["path"], match["pathKind"] = value, "Exact"
        if len(raw) == 1:
            return MatchOut(match)
        path = None
    else:
        path = _dict(path)
    if path is None:
        pass
    elif path or "path" not in raw:
        ptype = _s(path.get("type")) or "PathPrefix"
        value = path.get("value") if "value" in path else "/"
        if ptype in ("Exact", "PathPrefix"):
            if not isinstance(value, str) or not value.startswith("/"):
                out.unsupported.append(f"path {brief(value)} does not start with /")
                degraded = True
            else:
                match["path"] = normalize_prefix(value) if ptype == "PathPrefix" else value
                match["pathKind"] = "Prefix" if ptype == "PathPrefix" else "Exact"
        elif ptype == "RegularExpression":
            why = check_regex(value)
            if why:
                out.unsupported.append(f"path RegularExpression: {why}")
                degraded = True
            else:
                match["path"] = value
                match["pathKind"] = "Regex"
        else:
            out.unsupported.append(f"path match type {brief(ptype)} is not supported")
            degraded = True
    method = raw.get("method")
    if method is not None:
        if isinstance(method, str) and method:
            match["method"] = method.upper()
        else:
            out.unsupported.append("method is malformed")
            degraded = True
    headers: dict[str, str] = {}
    for h in _list(raw.get("headers")):
        h = _dict(h)
        name, value, htype = _s(h.get("name")).lower(), h.get("value"), _s(h.get("type")) or "Exact"
        if not name or not isinstance(value, str):
            out.unsupported.append("a header match is malformed")
            degraded = True
            continue
        if not _HEADER_NAME.match(name):
            out.unsupported.append("a header match name is not a header name of at most 256 token characters")
            degraded = True
            continue
        if htype != "Exact":
            out.unsupported.append(f"header match type {plain(htype)} ({plain(name)}) is not supported")
            degraded = True
            continue
        headers.setdefault(name, value)
    if headers:
        match["headers"] = dict(sorted(headers.items()))
    query: dict[str, str] = {}
    query_regex: dict[str, str] = {}
    for q in _list(raw.get("queryParams")):
        q = _dict(q)
        name, value, qtype = _s(q.get("name")), q.get("value"), _s(q.get("type")) or "Exact"
        if not name or not isinstance(value, str):
            out.unsupported.append("a query parameter match is malformed")
            degraded = True
            continue
        if not _HEADER_NAME.match(name):
            out.unsupported.append("a query parameter match name is not a name of at most 256 token characters")
            degraded = True
            continue
        if name in query or name in query_regex:
            continue
        if qtype == "Exact":
            query[name] = value
        elif qtype == "RegularExpression":
            why = check_regex(value)
            if why:
                out.unsupported.append(f"query {plain(name)} RegularExpression: {why}")
                degraded = True
                continue
            query_regex[name] = value
        else:
            out.unsupported.append(f"query match type {plain(qtype)} is not supported")
            degraded = True
    if query:
        match["query"] = dict(sorted(query.items()))
    if query_regex:
        match["queryRegex"] = dict(sorted(query_regex.items()))
    return MatchOut(match, degraded)


#: (prefix, verb) -> the transform kind of a header modifier's entries (one string each)
_HEADER_KINDS = {(prefix, verb): f"{prefix}Header{kind}" for prefix in ("Request", "Response")
                 for verb, kind in (("set", "Set"), ("add", "Append"), ("remove", "Remove"))}


def _header_transforms(prefix: str, spec: Mapping[str, Any], out: RuleOut | _Problems) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = []
    for verb in ("set", "add"):
        kind = _HEADER_KINDS[(prefix, verb)]
        for item in _list(spec.get(verb)):
            item = _dict(item)
            name, value = _s(item.get("name")), item.get("value")
            if not name or not isinstance(value, str):
                out.unsupported.append(f"{prefix}HeaderModifier.{verb} entry is malformed")
                continue
            if has_control(name) or has_control(value):
                out.unsupported.append(f"{prefix}HeaderModifier.{verb} header {brief(name)} has a control character "
                                       "(CR, LF, NUL...)")
                continue
            result.append({"kind": kind, "parameters": {"name": name, "value": value}})
    remove = _HEADER_KINDS[(prefix, "remove")]
    for name in _list(spec.get("remove")):
        if not isinstance(name, str) or not name or has_control(name):
            out.unsupported.append(f"{prefix}HeaderModifier.remove entry is malformed")
            continue
        result.append({"kind": remove, "parameters": {"name": name}})
    return result


_HEADER_FILTERS = {"RequestHeaderModifier": ("Request", "requestHeaderModifier"),
                   "ResponseHeaderModifier": ("Response", "responseHeaderModifier")}


def _header_filters(ctx: RenderContext, filters: list[Any]) -> tuple[list[dict[str, Any]], Sequence[str]] | None:
    """``(transforms, problems)`` of a rule's filters when they are header modifiers only (else
    None), once per render for each filters list object (kept alive in the value): the
    informer caches store equal values once, so the rules of a route, or many routes, often
    hold the very same list."""
    hit = ctx.rule_filters.get(id(filters))
    if hit is not None and hit[0] is filters:
        return hit[1]
    got: tuple[list[dict[str, Any]], Sequence[str]] | None = None
    problems = _Problems()
    transforms: list[dict[str, Any]] = []
    for f in filters:
        kind = f.get("type") if type(f) is dict else None
        header = _HEADER_FILTERS.get(kind) if type(kind) is str else None
        if header is None:
            break  # another filter: the rule's filters are read one by one (_filters)
        transforms += _header_transforms(header[0], _dict(f.get(header[1])), problems)
    else:
        got = (transforms, problems.unsupported or ())
    ctx.rule_filters[id(filters)] = (filters, got)
    return got


class _Problems:
    """Where :func:`_header_transforms` reports (a RuleOut's ``unsupported`` alone)."""

    __slots__ = ("unsupported",)

    def __init__(self) -> None:
        self.unsupported: list[str] = []


def _resolve_ref(
    ctx: RenderContext, ref: Mapping[str, Any], route_ns: str, settings: be.ClusterSettings
) -> tuple[dict[str, Any] | None, str, str]:
    """A Service backendRef -> (cluster, reason, message), once per render for each distinct
    reference (a Service is usually the backend of many routes)."""
    try:
        port = ref.get("port")
        name = ref.get("name")
        if type(port) is int and type(name) is str and ref.keys() <= _PLAIN_REF_KEYS:  # the common shape
            key: tuple[Any, ...] = (route_ns, name, port, None if settings is be.DEFAULT_SETTINGS else settings)
        else:  # type(port): True == 1, but it is not a port
            key = (route_ns, ref.get("group"), ref.get("kind"), name, ref.get("namespace"), port, type(port),
                   None if settings is be.DEFAULT_SETTINGS else settings, "")
        hit = ctx.resolved_refs.get(key)
    except TypeError:  # a malformed (unhashable) field: resolve it every time
        return _resolve_ref_once(ctx, ref, route_ns, settings)
    if hit is None:
        hit = ctx.resolved_refs[key] = _resolve_ref_once(ctx, ref, route_ns, settings)
    return hit


#: A backendRef with these fields only names a Service in the route's namespace (a key of 4).
_PLAIN_REF_KEYS = frozenset({"name", "port", "weight"})


def _resolve_ref_once(
    ctx: RenderContext, ref: Mapping[str, Any], route_ns: str, settings: be.ClusterSettings
) -> tuple[dict[str, Any] | None, str, str]:
    group = ref.get("group") if isinstance(ref.get("group"), str) else ""
    kind = _s(ref.get("kind")) or "Service"
    name = _s(ref.get("name"))
    ns = _s(ref.get("namespace")) or route_ns
    if group != "" or kind != "Service":
        return None, "InvalidKind", f"backendRef {group}/{kind} {name} is not a core Service"
    if not ctx.grants.allows(
        from_group=GATEWAY_GROUP, from_kind="HTTPRoute", from_namespace=route_ns,
        to_group="", to_kind="Service", to_namespace=ns, to_name=name,
    ):
        return None, "RefNotPermitted", f"Service {ns}/{name} is in another namespace and no ReferenceGrant allows it"
    port = ref.get("port")
    if isinstance(port, bool) or not isinstance(port, int):
        return None, "BackendNotFound", f"backendRef to Service {ns}/{name} has no port"
    res = be.resolve_backend(ctx.backends, ns, name, port, settings)
    if not res.ok:
        return None, res.reason, res.message
    return res.cluster, "", ""


#: The transforms of a rule without filters (never modified: a rule's transforms are read-only).
_NO_TRANSFORMS: list[dict[str, Any]] = []


def _rule(ctx: RenderContext, rule: Mapping[str, Any], route_ns: str, one_port: tuple[int, str] | None) -> RuleOut:
    out = RuleOut()
    raw_matches = rule.get("matches")
    if raw_matches is None or raw_matches == []:
        raw_matches = [{}]
    elif not isinstance(raw_matches, list):
        out.unsupported.append("matches is malformed")
        raw_matches = [None]
    listed = ctx.match_lists.get(id(raw_matches))
    if listed is not None and listed[0] is raw_matches:  # the very list object: the same matches
        out.matches += listed[1]
        out.unsupported += listed[2]
    else:
        _rule_matches(ctx, raw_matches, out)
    settings = _timeouts(rule, out) if "timeouts" in rule else be.DEFAULT_SETTINGS
    # filters
    redirect: dict[str, Any] | None = None
    raw_filters = rule.get("filters")
    headers_only = _header_filters(ctx, raw_filters) if type(raw_filters) is list and raw_filters else None
    if headers_only is not None:  # only header modifiers: worked out once per list
        transforms = headers_only[0]  # shared, read-only: nothing is added to it below
        out.unsupported += headers_only[1]
    elif raw_filters:
        transforms, redirect = _filters(ctx, _list(raw_filters), route_ns, one_port, out)
    else:
        transforms = _NO_TRANSFORMS
    if transforms:
        out.extras["transforms"] = transforms
    # backends
    refs = _list(rule.get("backendRefs"))
    if redirect is not None:
        if redirect.get("host"):
            out.action = {"redirect": redirect}
        else:
            out.redirect = redirect
        return out
    got = _backends_of(ctx, refs, route_ns, settings)
    out.unsupported += got.unsupported
    out.refs += got.refs
    if got.first_ref:
        out.first_ref = got.first_ref
    out.clusters += got.clusters  # after a mirror's
    out.action = got.action
    return out


def _timeouts(rule: Mapping[str, Any], out: RuleOut) -> be.ClusterSettings:
    """A rule's ``timeouts``: the request limit into ``out.extras``, problems into ``out``; the
    backend request timeout as the settings of its clusters."""
    timeouts = _dict(rule.get("timeouts"))
    backend_ms: int | None = None
    request_ms: int | None = None
    if "request" in timeouts:
        request_ms = parse_duration_ms(timeouts.get("request"))
        if request_ms is None:
            out.unsupported.append(f"timeouts.request {brief(timeouts.get('request'))} is not a valid duration")
    if "backendRequest" in timeouts:
        backend_ms = parse_duration_ms(timeouts.get("backendRequest"))
        if backend_ms is None:
            out.unsupported.append(f"timeouts.backendRequest {brief(timeouts.get('backendRequest'))} is not a valid duration")
    if request_ms and backend_ms and backend_ms > request_ms:
        out.unsupported.append("timeouts.backendRequest is longer than timeouts.request")
    if request_ms:
        out.extras["limits"] = {"requestTimeout": timespan(request_ms)}
    return be.ClusterSettings(request_timeout=timespan(backend_ms)) if backend_ms else be.DEFAULT_SETTINGS


def _filters(ctx: RenderContext, filters: list[Any], route_ns: str, one_port: tuple[int, str] | None,
             out: RuleOut) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """A rule's ``filters`` (other than header modifiers only, see :func:`_header_filters`):
    ``(transforms, redirect or None)``; a mirror and problems into ``out``."""
    transforms: list[dict[str, Any]] = []
    redirect: dict[str, Any] | None = None
    mirrors: list[Mapping[str, Any]] = []
    rewrite_seen = False
    for f in filters:
        f = _dict(f)
        ftype = _s(f.get("type"))
        if ftype == "RequestHeaderModifier":
            transforms += _header_transforms("Request", _dict(f.get("requestHeaderModifier")), out)
        elif ftype == "ResponseHeaderModifier":
            transforms += _header_transforms("Response", _dict(f.get("responseHeaderModifier")), out)
        elif ftype == "URLRewrite":
            rewrite_seen = True
            spec = _dict(f.get("urlRewrite"))
            if _unsafe_strings(spec):
                out.unsupported.append("URLRewrite has a control character (CR, LF, NUL...) in its hostname or path")
                continue
            if _s(spec.get("hostname")):
                transforms.append({"kind": "HostSet", "parameters": {"host": spec["hostname"]}})
            path = _dict(spec.get("path"))
            ptype = _s(path.get("type"))
            if ptype == "ReplaceFullPath" and _s(path.get("replaceFullPath")).startswith("/"):
                transforms.append({"kind": "PathSet", "parameters": {"path": path["replaceFullPath"]}})
            elif ptype == "ReplacePrefixMatch" and isinstance(path.get("replacePrefixMatch"), str) and (
                    path["replacePrefixMatch"] == "" or path["replacePrefixMatch"].startswith("/")):
                if any(m.match.get("pathKind") != "Prefix" for m in out.matches):
                    out.unsupported.append("URLRewrite ReplacePrefixMatch needs PathPrefix matches")
                else:
                    # expanded per match (each match is its own data-plane route) in _emit_rules
                    transforms.append({"kind": _PREFIX_REWRITE, "parameters": {"replacement": path["replacePrefixMatch"]}})
                    out.prefix_rewrite = True
            elif path:
                out.unsupported.append(f"URLRewrite path {plain(ptype) if ptype else 'malformed'} is not supported")
        elif ftype == "RequestRedirect":
            spec = _dict(f.get("requestRedirect"))
            redirect = _redirect(spec, out, one_port)
        elif ftype == "RequestMirror":
            mirrors.append(_dict(f.get("requestMirror")))
        else:
            out.unsupported.append(f"filter type {plain(ftype) if ftype else 'missing'} is not supported")
    if redirect is not None and rewrite_seen:
        out.unsupported.append("RequestRedirect and URLRewrite cannot be combined")
    if len(mirrors) > 1:
        out.unsupported.append("more than one RequestMirror in a rule is not supported")
    elif mirrors:
        _mirror(ctx, mirrors[0], route_ns, out)
    return transforms, redirect


def _rule_matches(ctx: RenderContext, raw_matches: list[Any], out: RuleOut) -> None:
    """A rule's matches into ``out``. A common-shape match (:func:`_match_key`) is built once per
    render for every rule that has it; a list of such matches only is remembered by identity
    (kept alive by the snapshot; the compacted informer caches store equal lists once, so the
    rules of many routes hold the very same list)."""
    memo = ctx.rule_matches
    common = True
    start, problems = len(out.matches), len(out.unsupported)
    for raw in raw_matches:
        key = _match_key(raw)
        if key is not None:  # a common shape: built once per render for all the rules that have it
            hit = memo.get(key)
            if hit is None:
                made_problems = RuleOut()
                made = _build_match(raw, made_problems)
                made.ranks = match_part(made.match)
                made.body = match_body(made.match)
                hit = memo[key] = (made, made_problems.unsupported)
            out.matches.append(hit[0])
            out.unsupported += hit[1]
        elif type(raw) is dict or isinstance(raw, Mapping):
            common = False
            out.matches.append(_build_match(raw, out))
        else:
            # nothing of the match is known: answer 500 only where nothing else matches
            common = False
            out.unsupported.append("a match is malformed")
            out.matches.append(MatchOut({}, degraded=True))
    if common and type(raw_matches) is list:
        ctx.match_lists[id(raw_matches)] = (raw_matches, tuple(out.matches[start:]),
                                            tuple(out.unsupported[problems:]))


def _backends_of(ctx: RenderContext, refs: list[Any], route_ns: str, settings: be.ClusterSettings) -> RuleOut:
    """:func:`_backends` once per render for each ``refs`` list object (kept alive by the
    snapshot; the memo holds it too and checks it is the very same object). The result is
    read-only: a list shared by several rules (the informer caches store equal values once)."""
    key = (id(refs), route_ns, None if settings is be.DEFAULT_SETTINGS else settings)
    hit = ctx.rule_backends.get(key)
    if hit is not None and hit[0] is refs:
        return hit[1]
    got = _backends(ctx, refs, route_ns, settings)
    ctx.rule_backends[key] = (refs, got)
    return got


def _backends(ctx: RenderContext, refs: list[Any], route_ns: str, settings: be.ClusterSettings) -> RuleOut:
    """What a rule's ``backendRefs`` make, in a RuleOut of its own: the action (weighted
    clusters, or a 500), the clusters to add, the problems (``unsupported``, ``refs``,
    ``first_ref``)."""
    out = RuleOut()
    shares: list[tuple[str, int]] = []
    invalid_weight = 0
    first_error = ("", "")
    for ref in refs:
        ref = _dict(ref)
        weight = ref.get("weight", 1)
        if type(weight) is not int and (isinstance(weight, bool) or not isinstance(weight, int)) or weight < 0:
            out.unsupported.append(f"backendRef weight {brief(weight)} is invalid")
            continue
        if weight > MAX_WEIGHT:
            out.unsupported.append(f"backendRef weight {weight} is larger than {MAX_WEIGHT}")
            continue
        if _list(ref.get("filters")):
            out.unsupported.append("filters on a backendRef are not supported")
            continue
        cluster, reason, message = _resolve_ref(ctx, ref, route_ns, settings)
        if cluster is None:
            out.refs.append((reason, message))
            if not first_error[0]:
                first_error = (reason, message)
                out.first_ref = message
            invalid_weight += weight
            continue
        out.clusters.append(cluster)
        if weight > 0:
            shares.append((cluster["id"], weight))
    if not shares:
        if first_error[0]:
            out.action = {"directResponse": {"status": 500, "body": f"{first_error[0]}: {first_error[1]}"}}
        elif refs:
            out.action = {"directResponse": {"status": 500, "body": "NoBackends: every backendRef has weight 0"}}
        else:
            out.action = {"directResponse": {"status": 500, "body": "NoBackends: the rule has no backendRefs"}}
        return out
    if invalid_weight:
        out.clusters.append({"id": INVALID_BACKEND_CLUSTER, "destinations": []})
        shares.append((INVALID_BACKEND_CLUSTER, invalid_weight))
    merged: dict[str, int] = {}
    for cid, w in shares:
        merged[cid] = merged.get(cid, 0) + w
    if len(merged) == 1:
        out.action = {"clusterId": next(iter(merged))}
    else:
        out.action = {"clusters": [{"clusterId": cid, "weight": w} for cid, w in merged.items()]}
    return out


def _unsafe_strings(spec: Mapping[str, Any]) -> bool:
    """Does a hostname or path of a rewrite/redirect filter hold a control character?"""
    path = _dict(spec.get("path"))
    values = (spec.get("hostname"), path.get("replaceFullPath"), path.get("replacePrefixMatch"))
    return any(isinstance(v, str) and has_control(v) for v in values)


def _redirect(spec: Mapping[str, Any], out: RuleOut, one_port: tuple[int, str] | None) -> dict[str, Any]:
    if _unsafe_strings(spec):
        out.unsupported.append("RequestRedirect has a control character (CR, LF, NUL...) in its hostname or path")
        return {"statusCode": 302, "host": "invalid"}
    status = spec.get("statusCode", 302)
    if status not in (301, 302) or isinstance(status, bool):
        out.unsupported.append(f"RequestRedirect statusCode {brief(status)} is not supported (301 or 302 only)")
    redirect: dict[str, Any] = {"statusCode": status if status in (301, 302) else 302}
    scheme = _s(spec.get("scheme"))
    if scheme:
        if scheme not in ("http", "https"):
            out.unsupported.append(f"RequestRedirect scheme {brief(scheme)} is not supported")
        redirect["scheme"] = scheme
    if _s(spec.get("hostname")):
        redirect["host"] = spec["hostname"]
    port = spec.get("port")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535):
        out.unsupported.append(f"RequestRedirect port {brief(port)} is invalid")
        port = None
    effective_scheme = scheme or (one_port[1].lower() if one_port else "")
    if port is None and not scheme and one_port is not None:
        port = one_port[0]
    if port is not None and not (
        (effective_scheme == "http" and port == 80) or (effective_scheme == "https" and port == 443)
    ):
        redirect["port"] = port
    path = _dict(spec.get("path"))
    ptype = _s(path.get("type"))
    if ptype == "ReplaceFullPath" and _s(path.get("replaceFullPath")).startswith("/"):
        redirect["path"] = path["replaceFullPath"]
    elif ptype == "ReplacePrefixMatch":
        out.unsupported.append("RequestRedirect with ReplacePrefixMatch is not supported")
    elif path:
        out.unsupported.append("RequestRedirect path is malformed")
    return redirect


def _mirror(ctx: RenderContext, spec: Mapping[str, Any], route_ns: str, out: RuleOut) -> None:
    percent = 100.0
    if "percent" in spec:
        p = spec.get("percent")
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p <= 100:
            out.unsupported.append(f"RequestMirror percent {brief(p)} is invalid")
            return
        percent = float(p)
    elif "fraction" in spec:
        frac = _dict(spec.get("fraction"))
        num, den = frac.get("numerator"), frac.get("denominator", 100)
        if (not isinstance(num, int) or not isinstance(den, int) or isinstance(num, bool) or isinstance(den, bool)
                or den <= 0 or not 0 <= num <= den):
            out.unsupported.append("RequestMirror fraction is invalid")
            return
        percent = round(num * 100.0 / den, 4)
    cluster, reason, message = _resolve_ref(ctx, _dict(spec.get("backendRef")), route_ns, be.DEFAULT_SETTINGS)
    if cluster is None:
        out.refs.append((reason, f"RequestMirror: {message}"))
        return
    out.clusters.append(cluster)
    if percent > 0:
        out.extras["mirror"] = {"clusterId": cluster["id"], "percent": percent}


# -- route ----------------------------------------------------------------------------------
@dataclass
class _Parent:
    ref: Mapping[str, Any]
    identity: tuple[Any, ...]
    accepted: bool
    reason: str
    message: str
    listeners: list[ListenerInfo]
    #: listeners whose attachedRoutes count this route (allowedRoutes + parentRef only)
    counted: list[ListenerInfo]


def _attach(ctx: RenderContext, gw: GatewayInfo, ref: Mapping[str, Any], route_ns: str, route_hosts: list[str]
            ) -> tuple[bool, str, str, list[ListenerInfo], list[ListenerInfo]]:
    section = _s(ref.get("sectionName"))
    port = ref.get("port") if isinstance(ref.get("port"), int) and not isinstance(ref.get("port"), bool) else None
    # the listeners a (Gateway, sectionName, port, namespace) selects, counts and admits: once per
    # render (every route of a namespace usually names its Gateway the same way)
    key = (id(gw), section, port, route_ns)
    hit = ctx.parent_listeners.get(key)
    if hit is None or hit[0] is not gw:
        selected = [li for li in gw.listeners
                    if (not section or li.name == section) and (port is None or li.port == port)]
        counted = [li for li in selected if li.serves_httproute and li.allows_namespace(ctx, route_ns)]
        allowed = [li for li in counted if li.attachable]
        hit = ctx.parent_listeners[key] = (gw, bool(selected), counted, allowed,
                                           any(li.hostname is not None for li in allowed))
    _, any_selected, counted, allowed, hostnames = hit
    if not any_selected:
        what = f"sectionName {brief(section)}" if section else ""
        what += (" and " if what and port is not None else "") + (f"port {port}" if port is not None else "")
        return (False, "NoMatchingParent",
                f"Gateway {gw.namespace}/{gw.name} has no listener with {what or 'that reference'}", [], [])
    if not allowed:
        if not gw.accepted:
            return False, "NotAllowedByListeners", "the Gateway is not accepted", [], counted
        return False, "NotAllowedByListeners", "no valid listener allows routes from this namespace and kind", [], counted
    # (a listener without a hostname accepts every route hostname: then the memo's list, read-only)
    matched = allowed if not route_hosts or not hostnames else [
        li for li in allowed if li.hostname is None or any(intersect_hostname(li.hostname, h) for h in route_hosts)]
    if not matched:
        return (False, "NoMatchingListenerHostname", "no listener hostname intersects the route's hostnames",
                [], counted)
    return True, "Accepted", "the route is accepted", matched, counted


def _effective_hosts(listeners: list[ListenerInfo], route_hosts: list[str]) -> list[str | None]:
    """The match hosts of a route's data-plane routes. ``route_hosts``: its valid hostnames,
    lowercased."""
    hosts: set[str] = set()
    for li in listeners:
        if not route_hosts:
            if li.hostname is None:
                return [None]
            hosts.add(li.hostname.lower())
        elif li.hostname is None:
            hosts.update(route_hosts)  # (intersect_hostname(None, h) is h)
        else:
            for h in route_hosts:
                got = intersect_hostname(li.hostname, h)
                if got:
                    hosts.add(got.lower())
    # a wildcard that covers an exact host already emitted is kept: exact ranks first anyway
    return sorted(hosts)


def translate(ctx: RenderContext, gateways: dict[tuple[str, str], GatewayInfo], cache: RenderCache | None = None,
              deps: Any = None) -> None:
    """Every HTTPRoute, in key order. With a ``cache`` and the route dependencies ``deps`` (see
    render/memo.py; None: nothing is memoized), a route whose ``(uid, resourceVersion)`` and
    dependencies are unchanged replays its recorded effects instead of being translated."""
    routes = ctx.snapshot.httproutes
    if cache is not None and (deps is None or deps != cache.route_deps):
        cache.routes.clear()
        cache.route_deps = deps
    memo = cache.routes if cache is not None and deps is not None else None
    kept: dict[str, tuple[tuple[str, str], Recording]] = {}
    listeners = {(key, li.index): li for key, gw in gateways.items() for li in gw.listeners}
    for key in sorted(routes):
        route = routes[key]
        if not (type(route) is dict or isinstance(route, Mapping)):
            continue
        version = resource_version(route) if memo is not None else None
        if version is not None:
            assert memo is not None and cache is not None
            hit = memo.get(key)
            if hit is not None and hit[0] == version and ctx.replay(hit[1]):
                for lk in hit[1].extra:
                    listeners[lk].attached += 1
                kept[key] = hit
                cache.hits += 1
                continue
            rec, counted = ctx.record(_translate_route, ctx, route, gateways)
            rec.extra = [(((li.gateway_ns, li.gateway_name)), li.index) for li in counted]
            if rec.replayable():
                kept[key] = (version, rec)
            cache.misses += 1
        else:
            _translate_route(ctx, route, gateways)
    if memo is not None:
        memo.clear()
        memo.update(kept)


def _translate_route(ctx: RenderContext, route: Mapping[str, Any], gateways: dict[tuple[str, str], GatewayInfo]
                     ) -> list[ListenerInfo]:
    """One HTTPRoute; returns the listeners whose attachedRoutes it counted (already counted)."""
    controller = ctx.options.controller_name
    meta = _dict(route.get("metadata"))
    name = _s(meta.get("name"))
    ns = _s(meta.get("namespace")) or "default"
    if not name:
        return []
    spec = _dict(route.get("spec"))
    status = _dict(route.get("status"))
    old_parents = [p for p in _list(status.get("parents"))
                   if (type(p) is dict or isinstance(p, Mapping)) and p.get("controllerName") == controller]
    route_hosts: list[str] = []
    bad_hosts: list[str] = []
    for index, h in enumerate(_list(spec.get("hostnames"))):
        if isinstance(h, str) and valid_hostname(low := h.lower()):
            route_hosts.append(low)
        else:
            bad_hosts.append(f"spec.hostnames[{index}] {brief(h)} is not a valid hostname")
    parents: list[_Parent] = []
    for ref in _list(spec.get("parentRefs")):
        if not (type(ref) is dict or isinstance(ref, Mapping)):
            continue
        ident = _identity(ctx, ref, ns)
        if ident[0] != GATEWAY_GROUP or ident[1] != "Gateway":
            continue
        gw = gateways.get((ident[2], ident[3]))
        if gw is None:
            continue  # not ours (other class) or absent: never reported
        if any(p.identity == ident for p in parents):
            continue
        ok, reason, message, listeners, counted = _attach(ctx, gw, ref, ns, route_hosts)
        if bad_hosts and ok:
            # emitting the valid names only could widen the route (none left = any host)
            ok, reason, message, listeners = False, "UnsupportedValue", summarize(bad_hosts), []
        parents.append(_Parent(ref, ident, ok, reason, message, listeners, counted))
    if not parents:
        if old_parents:
            ctx.add_status(ObjectStatus(API_VERSION, "HTTPRoute", ns, name, {"parents": []}))
        return []
    # attachedRoutes: based solely on allowedRoutes and parentRefs (ListenerStatus docs)
    if len(parents) == 1:  # (the lists of one parent hold each listener once; read-only)
        counted_once = parents[0].counted
        attached = parents[0].listeners if parents[0].accepted else []
    else:
        counted_once = list({id(li): li for p in parents for li in p.counted}.values())
        attached = list({id(li): li for p in parents if p.accepted for li in p.listeners}.values())
    for li in counted_once:
        li.attached += 1
    unsupported: list[str] = []
    refs: list[tuple[str, str]] = []
    serving = [li for li in attached if li.usable]
    # rules are always validated (status), but only emitted when a programmed listener serves them
    basis = serving or attached
    ports = {(li.port, li.protocol) for li in basis}
    one_port = next(iter(ports)) if len(ports) == 1 else None
    hosts = _effective_hosts(basis, route_hosts) if basis else (
        sorted({h.lower() for h in route_hosts}) or [None])
    firsts: list[str] = []  # the problem each 500 body starts with: always named in the status
    ref_firsts: list[str] = []
    _emit_rules(ctx, route, ns, name, spec, hosts, one_port, unsupported, refs, firsts, ref_firsts,
                emit=bool(serving))
    _status(ctx, route, ns, name, parents, old_parents, firsts + unsupported, ref_firsts + [m for _, m in refs],
            refs[0][0] if refs else "", len(set(firsts)), len(set(ref_firsts)))
    return counted_once


def _emit_rules(ctx: RenderContext, route: Mapping[str, Any], ns: str, name: str, spec: Mapping[str, Any],
                hosts: list[str | None], one_port: tuple[int, str] | None,
                unsupported: list[str], refs: list[tuple[str, str]], firsts: list[str], ref_firsts: list[str],
                *, emit: bool) -> None:
    owner = owner_part(creation_timestamp(route), ns, name)
    host_keys = [(host, ctx.host_part(host)) for host in hosts]  # (each host with its precedence part)
    multi = len(hosts) > 1
    id_prefix = f"httproute/{ns}/{name}/r"
    # "httproute/<ns>/<name>/r<i>m<j>" is written plain when the names are (emit._SURE_PLAIN)
    plain_ids = not multi and plain_name(ns) is not None and plain_name(name) is not None
    last_rest: tuple[dict[str, Any] | None, str | None] = (None, None)
    last_parts: tuple[tuple[int, int] | None, str | None] = (None, None)
    last_clusters: list[dict[str, Any]] = []
    for ri, rule in enumerate(_list(spec.get("rules"))):
        if not (type(rule) is dict or isinstance(rule, Mapping)):
            rule = {"matches": [None]}  # malformed: reported, answered 500 in the degraded tier
        out = _rule(ctx, rule, ns, one_port)
        refs.extend(out.refs)
        rule_unsupported = list(out.unsupported)
        rule_message = summarize(rule_unsupported, 3) if rule_unsupported else ""
        if rule_unsupported:
            firsts.append(rule_unsupported[0])
        elif out.first_ref and "directResponse" in out.action:
            ref_firsts.append(out.first_ref)
        if emit and not rule_unsupported:
            clusters = out.clusters
            # (the rules of a route often have the very same backends: adding them again is a no-op)
            if len(clusters) != len(last_clusters) or any(map(operator.is_not, clusters, last_clusters)):
                for cluster in clusters:
                    ctx.add_cluster(cluster)
                last_clusters = clusters
        # every route of the rule that differs only in id and match shares its other lines
        shared_tail: str | None = None
        if emit:
            action, extras = out.action, out.extras
            if (not rule_unsupported and out.redirect is None and ("clusterId" in action or "clusters" in action)
                    and (not extras or extras.keys() == _TRANSFORMS_ONLY) and not out.prefix_rewrite):
                # the common shape: the text of the backends and of the filters, each written
                # once per render for the very objects the memos share between rules and routes
                transforms = extras.get("transforms")
                parts = (id(action), id(transforms))
                if parts == last_parts[0]:
                    shared_tail = last_parts[1]
                else:
                    head = _block_text(ctx, action)
                    shared_tail = head if transforms is None or head is None else (
                        None if (more := _block_text(ctx, transforms, transforms_block)) is None
                        else head + more)
                    last_parts = (parts, shared_tail)
            elif rule_unsupported:
                shared_tail = route_tail({"directResponse": {"status": 500, "body": "UnsupportedValue: " + rule_message}})
            elif out.redirect is None:
                rest = dict(out.action)
                if "clusterId" in out.action or "clusters" in out.action:
                    for k in ("mirror", "transforms", "limits"):
                        if k in out.extras:
                            rest[k] = out.extras[k]
                if not (out.prefix_rewrite and "transforms" in rest):
                    if rest == last_rest[0] and rest.keys() <= _SAME_TEXT_KEYS:
                        shared_tail = last_rest[1]  # the same backends and filters as the rule before
                    else:
                        shared_tail = route_tail(rest)
                        last_rest = (rest, shared_tail)
        # the routes of this rule that are the shared tail after their id and match lines
        fast = emit and shared_tail is not None and "redirect" not in out.action
        for mi, m in enumerate(out.matches):
            tier = TIER_DEGRADED if m.degraded else TIER_NORMAL
            ranks = m.ranks or match_part(m.match)
            for host, host_rank in host_keys:
                rid = f"{id_prefix}{ri}m{mi}/{host}" if multi and host else f"{id_prefix}{ri}m{mi}"
                key = key_from_parts(tier, host_rank, ranks, owner, ri, mi)
                if fast and ctx.add_route_text(rid, host, m.match, key, shared_tail, m.body,  # type: ignore[arg-type]
                                               plain_ids) is not None:
                    continue
                match = {"host": host, **m.match} if host else dict(m.match)
                body: dict[str, Any] = {"id": rid, "match": match}
                if rule_unsupported:
                    body["directResponse"] = {"status": 500, "body": "UnsupportedValue: " + rule_message}
                elif out.redirect is not None:
                    if host and not host.startswith("*"):
                        body["redirect"] = {**out.redirect, "host": host}
                        body["redirect"] = {k: body["redirect"][k] for k in ("statusCode", "scheme", "host", "port", "path")
                                            if k in body["redirect"]}
                    else:
                        why = "RequestRedirect without hostname needs a concrete route hostname"
                        if why not in unsupported:
                            unsupported.append(why)
                            firsts.append(why)
                        body["directResponse"] = {"status": 500, "body": f"UnsupportedValue: {why}"}
                else:
                    body.update(out.action)
                    if "clusterId" in out.action or "clusters" in out.action:
                        for k in ("mirror", "transforms", "limits"):
                            if k in out.extras:
                                body[k] = out.extras[k]
                        if "transforms" in body:
                            body["transforms"] = _expand_transforms(body["transforms"], match)
                if "redirect" in body:
                    # only response header changes apply to a redirect answer
                    response = [t for t in out.extras.get("transforms", []) if t["kind"].startswith("Response")]
                    if response:
                        body["transforms"] = response
                if emit:
                    ctx.add_route(body, key, None if "redirect" in body else shared_tail)
        unsupported.extend(rule_unsupported)


#: The extras of a rule that has transforms and no mirror or limits.
_TRANSFORMS_ONLY = frozenset({"transforms"})


def _block_text(ctx: RenderContext, value: Any, write: Callable[[Any], str | None] = route_tail) -> str | None:
    """``write(value)`` once per render for each ``value`` object (kept alive by the memo, which
    checks it is the very same object): the lines of a rule's backends (the action of a
    backendRefs list, ``route_tail``) or of its transforms (the header filters of a filter
    list, ``transforms_block``). The values are read-only once made, so their text never
    changes."""
    hit = ctx.tail_texts.get(id(value))
    if hit is not None and hit[0] is value:
        return hit[1]
    text = write(value)
    ctx.tail_texts[id(value)] = (value, text)
    return text


#: Route keys whose values the translator builds from strings and validated ints only (never a
#: bool or float, which compare equal to an int): equal values are written the same.
_SAME_TEXT_KEYS = frozenset({"clusterId", "clusters", "transforms", "limits", "directResponse"})


def _expand_transforms(transforms: list[dict[str, Any]], match: Mapping[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for t in transforms:
        if t["kind"] == _PREFIX_REWRITE:
            out += prefix_rewrite_transforms(str(match.get("path", "/")), t["parameters"]["replacement"])
        else:
            out.append(t)
    return out


_ALL_RESOLVED = (True, "ResolvedRefs", "all references are resolved")


def _status(ctx: RenderContext, route: Mapping[str, Any], ns: str, name: str, parents: list[_Parent],
            old_parents: list[Mapping[str, Any]], unsupported: list[str], refs: list[str], ref_reason: str,
            n_firsts: int, n_ref_firsts: int) -> None:
    """``unsupported``/``refs``: problems, the ones 500 bodies start with first (always listed).

    The conditions are made once per render for each (generation, previous conditions list,
    Accepted, ResolvedRefs): thousands of routes of one Gateway have the same ones (the informer
    caches store equal previous conditions once). Like the parentRef echoes, they are shared
    read-only between the routes' statuses."""
    entries: list[dict[str, Any]] = []
    gen = generation(route)
    memo = ctx.route_conditions
    for p in parents:
        previous: list[Mapping[str, Any]] = []
        held: Any = None  # the previous conditions list object (what ``previous`` is read from)
        for old in old_parents:
            if isinstance(old.get("parentRef"), Mapping) and _identity(ctx, old["parentRef"], ns) == p.identity:
                previous = existing_conditions(old)
                held = old.get("conditions") if previous else None
                break
        if not p.accepted:
            accepted = (False, p.reason, p.message)
        elif unsupported:
            accepted = (False, "UnsupportedValue", summarize(unsupported, _listed(n_firsts)))
        else:
            accepted = (True, "Accepted", p.message)
        resolved = (False, ref_reason, summarize(refs, _listed(n_ref_firsts))) if refs else _ALL_RESOLVED
        key = (gen, id(held), accepted, resolved)
        hit = memo.get(key)
        if hit is None or hit[0] is not held:
            conds = ctx.conditions(route, previous)
            conds.set("Accepted", *accepted)
            conds.set("ResolvedRefs", *resolved)
            hit = memo[key] = (held, conds, conds.as_list())
        elif ctx.recording is not None:
            ctx.recording.conditions.append(hit[1])  # the same stamping as when it was made
        echo = ctx.parent_echoes.get(id(p.ref))
        if echo is None or echo[0] is not p.ref:
            echo = ctx.parent_echoes[id(p.ref)] = (p.ref, parent_ref_echo(p.ref))
        entries.append({
            "parentRef": echo[1],
            "controllerName": ctx.options.controller_name,
            "conditions": hit[2],
        })
    ctx.add_status(ObjectStatus.of(API_VERSION, "HTTPRoute", ns, name, {"parents": entries}))
