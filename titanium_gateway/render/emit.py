"""Deterministic twp.yaml bytes, config hash and parts.

Key order is fixed (see the ``*_KEYS`` tuples) so the file reads top-down like the contract.
The whole document is written by a small block-style writer (see :func:`_fragment`): PyYAML's
Python representer costs ~40 µs per route (too slow for 10k routes), and libyaml raises on a
lone surrogate. Strings are plain when YAML reads them back as the same string, JSON
double-quoted when they are other printable ASCII, and escaped double-quoted otherwise, so the
file is pure ASCII. Anything that is not plain data falls back to PyYAML (``CSafeDumper`` when
libyaml is there). Routes and clusters are per-item fragments, which gives exact sizes for
splitting into parts in one pass. Every fragment parses back to its item.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.resolver import Resolver

try:
    _Dumper: type = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - libyaml missing
    _Dumper = yaml.SafeDumper

SCHEMA_VERSION = "7.1"
ROUTE_KEYS = ("id", "order", "match", "clusterId", "clusters", "redirect", "directResponse",
              "mirror", "transforms", "policies", "limits")
MATCH_KEYS = ("host", "path", "pathKind", "method", "headers", "query", "queryRegex")
REDIRECT_KEYS = ("statusCode", "scheme", "host", "port", "path")
CLUSTER_KEYS = ("id", "algorithm", "destinations", "sessionAffinity", "httpClient")
DEST_KEYS = ("id", "address", "port", "weight", "useHttps")
HTTP_CLIENT_KEYS = ("requestTimeout", "tls")
TLS_KEYS = ("caFile", "certFile", "keyFile")
_CLUSTER_ENTRY_KEYS = ("clusterId", "weight")
_MIRROR_KEYS = ("clusterId", "percent")
_KIND_KEYS = ("kind", "parameters")
#: Bytes of the two list headers in a part, an upper bound ("routes: []\n" + "clusters: []\n").
_PART_OVERHEAD = len("routes: []\n") + len("clusters: []\n")


def _ordered(d: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    out = {k: d[k] for k in keys if k in d}
    for k in sorted(k for k in d if k not in out):
        out[k] = d[k]
    return out


def canonical_route(route: Mapping[str, Any]) -> dict[str, Any]:
    out = _ordered(route, ROUTE_KEYS)
    if isinstance(out.get("match"), Mapping):
        out["match"] = _ordered(out["match"], MATCH_KEYS)
    if isinstance(out.get("redirect"), Mapping):
        out["redirect"] = _ordered(out["redirect"], REDIRECT_KEYS)
    if isinstance(out.get("clusters"), list):
        out["clusters"] = [_ordered(c, _CLUSTER_ENTRY_KEYS) if isinstance(c, Mapping) else c for c in out["clusters"]]
    if isinstance(out.get("mirror"), Mapping):
        out["mirror"] = _ordered(out["mirror"], ("clusterId", "percent"))
    for k in ("transforms", "policies"):
        if isinstance(out.get(k), list):
            out[k] = [_ordered(t, _KIND_KEYS) if isinstance(t, Mapping) else t for t in out[k]]
    return out


def canonical_cluster(cluster: Mapping[str, Any]) -> dict[str, Any]:
    out = _ordered(cluster, CLUSTER_KEYS)
    if isinstance(out.get("destinations"), list):
        out["destinations"] = [_ordered(d, DEST_KEYS) if isinstance(d, Mapping) else d for d in out["destinations"]]
    if isinstance(out.get("sessionAffinity"), Mapping):
        out["sessionAffinity"] = _ordered(out["sessionAffinity"], ("policy", "name"))
    client = out.get("httpClient")
    if isinstance(client, Mapping):
        client = _ordered(client, HTTP_CLIENT_KEYS)
        if isinstance(client.get("tls"), Mapping):
            client["tls"] = _ordered(client["tls"], TLS_KEYS)
        out["httpClient"] = client
    return out


def dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=1 << 20)


class _Fallback(Exception):
    """The fast writer met something it does not handle; PyYAML writes that item."""


_RESOLVER = Resolver()
_STR_TAG = "tag:yaml.org,2002:str"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_PLAIN = re.compile(r"[A-Za-z0-9/_.][A-Za-z0-9/_.:*@=+-]*")
_scalar_cache: dict[str, str] = {}
#: Entries of the scalar cache (kinds, keys, hosts, cluster ids repeat; route ids do not).
_SCALAR_CACHE_MAX = 32_768


def _remember(cache: dict[Any, str], key: Any, text: str) -> str:
    """``cache[key] = text``; a full cache is emptied first (bounded: recurring text comes back
    at once, unique ids do not pile up)."""
    if len(cache) >= _SCALAR_CACHE_MAX:
        cache.clear()
    cache[key] = text
    return text


def _quote(value: str) -> str:
    """A YAML double-quoted scalar in pure ASCII: anything but printable ASCII is escaped
    (``\\xXX``, ``\\uXXXX``, ``\\UXXXXXXXX``), so lone surrogates, control characters, NEL and
    LINE SEPARATOR can never break the file or its UTF-8 encoding."""
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif 0x20 <= code <= 0x7E:
            out.append(ch)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
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
#: A name whose characters keep a route id plain: an id that starts with a letter, holds a "/"
#: and is made of such names matches ``_SURE_PLAIN`` and is not all letters, so it is written as
#: it is (``plain_id`` of :func:`route_head_of_host`).
plain_name = re.compile(r"[A-Za-z0-9/_.-]*").fullmatch


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


def _write_mapping(data: Mapping[str, Any], indent: int, out: list[str], first: str | None = None) -> None:
    """The block-style writer (every level in block style): used for an item whose flow text
    would have a mapping key too long for a YAML implicit key (see :func:`_fragment`)."""
    pad = " " * indent
    for n, (key, value) in enumerate(data.items()):
        lead = first if (n == 0 and first is not None) else pad
        if not isinstance(key, str):
            raise _Fallback
        k = _scalar(key)
        kind = type(value)
        if kind is str or kind is int or kind is bool:
            out.append(f"{lead}{k}: {_scalar(value)}\n")
        elif isinstance(value, Mapping):
            if value:
                out.append(f"{lead}{k}:\n")
                _write_mapping(value, indent + 2, out)
            else:
                out.append(f"{lead}{k}: {{}}\n")
        elif isinstance(value, list):
            if value:
                out.append(f"{lead}{k}:\n")
                _write_sequence(value, indent, out)
            else:
                out.append(f"{lead}{k}: []\n")
        else:
            out.append(f"{lead}{k}: {_scalar(value)}\n")


def _write_sequence(items: Sequence[Any], indent: int, out: list[str]) -> None:
    pad = " " * indent
    for item in items:
        if isinstance(item, Mapping):
            if item:
                _write_mapping(item, indent + 2, out, first=pad + "- ")
            else:
                out.append(f"{pad}- {{}}\n")
        elif isinstance(item, list):
            raise _Fallback
        else:
            out.append(f"{pad}- {_scalar(item)}\n")


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
    if kind is _Raw:
        return str.__str__(value)
    if kind is dict or isinstance(value, Mapping):
        return "{" + ", ".join([f"{_key(k)}: {_flow(v)}" for k, v in value.items()]) + "}"
    if kind is list:
        return "[" + ", ".join([_flow(v) for v in value]) + "]"
    return _scalar(value)


def _flow_keyed(value: Any, keys: Sequence[str]) -> str:
    """A mapping in flow style with ``keys`` first, in that order (the contract's order), then
    any other key sorted; other values as :func:`_flow`."""
    if type(value) is not dict and not isinstance(value, Mapping):
        return _flow(value)
    flow = _flow
    parts = [f"{k}: {flow(value[k])}" for k in keys if k in value]
    if len(parts) != len(value):
        parts += [f"{_key(k)}: {flow(value[k])}" for k in sorted(k for k in value if k not in keys)]
    return "{" + ", ".join(parts) + "}"


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
    """One list item: block style for the item's own keys, flow style (one line) for every
    mapping below them and for each entry of a list below them::

        - id: httproute/apps/shop/r0m0
          order: 1
          match: {host: shop.example.com, path: /api, pathKind: Prefix}
          clusters:
          - {clusterId: svc-apps.api.8080, weight: 9}

    Keys in the item's own order (see :func:`route_fragment` for the contract's). An item
    with a mapping key too long for flow style is written in block style; anything that is
    not plain data goes through PyYAML.
    """
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
    out = []
    try:
        _write_sequence([item], 0, out)
    except _Fallback:
        return dump([item])
    return "".join(out)


_ROUTE_KEY_SET = frozenset(ROUTE_KEYS)
_CLUSTER_KEY_SET = frozenset(CLUSTER_KEYS)


# Writers of the fixed-shape values below an item's own keys: the common shapes as one
# template each (what a render writes ~100k times), anything else through _flow_keyed. Each
# returns exactly what ``_flow_keyed(value, <shape keys>)`` returns (tests/render/test_emit.py).


#: Text of the entries that recur across rules (a Service's weighted cluster entry, a header
#: transform): ``(clusterId, weight)`` or ``(kind, name, value or None)`` -> text. Keys hold
#: exact types (an int weight, str names and values), so equal keys write the same text.
_entry_cache: dict[tuple[Any, ...], str] = {}


def _cluster_entry(x: Any) -> str:
    """A weighted cluster entry ``{clusterId: .., weight: ..}``."""
    if type(x) is dict and len(x) == 2:
        cid, weight = x.get("clusterId"), x.get("weight")
        if type(cid) is str and type(weight) is int:
            key = (cid, weight)
            text = _entry_cache.get(key)
            if text is None:
                text = _remember(_entry_cache, key, f"{{clusterId: {_str(cid)}, weight: {weight}}}")
            return text
    return _flow_keyed(x, _CLUSTER_ENTRY_KEYS)


def _flow_params(params: dict[str, Any]) -> str:
    """:func:`_flow` of a mapping, ``str`` values without a call each (``{name, value}`` and
    ``{name}``, the header transforms' parameters, as templates)."""
    name = params.get("name")
    if type(name) is str:
        n = len(params)
        if n == 1:
            return f"{{name: {_str(name)}}}"
        value = params.get("value")
        if n == 2 and type(value) is str and next(iter(params)) == "name":
            return f"{{name: {_str(name)}, value: {_str(value)}}}"
    return "{" + ", ".join([f"{_key(k)}: {_str(v) if type(v) is str else _flow(v)}" for k, v in params.items()]) + "}"


def _kind_entry(x: Any) -> str:
    """A transform or policy ``{kind: .., parameters: {..}}``."""
    if type(x) is dict and len(x) == 2:
        kind, params = x.get("kind"), x.get("parameters")
        if type(kind) is str and type(params) is dict:
            name, n = params.get("name"), len(params)
            if type(name) is str and (n == 1 or n == 2 and type(params.get("value")) is str
                                      and next(iter(params)) == "name"):
                key = (kind, name, params.get("value"))  # {name} or {name, value}, in that order
                text = _entry_cache.get(key)
                if text is not None:
                    return text
                return _remember(_entry_cache, key, f"{{kind: {_str(kind)}, parameters: {_flow_params(params)}}}")
            return f"{{kind: {_str(kind)}, parameters: {_flow_params(params)}}}"
    return _flow_keyed(x, _KIND_KEYS)


def _dest_entry(x: Any) -> str:
    """A destination ``{id, address, port, weight, useHttps}``."""
    if type(x) is dict and len(x) == 5:
        did, address, port, weight, https = (x.get("id"), x.get("address"), x.get("port"), x.get("weight"),
                                             x.get("useHttps"))
        if (type(did) is str and type(address) is str and type(port) is int and type(weight) is int
                and type(https) is bool):
            # _str inlined for the common case: an IPv4 address and "address:port" are plain
            if _sure_plain(did) is None or did.isalpha():
                did = _str(did)
            if _sure_plain(address) is None or address.isalpha():
                address = _str(address)
            return (f"{{id: {did}, address: {address}, port: {port}, weight: {weight}, "
                    f"useHttps: {'true' if https else 'false'}}}")
    return _flow_keyed(x, DEST_KEYS)


#: Every key sequence of a match in the contract's order (the subsequences of MATCH_KEYS).
_MATCH_ORDERS = frozenset(tuple(k for i, k in enumerate(MATCH_KEYS) if bits >> i & 1)
                          for bits in range(1 << len(MATCH_KEYS)))


def _match(m: Any) -> str:
    """A route match: ``{host, path, pathKind}`` as a template; any other match whose keys are
    in the contract's order in one pass."""
    if type(m) is dict:
        if len(m) == 3:
            host, path, kind = m.get("host"), m.get("path"), m.get("pathKind")
            if type(path) is str and type(kind) is str and type(host) is str:
                return f"{{host: {_str(host)}, path: {_str(path)}, pathKind: {_str(kind)}}}"
        if tuple(m) in _MATCH_ORDERS:
            return "{" + ", ".join([
                f"{k}: {_str(v) if type(v) is str else _flow_params(v) if type(v) is dict else _flow(v)}"
                for k, v in m.items()]) + "}"
    return _flow_keyed(m, MATCH_KEYS)


def _keyed(keys: Sequence[str]) -> Callable[[Any], str]:
    def write(value: Any) -> str:
        return _flow_keyed(value, keys)
    return write


_ROUTE_LIST_SHAPES = {"clusters": _cluster_entry, "transforms": _kind_entry, "policies": _kind_entry}
_ROUTE_MAP_SHAPES = {"match": _match, "redirect": _keyed(REDIRECT_KEYS), "mirror": _keyed(_MIRROR_KEYS)}
_CLUSTER_LIST_SHAPES = {"destinations": _dest_entry}
_CLUSTER_MAP_SHAPES = {"sessionAffinity": _keyed(("policy", "name")), "httpClient": _keyed(HTTP_CLIENT_KEYS)}


def _shaped(item: Mapping[str, Any], keys: Sequence[str], list_shapes: Mapping[str, Callable[[Any], str]],  # noqa: C901
            map_shapes: Mapping[str, Callable[[Any], str]], lead: str = "- ",
            lists: dict[int, tuple[Any, str]] | None = None) -> str:
    """An item whose keys are all in ``keys``, written in that order without copying it, with
    the contract's key order inside the fixed-shape parts (``*_shapes``: key -> writer). ``lead`` prefixes
    the first line (``"  "``: the continuation of an item begun elsewhere). ``lists``: the
    lines of each fixed-shape list by identity (the caller keeps the lists alive and
    unchanged while it is used), for lists that several items share."""
    out: list[str] = []
    for k in keys:
        if k not in item:
            continue
        v = item[k]
        kind = type(v)
        if kind is str:
            out.append(f"{lead}{k}: {_str(v)}\n")
        elif kind is int:
            out.append(f"{lead}{k}: {v}\n")
        elif (kind is list or isinstance(v, list)) and v:
            out.append(f"{lead}{k}:\n")
            write = list_shapes.get(k, _flow)
            if lists is None or write is _flow:
                out.extend([f"  - {write(x)}\n" for x in v])
            else:
                hit = lists.get(id(v))
                if hit is None or hit[0] is not v:
                    hit = lists[id(v)] = (v, "".join([f"  - {write(x)}\n" for x in v]))
                out.append(hit[1])
        else:
            write = map_shapes.get(k, _flow)
            if k == "httpClient" and isinstance(v, Mapping) and isinstance(v.get("tls"), Mapping):
                v = {**v, "tls": _Raw(_flow_keyed(v["tls"], TLS_KEYS))}
            out.append(f"{lead}{k}: {write(v)}\n")
        lead = "  "
    return "".join(out) if out else "- {}\n"


def route_fragment(route: Mapping[str, Any]) -> str:
    """``_fragment(canonical_route(route))`` without the copies: keys in the contract's order
    straight from the translator's dicts (a test checks the two agree on any input)."""
    try:
        if isinstance(route, Mapping) and route.keys() <= _ROUTE_KEY_SET:
            return _shaped(route, ROUTE_KEYS, _ROUTE_LIST_SHAPES, _ROUTE_MAP_SHAPES)
    except (_LongKey, _Fallback):
        pass
    return _fragment(canonical_route(route))


def route_fragment_split(route: Mapping[str, Any]) -> tuple[str, str] | None:
    """The fragment of a route given WITHOUT ``order``, cut after its first line: ``(head,
    tail)`` such that ``head + f"  order: {n}\\n" + tail == route_fragment({**route, "order": n})``
    (the ``id`` line comes first and every scalar is one line). None when the route is not of
    the fast path's shape: write it with :func:`route_fragment` once its order is known."""
    try:
        if "order" not in route and "id" in route and route.keys() <= _ROUTE_KEY_SET:
            frag = _shaped(route, ROUTE_KEYS, _ROUTE_LIST_SHAPES, _ROUTE_MAP_SHAPES)
            cut = frag.find("\n") + 1
            return frag[:cut], frag[cut:]
    except (_LongKey, _Fallback):
        pass
    return None


_TAIL_KEYS = tuple(k for k in ROUTE_KEYS if k not in ("id", "order", "match"))
_TAIL_KEY_SET = frozenset(_TAIL_KEYS)


def route_tail(rest: Mapping[str, Any]) -> str | None:
    """The lines of a route after its ``match`` line (``rest`` holds the route's other keys:
    its action, mirror, transforms...), to share between the routes of one rule that differ
    only in ``id`` and ``match``; None when the fast writer cannot write them."""
    try:
        if rest and rest.keys() <= _TAIL_KEY_SET:
            return _shaped(rest, _TAIL_KEYS, _ROUTE_LIST_SHAPES, _ROUTE_MAP_SHAPES, lead="  ")
    except (_LongKey, _Fallback):
        pass
    return None


def kind_lines(items: Sequence[Any]) -> str | None:
    """The item lines of ``route_tail({"policies": items})`` (or of ``transforms``): what
    follows its first line, ``"  policies:\n"``, for a non-empty list, so a list's lines can be
    written in runs and joined (a test checks the concatenation); "" for no items; None when
    the fast writer cannot write one of them."""
    try:
        return "".join([f"  - {_kind_entry(x)}\n" for x in items])
    except (_LongKey, _Fallback):
        return None


def transforms_block(transforms: Sequence[Any]) -> str | None:
    """``route_tail({"transforms": transforms})`` for a non-empty list, without the scan of a
    route's keys (a rule's header transforms are written once per filter list: often once per
    route)."""
    if type(transforms) is list and transforms:
        lines = kind_lines(transforms)
        return None if lines is None else "  transforms:\n" + lines
    return route_tail({"transforms": transforms})


def route_head(route_id: str, match: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(id line, match line)`` exactly as :func:`route_fragment_split` writes them; None when
    the fast writer cannot."""
    try:
        if type(route_id) is str and type(match) is dict:
            return f"- id: {_str(route_id)}\n", f"  match: {_match(match)}\n"
    except (_LongKey, _Fallback):
        pass
    return None


#: The text of a match without ``host``, by content (a few paths and headers recur across
#: thousands of routes): keys hold strings only, so equal keys write the same text.
_body_cache: dict[tuple[Any, ...], str] = {}


def _match_body(match: dict[str, Any]) -> str:
    """:func:`_match` of a match without ``host``, cached by content when every value is a
    string or a mapping of strings."""
    key: list[Any] = []
    for k, v in match.items():
        if type(v) is str:
            key.append((k, v))
        elif type(v) is dict and all(type(x) is str for x in v.values()):
            key.append((k, tuple(v.items())))  # (its keys: a non-str key fails the writer anyway)
        else:
            return _match(match)
    tkey = tuple(key)
    text = _body_cache.get(tkey)
    return text if text is not None else _remember(_body_cache, tkey, _match(match))


def match_body(match: Mapping[str, Any]) -> str | None:
    """The text of a ``match`` without a host as :func:`route_head_of_host` writes it (to hand
    it the text of a match written many times); None when the fast writer cannot write it."""
    try:
        if type(match) is dict and "host" not in match:
            return _match_body(match)
    except (_LongKey, _Fallback):
        pass
    return None


def match_lead(host: str) -> str:
    """The start of the match line of a route with this (non-empty) host: for a match body
    (:func:`match_body`) other than ``{}`` and an id the caller knows is plain,
    :func:`route_head_of_host` is ``("- id: <id>\\n", match_lead(host) + body[1:] + "\\n")``
    (a test checks it), which the render writes once per data-plane route."""
    return f"  match: {{host: {_str(host)}, "


def route_head_of_host(route_id: str, host: str | None, match: Mapping[str, Any],
                       body: str | None = None, plain_id: bool = False) -> tuple[str, str] | None:
    """:func:`route_head` of ``route_id`` and ``{"host": host, **match}`` (no host when
    ``host`` is empty) for a ``match`` without a host of its own, whose text is shared by
    every route with the same match. ``body``: :func:`match_body` of ``match``, when the
    caller has it; ``plain_id``: the caller checked that ``_SURE_PLAIN`` matches ``route_id``
    and that it is not all letters (it is written as it is)."""
    try:
        if type(route_id) is str and type(match) is dict and "host" not in match and (not host or type(host) is str):
            id_line = f"- id: {route_id if plain_id else _str(route_id)}\n"
            if body is None:
                body = _match_body(match)
            if not host:
                return id_line, f"  match: {body}\n"
            if body == "{}":
                return id_line, f"  match: {{host: {_str(host)}}}\n"  # type: ignore[arg-type]
            return id_line, f"{match_lead(host)}{body[1:]}\n"  # type: ignore[arg-type]
    except (_LongKey, _Fallback):
        pass
    return None


def cluster_fragment(cluster: Mapping[str, Any], lists: dict[int, tuple[Any, str]] | None = None) -> str:
    """``_fragment(canonical_cluster(cluster))`` without the copies. ``lists``: a memo for the
    clusters written in one go, which keeps their ``destinations`` lists alive and unchanged:
    the clusters of one Service port with different settings share one list (backends.py),
    whose lines are then written once."""
    try:
        if isinstance(cluster, Mapping) and cluster.keys() <= _CLUSTER_KEY_SET:
            return _shaped(cluster, CLUSTER_KEYS, _CLUSTER_LIST_SHAPES, _CLUSTER_MAP_SHAPES, lists=lists)
    except (_LongKey, _Fallback):
        pass
    return _fragment(canonical_cluster(cluster))


class _Raw(str):
    """Text already written in flow style (not a scalar to quote)."""


def _head(schema_version: str, listeners: Sequence[Mapping[str, Any]], certificates: Sequence[Mapping[str, Any]],
          include: Sequence[Mapping[str, Any]] | None = None) -> str:
    """The root's head in the same style as the items: one flow line per listener,
    certificate item and include entry."""
    try:
        out = [f"schemaVersion: {_flow(schema_version)}\n"]
        out.append("listeners:\n" if listeners else "listeners: []\n")
        out.extend([f"- {_flow(x)}\n" for x in listeners])
        out.append("certificates:\n  items:\n" if certificates else "certificates:\n  items: []\n")
        out.extend([f"  - {_flow(x)}\n" for x in certificates])
        if include is not None:
            out.append("include:\n" if include else "include: []\n")
            out.extend([f"- {_flow(x)}\n" for x in include])
        return "".join(out)
    except (_LongKey, _Fallback):
        data: dict[str, Any] = {"schemaVersion": schema_version, "listeners": [dict(x) for x in listeners],
                                "certificates": {"items": [dict(c) for c in certificates]}}
        if include is not None:
            data["include"] = [dict(i) for i in include]
        return dump(data)


#: A fragment: its text, or the pieces it is the concatenation of (joined only when written)
Fragment = str | tuple[str, ...]


class Pieces:
    """Items (routes or clusters) already written, as one flat list of strings: item ``i`` is
    ``texts[ends[i - 1]:ends[i]]`` (from 0 for the first), ``sizes[i]`` its UTF-8 size in
    bytes. The render hands its routes over this way (``RenderContext.take_ordered_routes``):
    a part is one ``join`` of a slice, with no tuple per route. Iterating gives each item's
    pieces as a tuple (a :data:`Fragment`)."""

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
    def of(cls, items: Iterable[Mapping[str, Any] | Fragment], write: Callable[[Any], str]) -> Pieces:
        """Items given one by one: their text, their pieces, or a dict written with ``write``.
        Sizes: ``len`` of ASCII text; the pieces of a tuple are the fast writer's, which writes
        ASCII only (non-ASCII is escaped; only the PyYAML fallback writes UTF-8, and never into
        a tuple), so their ``len`` is their size."""
        texts: list[str] = []
        ends: list[int] = []
        sizes: list[int] = []
        for item in items:
            if type(item) is tuple:
                texts += item
                sizes.append(sum(map(len, item)))
            else:
                text = item if type(item) is str else write(item)
                texts.append(text)  # type: ignore[arg-type]
                sizes.append(utf8_size(text))  # type: ignore[arg-type]
            ends.append(len(texts))
        return cls(texts, ends, sizes)


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


def emit(
    listeners: Sequence[Mapping[str, Any]],
    certificates: Sequence[Mapping[str, Any]],
    routes: Iterable[Mapping[str, Any] | Fragment],
    clusters: Iterable[Mapping[str, Any] | str],
    *,
    part_limit: int,
    max_parts: int,
) -> Emitted:
    """Assemble the root document (and parts past ``part_limit`` bytes).

    ``routes`` are route dicts (with ``order``) or their fragments already written, as one
    string or as the tuple of strings it is made of (joined only into the part that holds it),
    or :class:`Pieces` (the render's: ``id and order lines, match line, tail`` of each route,
    text its cache keeps anyway); ``clusters`` are dicts or fragments.
    Memory: fragments are measured with ``len`` (ASCII), only the output returned is built, and
    each part's pieces are released once the part is encoded, so the peak holds about one copy
    of the document plus the output.
    """
    route_items = routes if type(routes) is Pieces else Pieces.of(routes, route_fragment)
    lists: dict[int, tuple[Any, str]] = {}  # (the clusters keep their lists alive meanwhile)
    cluster_items = Pieces.of(clusters, lambda cluster: cluster_fragment(cluster, lists))
    head = _head(SCHEMA_VERSION, listeners, certificates)
    n_routes, n_clusters = len(route_items), len(cluster_items)
    route_size, cluster_size = sum(route_items.sizes), sum(cluster_items.sizes)
    whole_size = (utf8_size(head) + route_size + cluster_size + (len("routes:\n") if n_routes else len("routes: []\n"))
                  + (len("clusters:\n") if n_clusters else len("clusters: []\n")))
    if whole_size <= part_limit:
        pieces = _list_block("routes", route_items, 0, n_routes)
        pieces.insert(0, head)
        pieces += _list_block("clusters", cluster_items, 0, n_clusters)
        text = "".join(pieces)
        del pieces
        del route_items, cluster_items
        data = text.encode()
        del text
        return Emitted(data, hashlib.sha256(data).hexdigest())
    # split: routes then clusters, in order, greedily into parts of at most part_limit bytes
    sizes = route_items.sizes + cluster_items.sizes
    total = len(sizes)
    bounds: list[int] = [0]  # part n holds items bounds[n] to bounds[n + 1] - 1 (routes, then clusters)
    error = ""
    size = _PART_OVERHEAD
    for i, n in enumerate(sizes):
        if n + _PART_OVERHEAD > part_limit:
            kind = "route" if i < n_routes else "cluster"
            error = f"one {kind} is {n} bytes, more than the part limit of {part_limit} bytes"
            total = i
            break
        if size + n > part_limit:
            bounds.append(i)
            size = _PART_OVERHEAD
        size += n
    if bounds[-1] < total:
        bounds.append(total)
    part_files: list[tuple[str, bytes]] = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        r_first, r_stop = min(start, n_routes), min(end, n_routes)
        c_first, c_stop = max(start, n_routes) - n_routes, max(end, n_routes) - n_routes
        pieces = _list_block("routes", route_items, r_first, r_stop)
        pieces += _list_block("clusters", cluster_items, c_first, c_stop)
        text = "".join(pieces)
        del pieces
        for items, first, stop in ((route_items, r_first, r_stop), (cluster_items, c_first, c_stop)):
            if first < stop:  # release this part's pieces (the peak: about one document plus the output)
                a, b = items.start(first), items.ends[stop - 1]
                items.texts[a:b] = [""] * (b - a)
        part_files.append((f"twp.part-{len(part_files) + 1}.yaml", text.encode()))
        del text
    del route_items, cluster_items
    include = [{"file": name, "sha256": hashlib.sha256(body).hexdigest()} for name, body in part_files]
    root = _head(SCHEMA_VERSION, listeners, certificates, include).encode()
    if not error and len(part_files) > max_parts:
        error = (f"the config is {whole_size} bytes: it needs {len(part_files)} parts of at most {part_limit} bytes, "
                 f"but the data-plane pods mount only {max_parts}")
    if not error and len(root) > part_limit:
        error = f"the root config alone is {len(root)} bytes, more than {part_limit} bytes"
    return Emitted(root, hashlib.sha256(root).hexdigest(), tuple(part_files), error)
