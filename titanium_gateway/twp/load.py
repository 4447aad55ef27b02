"""Reading a twp document back into :mod:`titanium_gateway.twp.model` values.

:func:`read_document` takes a parsed ``twp.yaml`` (and its parts, in include order) and gives
the :class:`~titanium_gateway.twp.model.Document` the render would have written it from
(provenance unknown); it raises ValueError on what the render never writes.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from titanium_gateway.twp.model import (
    POLICY_KINDS,
    TRANSFORM_KINDS,
    UNKNOWN_SOURCE,
    Action,
    Behavior,
    Certificate,
    Cluster,
    Destination,
    DirectResponse,
    Document,
    Forward,
    HttpClient,
    Limits,
    Listener,
    Match,
    Mirror,
    Pairs,
    Redirect,
    Route,
    SessionAffinity,
    Split,
    UpstreamTls,
    WeightedCluster,
    twp_key,
)

T = TypeVar("T")
KINDS: Mapping[str, type[Any]] = {cls.KIND: cls for cls in (*TRANSFORM_KINDS, *POLICY_KINDS)}


def _pairs(value: Any) -> Pairs:
    return tuple((str(k), v) for k, v in (value or {}).items())


def _kind_item(item: Mapping[str, Any]) -> Any:
    cls = KINDS[item["kind"]]
    params = item.get("parameters") or {}
    hints = typing.get_type_hints(cls)
    args = {}
    for f in dataclasses.fields(cls):
        raw = params[twp_key(f.name)]
        hint = hints[f.name]
        args[f.name] = int(raw) if hint is int else tuple(raw) if typing.get_origin(hint) is tuple else raw
    if set(params) != {twp_key(f.name) for f in dataclasses.fields(cls)}:
        raise ValueError(f"{item['kind']}: unknown parameters {sorted(params)}")
    return cls(**args)


def _optional(cls: type[T], value: Any) -> T | None:
    if value is None:
        return None
    return cls(**{f.name: value[twp_key(f.name)] for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                  if twp_key(f.name) in value})


_ROUTE_KEYS = frozenset({"id", "order", "match", "clusterId", "clusters", "redirect", "directResponse", "mirror",
                         "transforms", "policies", "limits"})
_MATCH_KEYS = frozenset({"host", "path", "pathKind", "method", "headers", "query", "queryRegex"})
_CLUSTER_KEYS = frozenset({"id", "algorithm", "destinations", "sessionAffinity", "httpClient"})


def read_route(item: Mapping[str, Any]) -> Route:
    """A parsed route (``order`` aside) as a :class:`Route` (provenance unknown)."""
    if not set(item) <= _ROUTE_KEYS:
        raise ValueError(f"route {item.get('id')}: unknown keys {sorted(set(item) - _ROUTE_KEYS)}")
    m = item.get("match") or {}
    if not set(m) <= _MATCH_KEYS:
        raise ValueError(f"route {item.get('id')}: unknown match keys {sorted(set(m) - _MATCH_KEYS)}")
    match = Match(path=m.get("path"), path_kind=m.get("pathKind"), method=m.get("method"),
                  headers=_pairs(m.get("headers")), query=_pairs(m.get("query")),
                  query_regex=_pairs(m.get("queryRegex")))
    actions: list[Action] = []
    if "clusterId" in item:
        actions.append(Forward(item["clusterId"]))
    if "clusters" in item:
        actions.append(Split(tuple(WeightedCluster(c["clusterId"], c["weight"]) for c in item["clusters"])))
    if "redirect" in item:
        actions.append(_optional(Redirect, item["redirect"]))  # type: ignore[arg-type]
    if "directResponse" in item:
        actions.append(_optional(DirectResponse, item["directResponse"]))  # type: ignore[arg-type]
    if len(actions) != 1:
        raise ValueError(f"route {item.get('id')}: {len(actions)} actions")
    behavior = Behavior(
        actions[0], _optional(Mirror, item.get("mirror")),
        tuple(_kind_item(t) for t in item.get("transforms") or ()),
        tuple(_kind_item(p) for p in item.get("policies") or ()),
        _optional(Limits, item.get("limits")),
    )
    return Route(item["id"], m.get("host"), match, behavior, "", UNKNOWN_SOURCE, -1, -1)


def read_cluster(item: Mapping[str, Any]) -> Cluster:
    if not set(item) <= _CLUSTER_KEYS:
        raise ValueError(f"cluster {item.get('id')}: unknown keys {sorted(set(item) - _CLUSTER_KEYS)}")
    client = item.get("httpClient")
    return Cluster(
        id=item["id"], algorithm=item.get("algorithm"),
        destinations=tuple(_optional(Destination, d) for d in item.get("destinations") or ()),  # type: ignore[misc]
        session_affinity=_optional(SessionAffinity, item.get("sessionAffinity")),
        http_client=None if client is None else HttpClient(client.get("requestTimeout"),
                                                           _optional(UpstreamTls, client.get("tls"))),
    )


def read_document(root: Mapping[str, Any], parts: Sequence[Mapping[str, Any]] = ()) -> Document:
    """A parsed ``twp.yaml`` (and its parts, in include order) as a :class:`Document`; raises
    ValueError on what the render never writes (unknown keys, an ``order`` that is not the
    position)."""
    routes: list[Any] = list(root.get("routes") or ())
    clusters: list[Any] = list(root.get("clusters") or ())
    for part in parts:
        routes += part.get("routes") or ()
        clusters += part.get("clusters") or ()
    for n, item in enumerate(routes):
        if item.get("order") != n + 1:
            raise ValueError(f"route {item.get('id')}: order {item.get('order')} at position {n + 1}")
    listeners = []
    for item in root.get("listeners") or ():
        if item.get("host") != "0.0.0.0" or item.get("type") != "transparent":
            raise ValueError(f"listener {item}: not a transparent listener on 0.0.0.0")
        listeners.append(Listener(item["port"], item["decryptSsl"]))
    certificates = tuple(Certificate(c["file"], tuple(c["hosts"]), c.get("default", False))
                         for c in (root.get("certificates") or {}).get("items") or ())
    return Document(tuple(listeners), certificates, tuple(map(read_route, routes)), tuple(map(read_cluster, clusters)))
