"""Route precedence: ONE key function shared by HTTPRoute and Ingress.

The data plane takes the first route (lowest ``order``) whose match accepts a request, so the
render sorts every route by :func:`route_key` and numbers them. The order is the full Gateway
API order (contract, "Decisions"):

1. tier (0 for every normal route; 1 for a degraded 500 route; 2 for an Ingress
   defaultBackend: after everything),
2. the longest matching non-wildcard hostname (an exact host beats a wildcard beats none),
3. the longest hostname (wildcards included, ``*`` counted),
4. path type: Exact > RegularExpression > PathPrefix (no path counts as PathPrefix ``/``),
5. the longest path value,
6. a method match,
7. the number of header matches, then 8. the number of query matches,
9. the oldest object (creationTimestamp), 10. namespace, 11. name,
12. rule index, 13. match index, and finally the route id (unique) as the last tie breaker.

A GRPCRoute's routes have their own items 4-8 (:func:`grpc_match_part`, the GRPCRoute API's
order): the longest service, then the longest method, then the most header matches; they start
with ``/``, which sorts before the path type of every HTTPRoute and Ingress route, so at the same
host a GRPCRoute's route (its path is a gRPC method's) is tried before those routes.

Keys are strings whose order (``<``, ``sorted``) is that order: every number is written in a
fixed width (lengths and counts as ``0xFFFFFFFF - n`` in 8 hex digits, so that "longer first"
sorts first), the variable-length fields (creationTimestamp, namespace, name) each end with a
NUL, which sorts before any character they can hold (Kubernetes names and RFC 3339 times never
hold one). A sort of 60k string keys compares them with ``memcmp``, ~4x faster than the tuples
of 14 items the keys were before (benchmarks/FINDINGS.md R8). :func:`key_from_parts` leaves the
route id out: the render's entries are ``(key, route id, ...)``, so the id still breaks ties;
:func:`route_key` and :func:`key_from_match` end with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from titanium_gateway.twp.model import Match

PATH_TYPE_RANK = {"Exact": 0, "RegularExpression": 1, "PathPrefix": 2}
TIER_NORMAL = 0
#: A 500 route of a rule whose match cannot be expressed exactly (e.g. a header
#: RegularExpression): it carries only the expressible part of the match, so it is ordered
#: after every normal route and can never shadow another rule.
TIER_DEGRADED = 1
#: Tier of an Ingress defaultBackend route: after every other route of every source.
TIER_DEFAULT_BACKEND = 2
#: Sorts after every RFC 3339 timestamp: an object without creationTimestamp is "newest".
_MISSING_TIME = "~"

PrecedenceKey = str
#: Lengths and counts past this sort as equal (no hostname, path or list is 4 GiB long).
_TOP = 0xFFFFFFFF


def creation_timestamp(obj: Any) -> str:
    """``metadata.creationTimestamp`` as a sortable string (missing sorts last)."""
    meta = obj.get("metadata") if (type(obj) is dict or isinstance(obj, Mapping)) else None
    value = meta.get("creationTimestamp") if (type(meta) is dict or isinstance(meta, Mapping)) else None
    return value if isinstance(value, str) and value else _MISSING_TIME


def _longer_first(n: int) -> str:
    """"Longer first" (and "more first"): ``n`` in a fixed width, larger ``n`` sorting first."""
    if 0 <= n < _SHORT:
        return _LONGER_FIRST[n]
    return f"{_TOP - n:08x}" if 0 <= n <= _TOP else ("00000000" if n > _TOP else "ffffffff")


#: :func:`_longer_first` of the lengths most hostnames and paths have (a lookup, not a format).
_SHORT = 512
_LONGER_FIRST = tuple(f"{_TOP - n:08x}" for n in range(_SHORT))


def route_key(
    *,
    hostname: str | None,
    path_type: str | None,
    path: str | None,
    method: bool,
    headers: int,
    query: int,
    created: str,
    namespace: str,
    name: str,
    rule: int,
    match: int,
    route_id: str,
    tier: int = TIER_NORMAL,
) -> PrecedenceKey:
    """The precedence key of one data-plane route (smaller sorts first = wins).

    ``hostname`` is the match host (``None`` = any host; ``*.example.com`` a wildcard),
    ``path_type`` one of ``Exact``, ``RegularExpression``, ``PathPrefix`` (``None`` = any
    path, ranked as PathPrefix ``/``), ``created`` the object's creationTimestamp (see
    :func:`creation_timestamp`).
    """
    if path_type is None or path is None:
        rank, plen = PATH_TYPE_RANK["PathPrefix"], 1
    else:
        rank, plen = PATH_TYPE_RANK.get(path_type, 2), len(path)
    ranks = f"{rank}{_longer_first(plen)}{0 if method else 1}{_longer_first(headers)}{_longer_first(query)}"
    return key_from_parts(tier, host_part(hostname), ranks, owner_part(created, namespace, name), rule, match) + route_id


_PATH_KIND_TYPE = {"Exact": "Exact", "Regex": "RegularExpression", "Prefix": "PathPrefix"}


def host_part(host: str | None) -> str:
    """Items 2-3 of :func:`route_key` for a match host."""
    host = host or ""
    return _longer_first(len(host) if host and not host.startswith("*") else 0) + _longer_first(len(host))


_PATH_KIND_RANK = {kind: PATH_TYPE_RANK[t] for kind, t in _PATH_KIND_TYPE.items()}


def match_part(match: Match) -> str:
    """Items 4-8 of :func:`route_key` for a route's match (its host aside)."""
    path = match.path
    kind = match.path_kind
    rank = _PATH_KIND_RANK.get(kind) if path is not None and type(kind) is str else None
    if rank is None:
        rank, plen = PATH_TYPE_RANK["PathPrefix"], 1
    else:
        plen = len(path)  # type: ignore[arg-type]
    return (f"{rank}{_longer_first(plen)}{1 if match.method is None else 0}"
            f"{_longer_first(len(match.headers))}"
            f"{_longer_first(len(match.query) + len(match.query_regex))}")


def grpc_match_part(service: int, method: int, headers: int) -> str:
    """Items 4-8 of a GRPCRoute's route: the characters of its service and of its method, and
    its header matches, each "more first" (the GRPCRoute API's precedence)."""
    return f"/{_longer_first(service)}0{_longer_first(method)}{_longer_first(headers)}"


def match_of(match: Mapping[str, Any]) -> Match:
    """A data-plane ``match`` mapping (host aside) as a :class:`~titanium_gateway.twp.model.Match`."""
    def pairs(key: str) -> tuple[tuple[str, str], ...]:
        value = match.get(key)
        return tuple(value.items()) if isinstance(value, Mapping) else ()

    return Match(match.get("path"), match.get("pathKind"), match.get("method"), pairs("headers"), pairs("query"),
                 pairs("queryRegex"))


#: The 8-hex-digit text of the small list indexes (a lookup is ~4x cheaper than formatting).
_INDEX = tuple(f"{i:08x}" for i in range(256))


def owner_part(created: str, namespace: str, name: str) -> str:
    """Items 9-11 of :func:`route_key`: the route object's (computed once per object)."""
    return f"{created}\0{namespace}\0{name}\0"


def key_from_parts(tier: int, host: str, match: str, owner: str, rule: int, match_index: int) -> PrecedenceKey:
    """:func:`route_key` without the route id, from :func:`host_part`, :func:`match_part` and
    :func:`owner_part` (computed once per host, per match and per object by a caller that
    emits every host x match). ``rule`` and ``match_index`` are list indexes (0 or more)."""
    return (f"{tier}{host}{match}{owner}"
            f"{_INDEX[rule] if 0 <= rule < 256 else f'{rule:08x}'}"
            f"{_INDEX[match_index] if 0 <= match_index < 256 else f'{match_index:08x}'}")


def key_from_match(
    match: dict[str, Any],
    *,
    created: str,
    namespace: str,
    name: str,
    rule: int,
    match_index: int,
    route_id: str,
    tier: int = TIER_NORMAL,
) -> PrecedenceKey:
    """:func:`route_key` computed from a data-plane ``match`` dict (host/path/pathKind/...)."""
    return key_from_parts(tier, host_part(match.get("host")), match_part(match_of(match)),
                          owner_part(created, namespace, name), rule, match_index) + route_id
