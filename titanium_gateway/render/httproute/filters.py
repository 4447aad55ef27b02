"""HTTPRoute ``rules[].filters[]`` -> the rule's behavior as far as its filters decide it.

Each filter type has one branch in :func:`rule_filters`, which puts what it makes into the
:class:`~titanium_gateway.twp.model.Behavior` the filters return (:attr:`RuleFilters.behavior`:
transforms, policies, mirror, and the action of a RequestRedirect); the rule finishes it with
what its backends and timeouts decide (``rules.py``: ``behavior.but(action=..., limits=...)``),
naming nothing else. A filter the data plane cannot honour is a problem (the rule then answers
500 with it, and the route is not Accepted).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from titanium_gateway.render import fields as f
from titanium_gateway.render.fields import brief, has_control, plain
from titanium_gateway.render.httproute.matches import MatchOut, normalize_prefix
from titanium_gateway.render.regex import regex_escape
from titanium_gateway.render.unhonoured import unhonoured
from titanium_gateway.twp.model import (
    DEFAULT_SETTINGS,
    Action,
    Behavior,
    Cluster,
    ClusterSettings,
    HostSet,
    Mirror,
    PathRegexReplace,
    PathSet,
    Policy,
    Redirect,
    RequestHeaderAppend,
    RequestHeaderRemove,
    RequestHeaderSet,
    ResponseHeaderAppend,
    ResponseHeaderRemove,
    ResponseHeaderSet,
    Transform,
)


@dataclass(frozen=True, slots=True)
class PrefixRewrite:
    """URLRewrite ReplacePrefixMatch: made into transforms per match (each match is its own
    data-plane route, and the pattern is its path), see :func:`expand`."""

    replacement: str


#: The action of a behavior while the filters make it: the rule's backends decide it (a
#: RequestRedirect replaces it). Never emitted: ``rules.translate_rule`` always sets the action.
UNDECIDED = unhonoured("UnsupportedValue")


class Resolver(Protocol):
    """What resolves a backendRef (``backendrefs.Backends``: with the rule's backends)."""

    def ref(self, ref: Mapping[str, Any], route_ns: str, settings: ClusterSettings) -> tuple[Cluster | None, str, str]:
        ...


@dataclass(frozen=True, slots=True)
class RuleFilters:
    """What a rule's filters make: its behavior as far as they decide it, and what the rule
    reports and adds besides."""

    #: transforms (in order; a :class:`PrefixRewrite` stands for the transforms of each
    #: match's path), policies, mirror; the action is a RequestRedirect's (``host`` "" when the
    #: filter names none: each route redirects to its own hostname), else :data:`UNDECIDED`
    behavior: Behavior
    problems: tuple[str, ...] = ()
    #: (reason, message) of a mirror's backend that does not resolve
    refs: tuple[tuple[str, str], ...] = ()
    #: the clusters to add (a mirror's)
    clusters: tuple[Cluster, ...] = ()
    #: a PrefixRewrite is among the transforms
    prefix_rewrite: bool = False


class _Made:
    """What the filter branches make, as they make it (one per :func:`rule_filters` call)."""

    __slots__ = ("transforms", "policies", "action", "mirror", "problems", "refs", "clusters", "prefix_rewrite")

    def __init__(self) -> None:
        self.transforms: list[Transform | PrefixRewrite] = []
        self.policies: list[Policy] = []
        self.action: Action = UNDECIDED
        self.mirror: Mirror | None = None
        self.problems: list[str] = []
        self.refs: list[tuple[str, str]] = []
        self.clusters: tuple[Cluster, ...] = ()
        self.prefix_rewrite = False


_HEADER_KINDS: dict[tuple[str, str], type[Any]] = {
    ("Request", "set"): RequestHeaderSet, ("Request", "add"): RequestHeaderAppend,
    ("Request", "remove"): RequestHeaderRemove, ("Response", "set"): ResponseHeaderSet,
    ("Response", "add"): ResponseHeaderAppend, ("Response", "remove"): ResponseHeaderRemove,
}


def _header_transforms(prefix: str, spec: Mapping[str, Any], out: _Made) -> None:
    for verb in ("set", "add"):
        kind = _HEADER_KINDS[(prefix, verb)]
        for item in f.items(spec.get(verb)):
            item = f.mapping(item)
            name, value = f.string(item.get("name")), item.get("value")
            if not name or not isinstance(value, str):
                out.problems.append(f"{prefix}HeaderModifier.{verb} entry is malformed")
                continue
            if has_control(name) or has_control(value):
                out.problems.append(f"{prefix}HeaderModifier.{verb} header {brief(name)} has a control character "
                                    "(CR, LF, NUL...)")
                continue
            if not (f.writable(name) and f.writable(value)):
                out.problems.append(f"{prefix}HeaderModifier.{verb} header {brief(name)} holds a lone UTF-16 surrogate")
                continue
            out.transforms.append(kind(name, value))
    remove = _HEADER_KINDS[(prefix, "remove")]
    for name in f.items(spec.get("remove")):
        if not isinstance(name, str) or not name or has_control(name):
            out.problems.append(f"{prefix}HeaderModifier.remove entry is malformed")
            continue
        if not f.writable(name):
            out.problems.append(f"{prefix}HeaderModifier.remove header {brief(name)} holds a lone UTF-16 surrogate")
            continue
        out.transforms.append(remove(name))


def _unsafe_strings(spec: Mapping[str, Any], what: str, out: _Made) -> bool:
    """Does a hostname or path of a rewrite/redirect filter hold a control character or a lone
    surrogate (reported)?"""
    path = f.mapping(spec.get("path"))
    values = [v for v in (spec.get("hostname"), path.get("replaceFullPath"), path.get("replacePrefixMatch"))
              if isinstance(v, str)]
    if any(has_control(v) for v in values):
        out.problems.append(f"{what} has a control character (CR, LF, NUL...) in its hostname or path")
        return True
    if not all(map(f.writable, values)):
        out.problems.append(f"{what} has a lone UTF-16 surrogate in its hostname or path")
        return True
    return False


def _url_rewrite(spec: Mapping[str, Any], path_kinds: Sequence[str | None], out: _Made) -> None:
    if _unsafe_strings(spec, "URLRewrite", out):
        return
    if f.string(spec.get("hostname")):
        out.transforms.append(HostSet(spec["hostname"]))
    path = f.mapping(spec.get("path"))
    ptype = f.string(path.get("type"))
    if ptype == "ReplaceFullPath" and f.string(path.get("replaceFullPath")).startswith("/"):
        out.transforms.append(PathSet(path["replaceFullPath"]))
    elif ptype == "ReplacePrefixMatch" and isinstance(path.get("replacePrefixMatch"), str) and (
            path["replacePrefixMatch"] == "" or path["replacePrefixMatch"].startswith("/")):
        if any(kind != "Prefix" for kind in path_kinds):
            out.problems.append("URLRewrite ReplacePrefixMatch needs PathPrefix matches")
        else:
            out.transforms.append(PrefixRewrite(path["replacePrefixMatch"]))
            out.prefix_rewrite = True
    elif path:
        out.problems.append(f"URLRewrite path {plain(ptype) if ptype else 'malformed'} is not supported")


def _redirect(spec: Mapping[str, Any], one_port: tuple[int, str] | None, out: _Made) -> Redirect:
    if _unsafe_strings(spec, "RequestRedirect", out):
        return Redirect(status_code=302, host="invalid")
    status = spec.get("statusCode", 302)
    if status not in (301, 302) or isinstance(status, bool):
        out.problems.append(f"RequestRedirect statusCode {brief(status)} is not supported (301 or 302 only)")
    scheme = f.string(spec.get("scheme"))
    if scheme and scheme not in ("http", "https"):
        out.problems.append(f"RequestRedirect scheme {brief(scheme)} is not supported")
    port = spec.get("port")
    if port is not None and f.port(port) is None:
        out.problems.append(f"RequestRedirect port {brief(port)} is invalid")
        port = None
    effective_scheme = scheme or (one_port[1].lower() if one_port else "")
    if port is None and not scheme and one_port is not None:
        port = one_port[0]
    if port is not None and ((effective_scheme == "http" and port == 80) or (effective_scheme == "https" and port == 443)):
        port = None
    path = f.mapping(spec.get("path"))
    ptype = f.string(path.get("type"))
    new_path: str | None = None
    if ptype == "ReplaceFullPath" and f.string(path.get("replaceFullPath")).startswith("/"):
        new_path = path["replaceFullPath"]
    elif ptype == "ReplacePrefixMatch":
        out.problems.append("RequestRedirect with ReplacePrefixMatch is not supported")
    elif path:
        out.problems.append("RequestRedirect path is malformed")
    return Redirect(status_code=status if status in (301, 302) and not isinstance(status, bool) else 302,
                    scheme=scheme or None, host=f.string(spec.get("hostname")), port=port, path=new_path)


def _mirror(spec: Mapping[str, Any], backends: tuple[Resolver, str] | None, out: _Made) -> None:
    percent = 100.0
    if "percent" in spec:
        p = spec.get("percent")
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p <= 100:
            out.problems.append(f"RequestMirror percent {brief(p)} is invalid")
            return
        percent = float(p)
    elif "fraction" in spec:
        frac = f.mapping(spec.get("fraction"))
        num, den = frac.get("numerator"), frac.get("denominator", 100)
        if (not isinstance(num, int) or not isinstance(den, int) or isinstance(num, bool) or isinstance(den, bool)
                or den <= 0 or not 0 <= num <= den):
            out.problems.append("RequestMirror fraction is invalid")
            return
        percent = round(num * 100.0 / den, 4)
    if backends is None:  # (only lists of header modifiers are made without the rule's backends)
        raise ValueError("a RequestMirror needs the rule's backends")
    resolver, route_ns = backends
    cluster, reason, message = resolver.ref(f.mapping(spec.get("backendRef")), route_ns, DEFAULT_SETTINGS)
    if cluster is None:
        out.refs.append((reason, f"RequestMirror: {message}"))
        return
    out.clusters = (cluster,)
    if percent > 0:
        out.mirror = Mirror(cluster.id, percent)


_MODIFIERS = {"RequestHeaderModifier": "requestHeaderModifier", "ResponseHeaderModifier": "responseHeaderModifier"}


def _pairs_key(items: Any) -> tuple[tuple[str, str], ...] | None:
    if items is None:
        return ()
    if type(items) is not list:
        return None
    out = []
    for item in items:
        if type(item) is not dict:
            return None
        name, value = item.get("name"), item.get("value")
        if type(name) is not str or type(value) is not str:
            return None
        out.append((name, value))
    return tuple(out)


def filters_key(filters: list[Any]) -> tuple[Any, ...] | None:
    """A key of everything :func:`rule_filters` reads of a list of header modifiers (exact
    types: equal keys make the very same transforms and problems); None for any other list
    (made every time). Header modifiers read nothing else (matches, ports)."""
    out = []
    for flt in filters:
        if type(flt) is not dict:
            return None
        ftype = flt.get("type")
        field_name = _MODIFIERS.get(ftype) if type(ftype) is str else None
        if field_name is None:
            return None
        spec = flt.get(field_name)
        if spec is None:
            out.append((ftype, None))
            continue
        if type(spec) is not dict:
            return None
        set_key, add_key, remove = _pairs_key(spec.get("set")), _pairs_key(spec.get("add")), spec.get("remove")
        if set_key is None or add_key is None:
            return None
        if remove is None:
            remove_key: tuple[str, ...] = ()
        elif type(remove) is list and all(type(r) is str for r in remove):
            remove_key = tuple(remove)
        else:
            return None
        out.append((ftype, set_key, add_key, remove_key))
    return tuple(out)


class Filters:
    """The filters of one render: a list of header modifiers (:func:`filters_key`) is made once
    for every rule that has it (the rules of a route often repeat theirs)."""

    __slots__ = ("_made", "_last")

    def __init__(self) -> None:
        self._made: dict[tuple[Any, ...], RuleFilters] = {}
        #: the last list of header modifiers made or found, with what it made and its key
        self._last: tuple[Any, RuleFilters, tuple[Any, ...]] | None = None

    def of(self, filters: list[Any], matches: Sequence[MatchOut], one_port: tuple[int, str] | None,
           backends: Resolver, route_ns: str) -> tuple[RuleFilters, tuple[Any, ...] | None]:
        """``(what the filters make (read-only), their key or None)``; ``backends``: what
        resolves a RequestMirror's backendRef in ``route_ns``."""
        last = self._last
        # a list equal to the last list of header modifiers (whose every leaf is a str: what
        # equals it is the same strings) makes the same: no key to build
        if last is not None and filters == last[0]:
            return last[1], last[2]
        key = filters_key(filters)
        if key is None:
            return rule_filters(filters, [m.match.path_kind for m in matches], one_port, (backends, route_ns)), None
        hit = self._made.get(key)
        if hit is None:
            hit = self._made[key] = rule_filters(filters, (), one_port)  # (header modifiers read no matches)
        self._last = (filters, hit, key)
        return hit, key


#: Why a filter type of the Gateway API is not supported, where more can be said than that.
_WHY_NOT = {
    "CORS": " (the data plane answers CORS preflight requests itself but cannot add the CORS headers a"
            " response to the actual request needs)",
}


def rule_filters(filters: list[Any], path_kinds: Sequence[str | None], one_port: tuple[int, str] | None,
                 backends: tuple[Resolver, str] | None = None) -> RuleFilters:
    """What a rule's ``filters`` make. ``path_kinds``: the pathKind of each of the rule's
    matches (ReplacePrefixMatch needs them all Prefix); ``one_port``: the (port, protocol) of
    the one listener port the route is attached to, if one (a redirect's default port);
    ``backends``: what resolves a RequestMirror's backendRef, and the route's namespace."""
    out = _Made()
    redirect: Redirect | None = None
    mirrors: list[Mapping[str, Any]] = []
    rewrite_seen = False
    for flt in filters:
        flt = f.mapping(flt)
        ftype = f.string(flt.get("type"))
        if ftype == "RequestHeaderModifier":
            _header_transforms("Request", f.mapping(flt.get("requestHeaderModifier")), out)
        elif ftype == "ResponseHeaderModifier":
            _header_transforms("Response", f.mapping(flt.get("responseHeaderModifier")), out)
        elif ftype == "URLRewrite":
            rewrite_seen = True
            _url_rewrite(f.mapping(flt.get("urlRewrite")), path_kinds, out)
        elif ftype == "RequestRedirect":
            redirect = _redirect(f.mapping(flt.get("requestRedirect")), one_port, out)
        elif ftype == "RequestMirror":
            mirrors.append(f.mapping(flt.get("requestMirror")))
        else:
            out.problems.append(f"filter type {plain(ftype) if ftype else 'missing'} is not supported"
                                + _WHY_NOT.get(ftype, ""))
    if redirect is not None:
        out.action = redirect
        if rewrite_seen:
            out.problems.append("RequestRedirect and URLRewrite cannot be combined")
    if len(mirrors) > 1:
        out.problems.append("more than one RequestMirror in a rule is not supported")
    elif mirrors:
        _mirror(mirrors[0], backends, out)
    behavior = Behavior(out.action, out.mirror, tuple(out.transforms), tuple(out.policies))  # type: ignore[arg-type]
    return RuleFilters(behavior, tuple(out.problems), tuple(out.refs), out.clusters, out.prefix_rewrite)


def prefix_rewrite_transforms(prefix: str, replacement: str) -> list[PathRegexReplace]:
    """PathRegexReplace transforms for URLRewrite ReplacePrefixMatch (contract Decisions).

    ``/foo`` + ``/bar``: ``/foo/x`` -> ``/bar/x``, ``/foo`` -> ``/bar``; ``/foo`` + ``/``:
    ``/foo/bar`` -> ``/bar``, ``/foo`` -> ``/`` (never ``//bar``).
    """
    p = normalize_prefix(prefix)
    replacement = replacement or "/"  # "" removes the prefix, as "/" does (/foo/bar -> /bar)
    if p == "/":
        if replacement.endswith("/"):
            return [PathRegexReplace("^/", replacement)]
        return [PathRegexReplace("^(?=/.)", replacement), PathRegexReplace("^/$", replacement)]
    esc = regex_escape(p)
    if replacement.endswith("/"):
        return [PathRegexReplace(f"^{esc}/?", replacement)]
    return [PathRegexReplace(f"^{esc}", replacement)]


def expand(transforms: Sequence[Transform | PrefixRewrite], path: str | None) -> tuple[Transform, ...]:
    """A rule's transforms for one of its matches (a :class:`PrefixRewrite` made for its path)."""
    out: list[Transform] = []
    for t in transforms:
        if type(t) is PrefixRewrite:
            out += prefix_rewrite_transforms(path or "/", t.replacement)
        else:
            out.append(t)  # type: ignore[arg-type]
    return tuple(out)
