"""The only writer of the twp document: a :class:`~titanium_gateway.twp.model.Document` in,
deterministic bytes, config hash and parts out.

Layout: each route's and cluster's own keys in block style, one per line, in the contract's
order; every fixed-shape mapping below them (match, weighted cluster entry, destination,
redirect, transform/policy) as one flow line::

    - id: httproute/apps/shop/r0m0
      order: 1
      match: {host: shop.example.com, path: /api, pathKind: Prefix}
      clusters:
      - {clusterId: svc-apps.api.8080, weight: 9}

Strings are plain when YAML reads them back as the same string, JSON double-quoted when they
are other printable ASCII, and escaped double-quoted otherwise, so the file is pure ASCII and
its size is ``len``. A route whose match has a key too long for a YAML implicit key is written
in block style at every level.

One writer per model class (``_*_text``); the text of the values routes share (a
:class:`~titanium_gateway.twp.model.Match`, a :class:`~titanium_gateway.twp.model.Behavior`,
a destinations tuple: the translators build each once and reference it) is written once per
emit, in tables keyed by those (immutable) objects. An :class:`EmitCache` (the controller's,
through its ``RenderCache``) keeps the text of the last emit's routes and clusters, so a render
that replays most routes writes only the new ones. :func:`route_data`/:func:`cluster_data` give the
same items as plain data, written by the generic writer :func:`_fragment` (the fallback and
the benchmarks' floor); a test checks the two writers agree.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import yaml
from yaml.resolver import Resolver

from titanium_gateway.sequences import common_ends
from titanium_gateway.twp import model as m
from titanium_gateway.twp.blockyaml import BlockWriter, Unsure
from titanium_gateway.twp.model import (
    SCHEMA_VERSION,
    Behavior,
    Cluster,
    Destination,
    DirectResponse,
    Document,
    Forward,
    Match,
    Redirect,
    Route,
    Split,
    twp_key,
)

try:
    _Dumper: type = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - libyaml missing
    _Dumper = yaml.SafeDumper

#: Bytes of the two list headers in a part, an upper bound ("routes: []\n" + "clusters: []\n").
_PART_OVERHEAD = len("routes: []\n") + len("clusters: []\n")


def dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=1 << 20)


# == scalars ================================================================================
#: The fast writer met something it does not handle; PyYAML writes that item.
_Fallback = Unsure


_RESOLVER = Resolver()
_STR_TAG = "tag:yaml.org,2002:str"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_PLAIN = re.compile(r"[A-Za-z0-9/_.][A-Za-z0-9/_.:*@=+-]*")
_scalar_cache: dict[str, str] = {}
#: Entries of a text cache (kinds, keys, hosts, cluster ids repeat; route ids do not).
_CACHE_MAX = 32_768


def _remember(cache: dict[Any, str], key: Any, text: str) -> str:
    """``cache[key] = text``; a full cache is emptied first (bounded: recurring text comes back
    at once, unique values do not pile up)."""
    if len(cache) >= _CACHE_MAX:
        cache.clear()
    cache[key] = text
    return text


def _quote(value: str) -> str:
    """A YAML double-quoted scalar in pure ASCII: anything but printable ASCII is escaped
    (``\\xXX``, ``\\uXXXX``, ``\\UXXXXXXXX``), so control characters, NEL and LINE SEPARATOR
    can never break the file or its UTF-8 encoding. A lone surrogate (which no YAML parser
    accepts, escaped or not) never reaches the model: the translators refuse such input; were
    one to, it would be written as U+FFFD rather than make the document unreadable."""
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif 0x20 <= code <= 0x7E:
            out.append(ch)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\\ufffd")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


#: Certainly a plain string: starts with a letter and has a digit or one of ``/_.-`` (no
#: YAML 1.1 implicit type - bool, null, int, float, timestamp - starts with a letter unless it
#: is letters only), or a dotted IPv4 address with an optional ``:port`` (three dots: no int,
#: float or sexagesimal number has more than one). Ids, hosts, paths, cluster ids and
#: endpoint addresses skip the resolver and the cache.
_SURE_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9/_.-]*|[0-9]{1,3}(?:\.[0-9]{1,3}){3}(?::[0-9]{1,5})?")
_sure_plain = _SURE_PLAIN.fullmatch


def _scalar(value: Any) -> str:
    if type(value) is str:
        if _SURE_PLAIN.fullmatch(value) is not None and not value.isalpha():
            return value
        cached = _scalar_cache.get(value)
        if cached is not None:
            return cached
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise _Fallback
        text = repr(value)
        if "e" in text and "." not in text:  # YAML 1.1 floats need a "." ("5e-324" is a string)
            mantissa, _, exponent = text.partition("e")
            text = f"{mantissa}.0e{exponent}"
        if _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) != _FLOAT_TAG:
            raise _Fallback
        return text
    if not isinstance(value, str):
        raise _Fallback
    text = _scalar_cache.get(value)
    if text is not None:
        return text
    if not (value.isascii() and value.isprintable()):
        text = _quote(value)
    elif (_PLAIN.fullmatch(value) and not value.endswith(":")
            and _RESOLVER.resolve(yaml.ScalarNode, value, (True, False)) == _STR_TAG):
        text = value
    else:
        text = json.dumps(value)  # printable ASCII: a valid YAML double-quoted scalar
    return _remember(_scalar_cache, value, text)


def _str(value: str) -> str:
    """:func:`_scalar` of a ``str``."""
    if _sure_plain(value) is not None and not value.isalpha():
        return value
    text = _scalar_cache.get(value)
    return text if text is not None else _scalar(value)


#: A mapping key longer than this is not written as a flow-style implicit key (YAML limits an
#: implicit key to 1024 characters); the item is then written in block style.
_MAX_FLOW_KEY = 1000


class _LongKey(Exception):
    """A key too long for a flow-style implicit key."""


def _key(key: Any) -> str:
    if type(key) is not str:
        raise _Fallback
    text = _scalar_cache.get(key)
    if text is None:
        text = _scalar(key)
    if len(text) > _MAX_FLOW_KEY:
        raise _LongKey
    return text


# == the generic writer (plain data: the fallback, and the benchmarks' floor) ================
def _block_key(key: Any) -> str:
    """A mapping key of the block writer: any string, as the document writes scalars."""
    if type(key) is not str:
        raise _Fallback
    return _scalar(key)


def _flow(value: Any) -> str:
    """``value`` in flow style on one line: ``{k: v, ...}``, ``[a, b]`` or a scalar. Plain
    scalars never contain ``,[]{}#`` (see ``_PLAIN``), so they read the same inside flow
    collections."""
    kind = type(value)
    if kind is str:
        return _str(value)
    if kind is int:
        return str(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is dict or isinstance(value, Mapping):
        return "{" + ", ".join([f"{_key(k)}: {_flow(v)}" for k, v in value.items()]) + "}"
    if kind is list:
        return "[" + ", ".join([_flow(v) for v in value]) + "]"
    return _scalar(value)


def _item_lines(item: Mapping[str, Any], out: list[str]) -> None:
    """A list item (``- key: ...``): its own keys in block style, one per line; a list value
    as a block sequence of one-line flow items; a mapping value as one flow line."""
    lead = "- "
    for key, value in item.items():
        k = _key(key)
        if isinstance(value, list) and value:
            out.append(f"{lead}{k}:\n")
            out.extend([f"  - {_flow(v)}\n" for v in value])
        else:
            out.append(f"{lead}{k}: {_flow(value)}\n")
        lead = "  "


def _fragment(item: Any) -> str:
    """One list item of plain data in the document's layout (keys in the item's own order); an
    item with a mapping key too long for flow style in block style; anything that is not plain
    data through PyYAML."""
    try:
        if isinstance(item, Mapping):
            if not item:
                return "- {}\n"
            out: list[str] = []
            _item_lines(item, out)
            return "".join(out)
        return f"- {_flow(item)}\n"
    except _LongKey:
        pass
    except _Fallback:
        return dump([item])
    out: list[str] = []
    try:  # block style at every level (a key too long for a flow-style implicit key)
        BlockWriter(_scalar, _block_key).sequence([item], "", out)
    except _Fallback:
        return dump([item])
    return "".join(out)


# == the model as plain data ===============================================================
def _pairs(pairs: m.Pairs) -> dict[str, str]:
    return dict(pairs)


def kind_data(x: Any) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for f in fields(x):
        v = getattr(x, f.name)
        params[twp_key(f.name)] = list(v) if type(v) is tuple else str(v) if type(v) is int else v
    return {"kind": x.KIND, "parameters": params}


def _optional_data(value: Any) -> dict[str, Any]:
    return {twp_key(f.name): getattr(value, f.name) for f in fields(value) if getattr(value, f.name) is not None}


def _tls_data(tls: m.UpstreamTls) -> dict[str, Any]:
    """``httpClient.tls``: its set fields, the subject alternative names as ``{type, value}``."""
    out = _optional_data(tls)
    if tls.subject_alt_names is not None:
        out["subjectAltNames"] = [{"type": n.type, "value": n.value} for n in tls.subject_alt_names]
    return out


def match_data(host: str | None, match: Match, ports: tuple[int, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if host is not None:
        out["host"] = host
    if ports:
        out["ports"] = list(ports)
    if match.path is not None:
        out["path"] = match.path
    if match.path_kind is not None:
        out["pathKind"] = match.path_kind
    if match.method is not None:
        out["method"] = match.method
    for key, pairs in (("headers", match.headers), ("query", match.query), ("queryRegex", match.query_regex)):
        if pairs:
            out[key] = _pairs(pairs)
    return out


def route_data(route: Route, order: int) -> dict[str, Any]:
    """The route as the document's plain data (keys in the contract's order)."""
    out: dict[str, Any] = {"id": route.id, "order": order, "match": match_data(route.host, route.match, route.ports)}
    b = route.behavior
    action = b.action
    if type(action) is Forward:
        out["clusterId"] = action.cluster_id
    elif type(action) is Split:
        out["clusters"] = [{"clusterId": c.cluster_id, "weight": c.weight} for c in action.clusters]
    elif type(action) is Redirect:
        out["redirect"] = _optional_data(action)
    elif type(action) is DirectResponse:
        out["directResponse"] = _optional_data(action)
    else:
        raise TypeError(f"no writer for the action {type(action).__name__}")
    if b.mirror is not None:
        out["mirror"] = _optional_data(b.mirror)
    if b.transforms:
        out["transforms"] = [kind_data(t) for t in b.transforms]
    if b.policies:
        out["policies"] = [kind_data(p) for p in b.policies]
    if b.limits is not None:
        out["limits"] = _optional_data(b.limits)
    return out


def cluster_data(cluster: Cluster) -> dict[str, Any]:
    """The cluster as the document's plain data (keys in the contract's order)."""
    out: dict[str, Any] = {"id": cluster.id}
    if cluster.algorithm is not None:
        out["algorithm"] = cluster.algorithm
    out["destinations"] = [_optional_data(d) for d in cluster.destinations]
    if cluster.session_affinity is not None:
        out["sessionAffinity"] = _optional_data(cluster.session_affinity)
    client = cluster.http_client
    if client is not None:
        data: dict[str, Any] = {}
        if client.request_timeout is not None:
            data["requestTimeout"] = client.request_timeout
        if client.tls is not None:
            data["tls"] = _tls_data(client.tls)
        out["httpClient"] = data
    return out


# == the model writers =====================================================================
def _pairs_text(pairs: m.Pairs) -> str:
    return "{" + ", ".join([f"{_key(k)}: {_str(v)}" for k, v in pairs]) + "}"


def _match_body(match: Match) -> str:
    """The flow text of a match's keys after ``host``, without braces ("" for none)."""
    parts = []
    if match.path is not None:
        parts.append(f"path: {_str(match.path)}")
    if match.path_kind is not None:
        parts.append(f"pathKind: {_str(match.path_kind)}")
    if match.method is not None:
        parts.append(f"method: {_str(match.method)}")
    if match.headers:
        parts.append(f"headers: {_pairs_text(match.headers)}")
    if match.query:
        parts.append(f"query: {_pairs_text(match.query)}")
    if match.query_regex:
        parts.append(f"queryRegex: {_pairs_text(match.query_regex)}")
    return ", ".join(parts)


#: The text of the transforms and policies that recur across behaviors (a header removed by every
#: route, a policy of an annotation set), by ``(class, *field values)``: exact types (strings,
#: ints, tuples of strings), so equal keys write the same text.
_kind_cache: dict[tuple[Any, ...], str] = {}
#: class -> (its document keys, its values getter), made on first use
_kind_layout: dict[type, tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]] = {}


def _layout(cls: type) -> tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]:
    names = tuple(f.name for f in fields(cls))
    getter = operator.attrgetter(*names) if len(names) > 1 else (lambda x, n=names[0]: (getattr(x, n),))
    made = _kind_layout[cls] = (tuple(twp_key(n) for n in names), getter)  # type: ignore[assignment]
    return made  # type: ignore[return-value]


#: The header transforms (``{name, value}``: a template each, what a render writes most).
_NAME_VALUE = frozenset({m.RequestHeaderSet, m.RequestHeaderAppend, m.ResponseHeaderSet, m.ResponseHeaderAppend})


def _kind_text(x: Any) -> str:
    """A transform or policy: ``{kind: K, parameters: {p: v, ...}}``, every value a string
    (ints in decimal, tuples as flow lists of strings)."""
    cls = type(x)
    if cls in _NAME_VALUE:
        name, value = x.name, x.value
        key: tuple[Any, ...] = (cls, name, value)
        text = _kind_cache.get(key)
        if text is None:
            text = _remember(_kind_cache, key, f"{{kind: {_str(cls.KIND)}, parameters: {{name: {_str(name)}, "
                                               f"value: {_str(value)}}}}}")
        return text
    layout = _kind_layout.get(cls) or _layout(cls)
    values = layout[1](x)
    key = (cls, *values)
    text = _kind_cache.get(key)
    if text is not None:
        return text
    params = []
    for name, v in zip(layout[0], values, strict=True):
        kind = type(v)
        if kind is str:
            shown = _str(v)
        elif kind is int:
            shown = _str(str(v))
        elif kind is tuple:
            shown = "[" + ", ".join([_str(s) for s in v]) + "]"
        else:
            raise _Fallback
        params.append(f"{name}: {shown}")
    return _remember(_kind_cache, key, f"{{kind: {_str(x.KIND)}, parameters: {{{', '.join(params)}}}}}")


def _optional_text(value: Any) -> str:
    """A small value class as one flow mapping of its set fields, in field order."""
    return "{" + ", ".join([f"{twp_key(f.name)}: {_flow(v)}" for f in fields(value)
                            if (v := getattr(value, f.name)) is not None]) + "}"


def _action_text(action: Any) -> str:
    """The lines of a route's action."""
    kind = type(action)
    if kind is Forward:
        return f"  clusterId: {_str(action.cluster_id)}\n"
    if kind is Split:
        return ("  clusters:\n" if action.clusters else "  clusters: []\n") + "".join(
            [f"  - {{clusterId: {_str(c.cluster_id)}, weight: {c.weight}}}\n" for c in action.clusters])
    if kind is Redirect:
        return f"  redirect: {_optional_text(action)}\n"
    if kind is DirectResponse:
        return f"  directResponse: {{status: {action.status}, body: {_str(action.body)}}}\n"
    raise _Fallback


def _behavior_text(b: Behavior, actions: Texts | None = None) -> str:
    """The lines of a route after its ``match`` line. ``actions``: the text of each action
    written in this emit (the behaviors of a Service's routes share their action)."""
    action = b.action
    if actions is None:
        text = _action_text(action)
    else:
        hit = actions.get(id(action))
        if hit is None or hit[0] is not action:
            hit = actions[id(action)] = (action, _action_text(action))
        text = hit[1]
    if b.mirror is None and not b.transforms and not b.policies and b.limits is None:
        return text  # type: ignore[no-any-return]
    out = [text]
    if b.mirror is not None:
        out.append(f"  mirror: {_optional_text(b.mirror)}\n")
    if b.transforms:
        out.append("  transforms:\n")
        out += [f"  - {_kind_text(t)}\n" for t in b.transforms]
    if b.policies:
        out.append("  policies:\n")
        out += [f"  - {_kind_text(p)}\n" for p in b.policies]
    if b.limits is not None:
        out.append(f"  limits: {_optional_text(b.limits)}\n")
    return "".join(out)


def _dest_text(d: Destination) -> str:
    did, address = d.id, d.address
    # _str inlined for the common case: an IPv4 address and "address:port" are plain
    if _sure_plain(did) is None or did.isalpha():
        did = _str(did)
    if _sure_plain(address) is None or address.isalpha():
        address = _str(address)
    return (f"  - {{id: {did}, address: {address}, port: {d.port}, weight: {d.weight}, "
            f"useHttps: {'true' if d.use_https else 'false'}}}\n")


def _cluster_text(c: Cluster, destinations: Texts) -> str:
    """``destinations``: the lines of each destinations tuple written in this emit (the
    clusters of one Service port with other settings share theirs)."""
    out = [f"- id: {_str(c.id)}\n"]
    if c.algorithm is not None:
        out.append(f"  algorithm: {_str(c.algorithm)}\n")
    dests = c.destinations
    if dests:
        hit = destinations.get(id(dests))
        if hit is None or hit[0] is not dests:
            hit = destinations[id(dests)] = (dests, "".join([_dest_text(d) for d in dests]))
        out.append("  destinations:\n")
        out.append(hit[1])
    else:
        out.append("  destinations: []\n")
    if c.session_affinity is not None:
        out.append(f"  sessionAffinity: {_optional_text(c.session_affinity)}\n")
    client = c.http_client
    if client is not None:
        parts = []
        if client.request_timeout is not None:
            parts.append(f"requestTimeout: {_str(client.request_timeout)}")
        if client.tls is not None:
            parts.append(f"tls: {_flow(_tls_data(client.tls))}")
        out.append(f"  httpClient: {{{', '.join(parts)}}}\n")
    return "".join(out)


#: Text of model objects by the object: ``id(obj) -> (obj, text)``. Model values are immutable,
#: so an object's text never changes, and a table holds every object it has text for, so no id
#: is reused while it is there. (Keyed by the objects themselves, not by value: equal values
#: built apart are rare, and hashing a nested value costs more than writing its text.)
Texts = dict[int, tuple[Any, Any]]


class EmitCache:
    """The text of the last emit's routes and clusters: an emit takes what it finds (the
    routes a RenderCache replays are the very objects of the last render) and keeps what it
    used (at most one document's worth). Owned by one caller (the controller's ``RenderCache``)."""

    __slots__ = ("routes", "clusters", "files", "last")

    def __init__(self) -> None:
        #: route id -> (the route, its id as written, its match line, its behavior's text, its
        #: order, its first lines: id and order)
        self.routes: dict[str, tuple[Route, str, str, str, int, str]] = {}
        self.clusters: Texts = {}
        #: file name -> (the pieces it was joined from, the SHA-256 of their bytes) of the last emit
        #: (not the bytes: the controller lets a part's bytes go once it is written)
        self.files: dict[str, tuple[list[str], str]] = {}
        #: the last emit's routes and their pieces
        self.last: tuple[tuple[Route, ...], Pieces] | None = None

    def clear(self) -> None:
        self.routes, self.clusters, self.files, self.last = {}, {}, {}, None

    def encode(self, name: str, pieces: list[str], files: dict[str, tuple[list[str], str]]
               ) -> tuple[bytes, str]:
        """``pieces`` joined and encoded, and their SHA-256: the last emit's hash when it had the
        same pieces under that name (kept in ``files``, the next emit's table)."""
        data = "".join(pieces).encode()
        last = self.files.get(name)
        if last is not None and last[0] == pieces:
            files[name] = last
            return data, last[1]
        entry = files[name] = (pieces, hashlib.sha256(data).hexdigest())
        return data, entry[1]


class _Writer:
    """One emit's tables: the text of each match body, host and behavior written so far."""

    def __init__(self, cache: EmitCache | None) -> None:
        self.cache = cache
        self.bodies: Texts = {}
        self.leads: dict[str, str] = {}
        self.behaviors: Texts = {}
        self.actions: Texts = {}
        self.destinations: Texts = {}

    def route(self, route: Route) -> tuple[Route, str, str, str]:
        """``(route, its id as written, its match line, the text of its behavior)``."""
        match = route.match
        hit = self.bodies.get(id(match))
        if hit is None or hit[0] is not match:
            hit = self.bodies[id(match)] = (match, _match_body(match))
        body = hit[1]
        ports = route.ports
        if ports:  # (after the host, before the request's own conditions)
            listed = f"ports: [{', '.join(map(str, ports))}]"
            body = f"{listed}, {body}" if body else listed
        host = route.host
        if host is None:
            line = f"  match: {{{body}}}\n"
        else:
            lead = self.leads.get(host)
            if lead is None:
                lead = self.leads[host] = f"  match: {{host: {_str(host)}"
            line = f"{lead}, {body}}}\n" if body else f"{lead}}}\n"
        rid = route.id
        if _sure_plain(rid) is None or rid.isalpha():
            rid = _str(rid)
        b = route.behavior
        hit = self.behaviors.get(id(b))
        if hit is None or hit[0] is not b:
            hit = self.behaviors[id(b)] = (b, _behavior_text(b, self.actions))
        return route, rid, line, hit[1]

    def routes_pieces(self, routes: Sequence[Route], first: int = 1) -> Pieces:
        """Each route's pieces: its id and ``order`` lines, its match line and its behavior's
        text (shared by the routes of a rule); a route the fast writer cannot write as one
        piece. (Three pieces, not one: the match line is kept by the cache, and only the short
        first piece is new text in each render.)"""
        cache = self.cache
        if cache is not None and first == 1:
            last = cache.last
            routes = tuple(routes)
            pieces = self._edited(routes, *last) if last is not None else None
            if pieces is None:
                pieces = self._routes_pieces(routes, 1)
            cache.last = (tuple(routes), pieces)
            return pieces
        return self._routes_pieces(routes, first)

    def _routes_pieces(self, routes: Sequence[Route], first: int) -> Pieces:
        texts: list[str] = []
        ends: list[int] = []
        sizes: list[int] = []
        cache = self.cache
        if cache is None:
            self._routes_pieces_into(routes, first, texts, ends, sizes, {}, None)
        else:
            cache.routes = self._routes_pieces_into(routes, first, texts, ends, sizes, cache.routes, {})
        return Pieces(texts, ends, sizes)

    def _edited(self, routes: Sequence[Route], before: tuple[Route, ...], pieces: Pieces) -> Pieces | None:
        """The pieces of ``routes`` from the pieces of the last emit's routes ``before``: the
        routes both begin and end with are taken as they were (those after a route added or
        removed get their new ``order`` line); only the routes between are written. None when
        most routes are between (then all are written)."""
        cache = self.cache
        assert cache is not None
        n_old, n_new = len(before), len(routes)
        p, s = common_ends(before, routes)
        if n_new - s - p > max(64, n_new // 4):
            return None
        entries = cache.routes
        cut = pieces.start(p)
        texts, ends, sizes = pieces.texts[:cut], pieces.ends[:p], pieces.sizes[:p]
        middle = self._routes_pieces_into(routes[p:n_new - s], p + 1, texts, ends, sizes, entries, {})
        if s:
            old_first = n_old - s
            if n_old == n_new:  # the same orders: the very pieces
                a = pieces.start(old_first)
                delta = len(texts) - a
                texts += pieces.texts[a:]
                tail = pieces.ends[old_first:]
                ends += [e + delta for e in tail] if delta else tail
                sizes += pieces.sizes[old_first:]
            else:
                self._routes_pieces_into(routes[n_new - s:], n_new - s + 1, texts, ends, sizes, entries, middle)
        for r in before[p:n_old - s]:  # (the routes gone: their entries; ids are unique in a document)
            entries.pop(r.id, None)
        entries.update(middle)
        return Pieces(texts, ends, sizes)

    def _routes_pieces_into(self, routes: Sequence[Route], first: int, texts: list[str], ends: list[int],
                            sizes: list[int], entries: dict[str, Any], new: dict[str, Any] | None
                            ) -> dict[str, Any]:
        """The pieces of ``routes`` (orders from ``first``) added to the lists, looking up
        written text in ``entries``; returns ``new`` with their entries for the cache (None:
        none kept)."""
        append, end, size = texts.append, ends.append, sizes.append
        keep = new is not None
        write = self.route
        n = first - 1
        for route in routes:
            n += 1
            hit = entries.get(route.id)
            if hit is None or hit[0] is not route:
                try:
                    hit = (*write(route), 0, "")
                except (_LongKey, _Fallback):
                    text = _fragment(route_data(route, n))
                    append(text)
                    size(utf8_size(text))
                    end(len(texts))
                    continue
            _, rid, line, tail, was, head = hit
            if was != n:
                head = f"- id: {rid}\n  order: {n}\n"
                hit = (route, rid, line, tail, n, head)
            if keep:
                new[route.id] = hit  # type: ignore[index]
            append(head)
            append(line)
            append(tail)
            # the writers' text is ASCII (non-ASCII is escaped): len is the size
            size(len(head) + len(line) + len(tail))
            end(len(texts))
        return new  # type: ignore[return-value]

    def clusters_pieces(self, clusters: Sequence[Cluster]) -> Pieces:
        texts: list[str] = []
        sizes: list[int] = []
        cache = self.cache
        old: Texts = cache.clusters if cache is not None else {}
        kept: Texts = {}
        for c in clusters:
            hit = old.get(id(c))
            if hit is None or hit[0] is not c:
                try:
                    text = _cluster_text(c, self.destinations)
                except (_LongKey, _Fallback):
                    text = _fragment(cluster_data(c))
                hit = (c, text)
            if cache is not None:
                kept[id(c)] = hit
            texts.append(hit[1])
            sizes.append(utf8_size(hit[1]))
        if cache is not None:
            cache.clusters = kept
        return Pieces(texts, list(range(1, len(texts) + 1)), sizes)


def route_text(route: Route, order: int) -> str:
    """One route's text, as :func:`emit` writes it."""
    return "".join(_Writer(None).routes_pieces([route], order).texts)


def cluster_text(cluster: Cluster) -> str:
    """One cluster's text, as :func:`emit` writes it."""
    return "".join(_Writer(None).clusters_pieces([cluster]).texts)


def _head(listeners: Sequence[m.Listener], certificates: Sequence[m.Certificate],
          include: Sequence[tuple[str, str]] | None = None) -> str:
    """The root's head in the same style as the items: one flow line per listener,
    certificate item and include entry."""
    out = [f"schemaVersion: {_str(SCHEMA_VERSION)}\n"]
    out.append("listeners:\n" if listeners else "listeners: []\n")
    out.extend([f"- {{host: {_str(x.host)}, port: {x.port}, type: transparent, "
                f"decryptSsl: {'true' if x.decrypt_ssl else 'false'}}}\n" for x in listeners])
    out.append("certificates:\n  items:\n" if certificates else "certificates:\n  items: []\n")
    for c in certificates:
        hosts = "[" + ", ".join([_str(h) for h in c.hosts]) + "]"
        out.append(f"  - {{file: {_str(c.file)}, hosts: {hosts}{', default: true' if c.default else ''}}}\n")
    if include is not None:
        out.append("include:\n" if include else "include: []\n")
        out.extend([f"- {{file: {_str(name)}, sha256: {_str(sha)}}}\n" for name, sha in include])
    return "".join(out)


class Pieces:
    """Items (routes or clusters) already written, as one flat list of strings: item ``i`` is
    ``texts[ends[i - 1]:ends[i]]`` (from 0 for the first), ``sizes[i]`` its UTF-8 size in
    bytes. A part is one ``join`` of a slice, with no tuple per item. Iterating gives each
    item's pieces as a tuple."""

    __slots__ = ("texts", "ends", "sizes")

    def __init__(self, texts: list[str], ends: list[int], sizes: list[int]) -> None:
        self.texts, self.ends, self.sizes = texts, ends, sizes

    def __len__(self) -> int:
        return len(self.sizes)

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        texts, start = self.texts, 0
        for end in self.ends:
            yield tuple(texts[start:end])
            start = end

    def start(self, i: int) -> int:
        """Index in ``texts`` of item ``i``'s first piece."""
        return self.ends[i - 1] if i else 0

    @classmethod
    def of(cls, items: Iterable[str], write: Callable[[Any], str] | None = None) -> Pieces:
        """Items given one by one as their text (or written with ``write``)."""
        texts: list[str] = []
        sizes: list[int] = []
        for item in items:
            text = item if type(item) is str or write is None else write(item)
            texts.append(text)
            sizes.append(utf8_size(text))
        return cls(texts, list(range(1, len(texts) + 1)), sizes)


def _list_block(key: str, items: Pieces, first: int, stop: int) -> list[str]:
    """The pieces of ``key:`` and items ``first`` to ``stop - 1`` (``key: []`` for none), to be
    joined with the rest of their document: one copy of the text, not one per block."""
    if first >= stop:
        return [f"{key}: []\n"]
    block = items.texts[items.start(first):items.ends[stop - 1]]
    block.insert(0, f"{key}:\n")
    return block


def utf8_size(text: str) -> int:
    """UTF-8 size: ``len`` for ASCII text (``isascii`` is O(1))."""
    return len(text) if text.isascii() else len(text.encode())


@dataclass(frozen=True)
class Emitted:
    config: bytes
    config_hash: str
    parts: tuple[tuple[str, bytes], ...] = ()
    delivery_error: str = ""


def emit(document: Document, *, part_limit: int, max_parts: int, cache: EmitCache | None = None) -> Emitted:
    """The document's bytes: the root ``twp.yaml``, and parts past ``part_limit`` bytes (routes
    then clusters, in order, greedily into parts of at most ``part_limit`` bytes).

    Memory: items are measured with ``len`` (ASCII), only the output returned is built, and
    each part's pieces are released once the part is encoded, so the peak holds about one copy
    of the document's text plus the output."""
    writer = _Writer(cache)
    route_items = writer.routes_pieces(document.routes)
    cluster_items = writer.clusters_pieces(document.clusters)
    del writer
    head = _head(document.listeners, document.certificates)
    n_routes, n_clusters = len(route_items), len(cluster_items)
    route_size, cluster_size = sum(route_items.sizes), sum(cluster_items.sizes)
    whole_size = (utf8_size(head) + route_size + cluster_size + (len("routes:\n") if n_routes else len("routes: []\n"))
                  + (len("clusters:\n") if n_clusters else len("clusters: []\n")))
    files: dict[str, tuple[list[str], str]] = {}
    if whole_size <= part_limit:
        pieces = _list_block("routes", route_items, 0, n_routes)
        pieces.insert(0, head)
        pieces += _list_block("clusters", cluster_items, 0, n_clusters)
        del route_items, cluster_items
        if cache is not None:
            data, digest = cache.encode("", pieces, files)
            cache.files = files
            return Emitted(data, digest)
        text = "".join(pieces)
        del pieces
        data = text.encode()
        del text
        return Emitted(data, hashlib.sha256(data).hexdigest())
    sizes = route_items.sizes + cluster_items.sizes
    total = len(sizes)
    error = ""
    budget = part_limit - _PART_OVERHEAD  # the items' bytes a part holds
    if sizes and max(sizes) > budget:
        total = next(i for i, n in enumerate(sizes) if n > budget)
        kind = "route" if total < n_routes else "cluster"
        error = f"one {kind} is {sizes[total]} bytes, more than the part limit of {part_limit} bytes"
    # part n holds items bounds[n] to bounds[n + 1] - 1 (routes, then clusters), as many as fit
    # in order: the last item whose running size is within the budget from the part's start
    ran = list(itertools.accumulate(sizes[:total], initial=0))
    bounds: list[int] = [0]
    while bounds[-1] < total:
        start = bounds[-1]
        bounds.append(bisect.bisect_right(ran, ran[start] + budget, start + 1) - 1)
    part_files: list[tuple[str, bytes]] = []
    digests: list[str] = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        r_first, r_stop = min(start, n_routes), min(end, n_routes)
        c_first, c_stop = max(start, n_routes) - n_routes, max(end, n_routes) - n_routes
        pieces = _list_block("routes", route_items, r_first, r_stop)
        pieces += _list_block("clusters", cluster_items, c_first, c_stop)
        name = f"twp.part-{len(part_files) + 1}.yaml"
        if cache is not None:  # (the cache holds the text: nothing to release)
            data, digest = cache.encode(name, pieces, files)
            part_files.append((name, data))
            digests.append(digest)
            continue
        text = "".join(pieces)
        del pieces
        for items, first, stop in ((route_items, r_first, r_stop), (cluster_items, c_first, c_stop)):
            if first < stop:  # release this part's pieces (the peak: about one document plus the output)
                a, b = items.start(first), items.ends[stop - 1]
                items.texts[a:b] = [""] * (b - a)
        data = text.encode()
        del text
        part_files.append((name, data))
        digests.append(hashlib.sha256(data).hexdigest())
    del route_items, cluster_items
    if cache is not None:
        cache.files = files
    include = [(name, digest) for (name, _), digest in zip(part_files, digests, strict=True)]
    root = _head(document.listeners, document.certificates, include).encode()
    if not error and len(part_files) > max_parts:
        error = (f"the config is {whole_size} bytes: it needs {len(part_files)} parts of at most {part_limit} bytes, "
                 f"but the data-plane pods mount only {max_parts}")
    if not error and len(root) > part_limit:
        error = f"the root config alone is {len(root)} bytes, more than {part_limit} bytes"
    return Emitted(root, hashlib.sha256(root).hexdigest(), tuple(part_files), error)
