"""The twp document as typed, immutable values: what the translators build and ``emit`` writes.

The classes mirror ``twp.schema.json`` (field names in snake_case; the document's keys are their
camelCase, e.g. ``path_kind`` -> ``pathKind``), with two choices of their own:

* a :class:`Route` holds its match ``host`` itself and the rest of its match as a :class:`Match`,
  and everything that is not its id or match as one :class:`Behavior` (action, mirror,
  transforms, policies, limits): the routes of one rule share their match over its hosts and
  their behavior over its matches, so those parts are built once and referenced;
* a route knows where it came from (:attr:`Route.source`, rule and match index, the host it was
  emitted for, its precedence key) and a cluster its backend (:attr:`Cluster.backend`); these
  provenance fields are never emitted and take no part in equality (``route == read back``).

Every value is a frozen, slotted dataclass; tuples stand for lists and mappings (a mapping as a
tuple of ``(key, value)`` pairs in document order). :class:`Match`, :class:`Behavior` and
:class:`Cluster` compute their hash once (they key emit's text tables).
:func:`read_document` reads a parsed document back into these values (tests, tools).
"""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

SCHEMA_VERSION = "7.1"
T = TypeVar("T")


class _Hashed:
    """Base of the values whose hash is computed once (slot ``_hash``, set on first use)."""

    __slots__ = ("_hash",)


def _cache_hash(cls: type[T]) -> type[T]:
    computed = cls.__hash__

    def __hash__(self: Any) -> int:
        try:
            return self._hash  # type: ignore[no-any-return]
        except AttributeError:
            h = computed(self)  # type: ignore[arg-type]
            object.__setattr__(self, "_hash", h)
            return h

    cls.__hash__ = __hash__  # type: ignore[method-assign, assignment]
    return cls


def _fast_init(cls: type[T]) -> type[T]:
    """Replace a frozen slotted dataclass's ``__init__`` (which sets each field through
    ``object.__setattr__``) by one that sets the slots through their descriptors, with the
    same parameters: the same object, about twice as fast to make."""
    params, body, env = [], [], {}
    kw = False
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.kw_only and not kw:
            params.append("*")
            kw = True
        if f.default is not dataclasses.MISSING:
            env[f"_d_{f.name}"] = f.default
            params.append(f"{f.name}=_d_{f.name}")
        else:
            params.append(f.name)
        env[f"_s_{f.name}"] = cls.__dict__[f.name].__set__
        body.append(f"    _s_{f.name}(self, {f.name})")
    ns: dict[str, Any] = {}
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body or ["    pass"]), env, ns)  # noqa: S102
    ns["__init__"].__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = ns["__init__"]  # type: ignore[misc]
    return cls


def _value(kw_only: bool = False, cached_hash: bool = False) -> Callable[[type[T]], type[T]]:
    def wrap(cls: type[T]) -> type[T]:
        made = _fast_init(dataclass(frozen=True, slots=True, kw_only=kw_only)(cls))
        return _cache_hash(made) if cached_hash else made
    return wrap


# == provenance ============================================================================
@_value()
class Source:
    """The Kubernetes object a route was made of."""

    kind: str  # "HTTPRoute" | "Ingress"
    namespace: str
    name: str


@_value(cached_hash=True)
class ClusterSettings(_Hashed):
    """Settings of one cluster; the default instance means "plain Service cluster"."""

    request_timeout: str | None = None  # TimeSpan "hh:mm:ss[.fff]" -> httpClient.requestTimeout
    algorithm: str | None = None  # RoundRobin | Random | LeastRequests | LeastTime | PowerOfTwoChoices
    affinity_cookie: str | None = None  # -> sessionAffinity {policy: Cookie, name: <this>}
    use_https: bool = False
    tls: tuple[tuple[str, str], ...] = ()  # (caFile|certFile|keyFile, file)

    def is_default(self) -> bool:
        return self is DEFAULT_SETTINGS or self == DEFAULT_SETTINGS

    def canonical(self) -> str:
        return json.dumps(
            {
                "requestTimeout": self.request_timeout,
                "algorithm": self.algorithm,
                "affinity": self.affinity_cookie,
                "useHttps": self.use_https,
                "tls": sorted(self.tls),
            },
            sort_keys=True,
            separators=(",", ":"),
        )


#: The plain Service cluster; pass this (not a new instance) for speed.
DEFAULT_SETTINGS = ClusterSettings()


@_value(cached_hash=True)
class Backend(_Hashed):
    """What a cluster was resolved from: a Service port with cluster settings. ``port`` is the
    Service port's number (or its name, when only a name was given); ``id_suffix`` marks the
    clusters an Ingress's backend-protocol H2C or GRPC gives their own id."""

    namespace: str
    service: str
    port: int | str
    settings: ClusterSettings = DEFAULT_SETTINGS
    id_suffix: str = ""


# == routes ================================================================================
Pairs = tuple[tuple[str, str], ...]


@_value(cached_hash=True)
class Match(_Hashed):
    """A route's match without its host (see :attr:`Route.host`)."""

    path: str | None = None
    path_kind: str | None = None  # Exact | Prefix | Regex
    method: str | None = None
    headers: Pairs = ()
    query: Pairs = ()
    query_regex: Pairs = ()


@_value()
class Forward:
    """Action ``clusterId``: every request to one cluster."""

    cluster_id: str


@_value()
class WeightedCluster:
    cluster_id: str
    weight: int


@_value()
class Split:
    """Action ``clusters``: a weighted split (weight 0 takes no traffic)."""

    clusters: tuple[WeightedCluster, ...]


@_value(kw_only=True)
class Redirect:
    """Action ``redirect``."""

    status_code: int
    scheme: str | None = None
    host: str
    port: int | None = None
    path: str | None = None


@_value()
class DirectResponse:
    """Action ``directResponse``: an answer of the data plane itself (500 for what cannot be
    honoured)."""

    status: int
    body: str


Action = Forward | Split | Redirect | DirectResponse


@_value()
class Mirror:
    cluster_id: str
    percent: float


@_value()
class Limits:
    request_timeout: str  # TimeSpan


# -- transforms and policies: ``{kind: KIND, parameters: {<field>: <value as a string>}}`` --
class _Kind:
    """A transform or policy: its ``KIND`` and its parameters (its fields, in order; ints are
    written in decimal, tuples as lists of strings)."""

    __slots__ = ()
    KIND: ClassVar[str]


@_value()
class RequestHeaderSet(_Kind):
    KIND: ClassVar[str] = "RequestHeaderSet"
    name: str
    value: str


@_value()
class RequestHeaderAppend(_Kind):
    KIND: ClassVar[str] = "RequestHeaderAppend"
    name: str
    value: str


@_value()
class RequestHeaderRemove(_Kind):
    KIND: ClassVar[str] = "RequestHeaderRemove"
    name: str


@_value()
class ResponseHeaderSet(_Kind):
    KIND: ClassVar[str] = "ResponseHeaderSet"
    name: str
    value: str


@_value()
class ResponseHeaderAppend(_Kind):
    KIND: ClassVar[str] = "ResponseHeaderAppend"
    name: str
    value: str


@_value()
class ResponseHeaderRemove(_Kind):
    KIND: ClassVar[str] = "ResponseHeaderRemove"
    name: str


@_value()
class HostSet(_Kind):
    KIND: ClassVar[str] = "HostSet"
    host: str


@_value()
class PathSet(_Kind):
    KIND: ClassVar[str] = "PathSet"
    path: str


@_value()
class PathRegexReplace(_Kind):
    KIND: ClassVar[str] = "PathRegexReplace"
    pattern: str
    replacement: str


@_value()
class PathRemovePrefix(_Kind):
    KIND: ClassVar[str] = "PathRemovePrefix"
    prefix: str


@_value()
class PathPrefix(_Kind):
    KIND: ClassVar[str] = "PathPrefix"
    prefix: str


Transform = (RequestHeaderSet | RequestHeaderAppend | RequestHeaderRemove | ResponseHeaderSet | ResponseHeaderAppend
             | ResponseHeaderRemove | HostSet | PathSet | PathRegexReplace | PathRemovePrefix | PathPrefix)
#: The transforms that change the response: the only ones that apply to a redirect.
RESPONSE_TRANSFORMS = (ResponseHeaderSet, ResponseHeaderAppend, ResponseHeaderRemove)


@_value()
class MaxRequestBodySize(_Kind):
    KIND: ClassVar[str] = "MaxRequestBodySize"
    bytes: int  # 0 = unlimited


@_value()
class IpAllowDeny(_Kind):
    KIND: ClassVar[str] = "IpAllowDeny"
    allow: tuple[str, ...]  # CIDRs


@_value()
class RateLimit(_Kind):
    KIND: ClassVar[str] = "RateLimit"
    requests_per_second: int
    window: str  # TimeSpan
    partition: str


@_value()
class Cors(_Kind):
    KIND: ClassVar[str] = "Cors"
    allow_origins: tuple[str, ...]


@_value()
class ExtAuth(_Kind):
    KIND: ClassVar[str] = "ExtAuth"
    url: str
    timeout: str  # TimeSpan


Policy = MaxRequestBodySize | IpAllowDeny | RateLimit | Cors | ExtAuth
TRANSFORM_KINDS: tuple[type[Any], ...] = typing.get_args(Transform)
POLICY_KINDS: tuple[type[Any], ...] = typing.get_args(Policy)


@_value(cached_hash=True)
class Behavior(_Hashed):
    """What a route does with the requests it matches: everything but its id and match. The
    routes of a rule share one (built once per rule)."""

    action: Action
    mirror: Mirror | None = None
    transforms: tuple[Transform, ...] = ()  # applied in order before forwarding
    policies: tuple[Policy, ...] = ()  # evaluated in order before the transforms
    limits: Limits | None = None


@_fast_init
@dataclass(frozen=True, slots=True)
class Route:
    """One data-plane route. Its ``order`` is its position in :attr:`Document.routes` (from 1).

    Provenance (not emitted, not compared): ``key`` its precedence key (the routes are sorted by
    ``(key, id)``), ``source`` the object it was made of, ``rule_index`` and ``match_index`` the
    rule and match (HTTPRoute) or rule and path (Ingress; -1 and 0 for its defaultBackend) of
    that object, and ``host`` is the hostname it was emitted for."""

    id: str
    host: str | None
    match: Match
    behavior: Behavior
    key: str = field(compare=False, repr=False)
    source: Source = field(compare=False)
    rule_index: int = field(compare=False)
    match_index: int = field(compare=False)

    def __hash__(self) -> int:  # (ids are unique within a document; equal routes have equal ids)
        return hash(self.id)


# == clusters ==============================================================================
@_value(cached_hash=True)
class Destination(_Hashed):
    id: str
    address: str
    port: int
    weight: int
    use_https: bool


@_value()
class SessionAffinity:
    policy: str
    name: str


@_value()
class UpstreamTls:
    """Files in the TLS Secret (PEM), for ``useHttps`` destinations."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None


@_value()
class HttpClient:
    request_timeout: str | None = None  # TimeSpan: wait for response headers
    tls: UpstreamTls | None = None


@_value(kw_only=True, cached_hash=True)
class Cluster(_Hashed):
    """A data-plane cluster; ``backend`` (provenance, not emitted) is the Service port it was
    resolved from (None for the empty cluster an invalid backend share points at)."""

    id: str
    algorithm: str | None = None
    destinations: tuple[Destination, ...] = ()  # ready endpoints only; () = 503
    session_affinity: SessionAffinity | None = None
    http_client: HttpClient | None = None
    backend: Backend | None = field(default=None, compare=False)


# == the document ==========================================================================
@_value()
class Listener:
    """A data-plane listener (``host: 0.0.0.0``, ``type: transparent``)."""

    port: int
    decrypt_ssl: bool


@_value()
class Certificate:
    file: str
    hosts: tuple[str, ...]
    default: bool = False


@dataclass(frozen=True, slots=True)
class Document:
    """The whole twp document: routes in order (``order`` = position + 1), clusters by id."""

    listeners: tuple[Listener, ...] = ()
    certificates: tuple[Certificate, ...] = ()
    routes: tuple[Route, ...] = ()
    clusters: tuple[Cluster, ...] = ()

    def cluster(self, cluster_id: str) -> Cluster | None:
        """The cluster with this id (a bisection: the clusters are sorted by id)."""
        import bisect

        i = bisect.bisect_left(self.clusters, cluster_id, key=_cluster_id)
        return self.clusters[i] if i < len(self.clusters) and self.clusters[i].id == cluster_id else None

    def routes_of(self, source: Source) -> list[Route]:
        """The routes made of one object, in order."""
        return [r for r in self.routes if r.source == source]


def _cluster_id(cluster: Cluster) -> str:
    return cluster.id


def cluster_ids(action: Action) -> tuple[str, ...]:
    """The clusters an action sends requests to."""
    if type(action) is Forward:
        return (action.cluster_id,)
    if type(action) is Split:
        return tuple(c.cluster_id for c in action.clusters)
    return ()


# == reading a document back ===============================================================
def twp_key(name: str) -> str:
    """A field name as the document's key: ``path_kind`` -> ``pathKind``."""
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


UNKNOWN_SOURCE = Source("", "", "")
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
