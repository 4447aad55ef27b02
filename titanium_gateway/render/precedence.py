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

Keys are plain tuples: compare them with ``<`` or ``sorted``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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

PrecedenceKey = tuple[Any, ...]


def creation_timestamp(obj: Any) -> str:
    """``metadata.creationTimestamp`` as a sortable string (missing sorts last)."""
    meta = obj.get("metadata") if (type(obj) is dict or isinstance(obj, Mapping)) else None
    value = meta.get("creationTimestamp") if (type(meta) is dict or isinstance(meta, Mapping)) else None
    return value if isinstance(value, str) and value else _MISSING_TIME


def _longer_first(n: int) -> int:
    """"Longer first" as small non-negative ints where possible (CPython shares 0..256: no
    allocation per key; hostnames have at most 253 characters), negative past 256 (still
    smaller, so the order is the same as plain negation)."""
    return 256 - n if n <= 256 else -n


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
    return key_from_parts(tier, host_part(hostname), (rank, _longer_first(plen), 0 if method else 1, -headers, -query),
                          created, namespace, name, rule, match, route_id)


_PATH_KIND_TYPE = {"Exact": "Exact", "Regex": "RegularExpression", "Prefix": "PathPrefix"}


def host_part(host: str | None) -> tuple[int, int]:
    """Items 2-3 of :func:`route_key` for a match host."""
    host = host or ""
    return (_longer_first(len(host) if host and not host.startswith("*") else 0), _longer_first(len(host)))


_PATH_KIND_RANK = {kind: PATH_TYPE_RANK[t] for kind, t in _PATH_KIND_TYPE.items()}


def match_part(match: Mapping[str, Any]) -> tuple[int, int, int, int, int]:
    """Items 4-8 of :func:`route_key` for a data-plane ``match`` dict (its host aside)."""
    path = match.get("path")
    kind = match.get("pathKind")
    rank = _PATH_KIND_RANK.get(kind) if path is not None and type(kind) is str else None
    if rank is None:
        rank, plen = PATH_TYPE_RANK["PathPrefix"], 1
    else:
        plen = len(path)  # type: ignore[arg-type]
    headers, query, query_regex = match.get("headers"), match.get("query"), match.get("queryRegex")
    return (rank, _longer_first(plen), 0 if "method" in match else 1,
            -len(headers) if headers else 0, -((len(query) if query else 0) + (len(query_regex) if query_regex else 0)))


def key_from_parts(tier: int, host: tuple[int, int], match: tuple[int, int, int, int, int], created: str,
                   namespace: str, name: str, rule: int, match_index: int, route_id: str) -> PrecedenceKey:
    """:func:`route_key` from :func:`host_part` and :func:`match_part` (computed once per host
    and once per match by a caller that emits every host x match)."""
    return (tier, host[0], host[1], match[0], match[1], match[2], match[3], match[4],
            created, namespace, name, rule, match_index, route_id)


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
    return key_from_parts(tier, host_part(match.get("host")), match_part(match), created, namespace, name, rule,
                          match_index, route_id)
