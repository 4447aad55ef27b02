"""The twp document as typed, immutable values: what the translators build and ``emit`` writes.

The classes are the document's objects (``twp/schema.json`` is generated from them; field names
in snake_case, the document's keys are their camelCase, e.g. ``path_kind`` -> ``pathKind``), with
two choices of their own:

* a :class:`Route` holds its match ``host`` itself and the rest of its match as a :class:`Match`,
  and everything that is not its id or match as one :class:`Behavior` (action, mirror,
  transforms, policies, limits): the routes of one rule share their match over its hosts and
  their behavior over its matches, so those parts are built once and referenced;
* a route knows where it came from (:attr:`Route.source`, rule and match index, the host it was
  emitted for, its precedence key) and a cluster its backend (:attr:`Cluster.backend`); these
  provenance fields are never emitted and take no part in equality (``route == read back``).

Each class that is an object of the document declares it once, as its ``DOC`` (a
:class:`~titanium_gateway.twp.params.Obj`: its keys, the JSON schema of each value, which the
render always writes and which the reader requires): ``twp/schema.json`` is generated from these
(:mod:`.schema`) and the reader (:mod:`.load`) takes its keys, enums and ranges from them.

Every value is a frozen, slotted dataclass; tuples stand for lists and mappings (a mapping as a
tuple of ``(key, value)`` pairs in document order). :class:`Match`, :class:`Behavior` and
:class:`Cluster` compute their hash once (they key emit's text tables).
:func:`titanium_gateway.twp.load.read_document` reads a parsed document back into these values.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

from titanium_gateway.twp import params as P
from titanium_gateway.twp.params import (  # noqa: F401  (m.twp_key: a field's document key)
    Key,
    Obj,
    array,
    boolean,
    const,
    enum,
    integer,
    kinds_array,
    number,
    param,
    ref,
    str_map,
    string,
    twp_key,
)

SCHEMA_VERSION = "7.1"
#: the document's patterns: a match host (lowercase, ``*.`` wildcard), a part's file name, a SHA-256
HOST_PATTERN = r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
PART_FILE_PATTERN = r"^twp\.part-[1-9][0-9]*\.yaml$"
SHA256_PATTERN = r"^[0-9a-f]{64}$"
_PORT = integer(1, 65535)
_ID = string(1)
_TIMESPAN = string(pattern=P.TIMESPAN_PATTERN)
#: the largest weight a data plane holds (the contract's weights are relative: any int32)
_MAX_WEIGHT = 2**31 - 1
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


def _value(kw_only: bool = False, cached_hash: bool = False, init: bool = True) -> Callable[[type[T]], type[T]]:
    """A frozen slotted dataclass (``cached_hash``: its hash computed once; ``init=False``: the
    class writes its own ``__init__`` with :func:`_setters`)."""
    def wrap(cls: type[T]) -> type[T]:
        made = dataclass(frozen=True, slots=True, kw_only=kw_only, init=init)(cls)
        return _cache_hash(made) if cached_hash else made
    return wrap


def _setters(cls: type, *names: str) -> tuple[Callable[[Any, Any], None], ...]:
    """The slot setters of a frozen slotted class, for the ``__init__`` of the values made once
    per data-plane route or endpoint (see :class:`Route`)."""
    return tuple(cls.__dict__[name].__set__ for name in names)


# == provenance ============================================================================
@_value(init=False)
class Source:
    """The Kubernetes object a route was made of."""

    kind: str  # "HTTPRoute" | "Ingress"
    namespace: str
    name: str

    def __init__(self, kind: str, namespace: str, name: str) -> None:
        s = _SOURCE
        s[0](self, kind)
        s[1](self, namespace)
        s[2](self, name)


_SOURCE = _setters(Source, "kind", "namespace", "name")
#: The source of a route read back from a document (provenance unknown).
UNKNOWN_SOURCE = Source("", "", "")


@_value()
class SubjectAltName:
    """A name the destination's certificate must carry (``type`` Hostname: a DNS name; URI)."""

    type: str  # Hostname | URI
    value: str

    DOC: ClassVar[Obj] = Obj({"type": Key(enum("Hostname", "URI"), required=True),
                              "value": Key(string(1), required=True)})


@_value(cached_hash=True)
class ClusterSettings(_Hashed):
    """Settings of one cluster; the default instance means "plain Service cluster"."""

    request_timeout: str | None = None  # TimeSpan "hh:mm:ss[.fff]" -> httpClient.requestTimeout
    algorithm: str | None = None  # RoundRobin | Random | LeastRequests | LeastTime | PowerOfTwoChoices
    affinity_cookie: str | None = None  # -> sessionAffinity {policy: Cookie, name: <this>}
    use_https: bool = False
    tls: tuple[tuple[str, str], ...] = ()  # (caFile|certFile|keyFile, file)
    #: a BackendTLSPolicy's validation: the name sent and checked, the names accepted instead,
    #: the system CA store instead of ``caFile``
    server_name: str | None = None
    subject_alt_names: tuple[SubjectAltName, ...] = ()
    system_roots: bool = False
    #: why the backend cannot be reached safely (a BackendTLSPolicy that cannot be honoured):
    #: its cluster gets no destinations, so it answers 503 and never sends plaintext
    refused: str = ""

    def is_default(self) -> bool:
        return self is DEFAULT_SETTINGS or self == DEFAULT_SETTINGS

    def canonical(self) -> str:
        data: dict[str, Any] = {
            "requestTimeout": self.request_timeout,
            "algorithm": self.algorithm,
            "affinity": self.affinity_cookie,
            "useHttps": self.use_https,
            "tls": sorted(self.tls),
        }
        # (the fields added later are written only when set: the ids of the other settings stay)
        if self.server_name is not None:
            data["serverName"] = self.server_name
        if self.subject_alt_names:
            data["subjectAltNames"] = [[n.type, n.value] for n in self.subject_alt_names]
        if self.system_roots:
            data["systemRoots"] = True
        if self.refused:
            data["refused"] = self.refused
        return json.dumps(data, sort_keys=True, separators=(",", ":"))


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

    #: the document's ``match``, with the keys that are the route's own (``host``, ``ports``)
    DOC: ClassVar[Obj] = Obj({
        "host": Key(string(pattern=HOST_PATTERN)),
        "ports": Key(array(_PORT, min_items=1, unique=True)),
        "path": Key(string(1)),
        "pathKind": Key(enum("Exact", "Prefix", "Regex")),
        "method": Key(string(1)),
        "headers": Key(str_map()),
        "query": Key(str_map()),
        "queryRegex": Key(str_map()),
    }, dependentRequired={"path": ["pathKind"], "pathKind": ["path"]})


@_value()
class Forward:
    """Action ``clusterId``: every request to one cluster."""

    cluster_id: str

    #: an action is one key of the route: this, with a value of this schema
    KEY: ClassVar[str] = "clusterId"
    DOC: ClassVar[Any] = _ID


@_value()
class WeightedCluster:
    cluster_id: str
    weight: int

    DOC: ClassVar[Obj] = Obj({"clusterId": Key(_ID, required=True),
                              "weight": Key(integer(0), required=True, bounds=(0, _MAX_WEIGHT))})


@_value()
class Split:
    """Action ``clusters``: a weighted split (weight 0 takes no traffic)."""

    clusters: tuple[WeightedCluster, ...]

    KEY: ClassVar[str] = "clusters"
    DOC: ClassVar[Any] = array(WeightedCluster.DOC, min_items=1)


@_value(kw_only=True)
class Redirect:
    """Action ``redirect``."""

    status_code: int
    scheme: str | None = None
    host: str
    port: int | None = None
    path: str | None = None

    KEY: ClassVar[str] = "redirect"
    DOC: ClassVar[Obj] = Obj({
        "statusCode": Key(enum(301, 302), required=True),
        "scheme": Key(enum("http", "https")),
        "host": Key(string(1), required=True),
        "port": Key(_PORT),
        "path": Key(string(pattern="^/")),
    })


@_value()
class DirectResponse:
    """Action ``directResponse``: an answer of the data plane itself (500 for what cannot be
    honoured)."""

    status: int
    body: str

    KEY: ClassVar[str] = "directResponse"
    DOC: ClassVar[Obj] = Obj({"status": Key(integer(100, 599), required=True), "body": Key(string(), required=True)})


Action = Forward | Split | Redirect | DirectResponse
ACTION_KINDS: tuple[type[Any], ...] = typing.get_args(Action)


@_value()
class Mirror:
    cluster_id: str
    percent: float

    #: (a mirror read without ``percent`` mirrors every request: the contract's default)
    DOC: ClassVar[Obj] = Obj({"clusterId": Key(_ID, required=True),
                              "percent": Key(number(0, 100), required=True, read_required=False)})


@_value()
class Limits:
    request_timeout: str  # TimeSpan

    DOC: ClassVar[Obj] = Obj({"requestTimeout": Key(_TIMESPAN, required=True)})


# -- transforms and policies: ``{kind: KIND, parameters: {<field>: <value as a string>}}`` --
class _Kind:
    """A transform or policy: its ``KIND`` and its parameters (its fields, in order; ints are
    written in decimal, tuples as lists of strings). Each field is declared with its rule
    (:func:`~titanium_gateway.twp.params.param`): what the reader checks of a value and what
    ``twp/schema.json`` says of it (generated from these classes, :mod:`.schema`)."""

    __slots__ = ()
    KIND: ClassVar[str]


@_value()
class RequestHeaderSet(_Kind):
    KIND: ClassVar[str] = "RequestHeaderSet"
    name: str = param(P.HEADER_NAME)
    value: str = param(P.HEADER_VALUE)


@_value()
class RequestHeaderAppend(_Kind):
    KIND: ClassVar[str] = "RequestHeaderAppend"
    name: str = param(P.HEADER_NAME)
    value: str = param(P.HEADER_VALUE)


@_value()
class RequestHeaderRemove(_Kind):
    KIND: ClassVar[str] = "RequestHeaderRemove"
    name: str = param(P.HEADER_NAME)


@_value()
class ResponseHeaderSet(_Kind):
    KIND: ClassVar[str] = "ResponseHeaderSet"
    name: str = param(P.HEADER_NAME)
    value: str = param(P.HEADER_VALUE)


@_value()
class ResponseHeaderAppend(_Kind):
    KIND: ClassVar[str] = "ResponseHeaderAppend"
    name: str = param(P.HEADER_NAME)
    value: str = param(P.HEADER_VALUE)


@_value()
class ResponseHeaderRemove(_Kind):
    KIND: ClassVar[str] = "ResponseHeaderRemove"
    name: str = param(P.HEADER_NAME)


@_value()
class HostSet(_Kind):
    KIND: ClassVar[str] = "HostSet"
    host: str = param(P.HOST)


@_value()
class PathSet(_Kind):
    KIND: ClassVar[str] = "PathSet"
    path: str = param(P.PATH)


@_value()
class PathRegexReplace(_Kind):
    KIND: ClassVar[str] = "PathRegexReplace"
    pattern: str = param(P.REGEX)
    replacement: str = param(P.TEXT)


@_value()
class PathRemovePrefix(_Kind):
    KIND: ClassVar[str] = "PathRemovePrefix"
    prefix: str = param(P.PATH_PREFIX)


@_value()
class PathPrefix(_Kind):
    KIND: ClassVar[str] = "PathPrefix"
    prefix: str = param(P.PATH_PREFIX)


Transform = (RequestHeaderSet | RequestHeaderAppend | RequestHeaderRemove | ResponseHeaderSet | ResponseHeaderAppend
             | ResponseHeaderRemove | HostSet | PathSet | PathRegexReplace | PathRemovePrefix | PathPrefix)
#: The transforms that change the response: the only ones that apply to a redirect.
RESPONSE_TRANSFORMS = (ResponseHeaderSet, ResponseHeaderAppend, ResponseHeaderRemove)


@_value()
class MaxRequestBodySize(_Kind):
    KIND: ClassVar[str] = "MaxRequestBodySize"
    bytes: int = param(P.COUNT)  # 0 = unlimited


@_value()
class IpAllowDeny(_Kind):
    KIND: ClassVar[str] = "IpAllowDeny"
    allow: tuple[str, ...] = param(P.NETWORK)  # CIDRs


@_value()
class RateLimit(_Kind):
    KIND: ClassVar[str] = "RateLimit"
    requests_per_second: int = param(P.POSITIVE)
    window: str = param(P.TIMESPAN)  # TimeSpan
    partition: str = param(P.TEXT)


@_value()
class Cors(_Kind):
    KIND: ClassVar[str] = "Cors"
    allow_origins: tuple[str, ...] = param(P.NONEMPTY)


@_value()
class ExtAuth(_Kind):
    KIND: ClassVar[str] = "ExtAuth"
    url: str = param(P.HTTP_URL)
    timeout: str = param(P.TIMESPAN)  # TimeSpan


Policy = MaxRequestBodySize | IpAllowDeny | RateLimit | Cors | ExtAuth
TRANSFORM_KINDS: tuple[type[Any], ...] = typing.get_args(Transform)
POLICY_KINDS: tuple[type[Any], ...] = typing.get_args(Policy)


@_value(cached_hash=True, init=False)
class Behavior(_Hashed):
    """What a route does with the requests it matches: everything but its id and match. The
    routes of a rule share one (built once per rule)."""

    action: Action
    mirror: Mirror | None = None
    transforms: tuple[Transform, ...] = ()  # applied in order before forwarding
    policies: tuple[Policy, ...] = ()  # evaluated in order before the transforms
    limits: Limits | None = None

    def __init__(self, action: Action, mirror: Mirror | None = None, transforms: tuple[Transform, ...] = (),
                 policies: tuple[Policy, ...] = (), limits: Limits | None = None) -> None:
        s = _BEHAVIOR
        s[0](self, action)
        s[1](self, mirror)
        s[2](self, transforms)
        s[3](self, policies)
        s[4](self, limits)

    def but(self, **changes: Any) -> Behavior:
        """This behavior with ``changes`` (field name -> value), every other field the same
        object: the translators finish a behavior with it, naming only what they decide."""
        get = changes.get
        return Behavior(*[get(name, getattr(self, name)) for name in _BEHAVIOR_FIELDS])


_BEHAVIOR = _setters(Behavior, "action", "mirror", "transforms", "policies", "limits")
_BEHAVIOR_FIELDS = tuple(f.name for f in dataclasses.fields(Behavior))


@_value(init=False)
class Route:
    """One data-plane route. Its ``order`` is its position in :attr:`Document.routes` (from 1).

    Like its ``host``, its ``ports`` (the match's ``ports``: the data-plane ports of the
    listeners it serves, sorted; empty: every listener) are the route's own and not part of the
    shared :class:`Match`: the routes of one match differ by the listeners they serve.

    Provenance (not emitted, not compared): ``key`` its precedence key (the routes are sorted by
    ``(key, id)``), ``source`` the object it was made of, ``rule_index`` and ``match_index`` the
    rule and match (HTTPRoute) or rule and path (Ingress; -1 and 0 for its defaultBackend) of
    that object, ``host`` is the hostname it was emitted for, and ``plane`` the data plane whose
    document it belongs to (``""``: the shared data plane; a Gateway's ``namespace/name``)."""

    id: str
    host: str | None
    match: Match
    behavior: Behavior
    key: str = field(compare=False, repr=False)
    source: Source = field(compare=False)
    rule_index: int = field(compare=False)
    match_index: int = field(compare=False)
    ports: tuple[int, ...] = ()
    plane: str = field(default="", compare=False, repr=False)

    def __init__(self, id: str, host: str | None, match: Match, behavior: Behavior, key: str,  # noqa: A002
                 source: Source, rule_index: int, match_index: int, ports: tuple[int, ...] = (),
                 plane: str = "") -> None:
        s = _ROUTE  # one per data-plane route: the slots set directly (a frozen init is ~40% slower)
        s[0](self, id)
        s[1](self, host)
        s[2](self, match)
        s[3](self, behavior)
        s[4](self, key)
        s[5](self, source)
        s[6](self, rule_index)
        s[7](self, match_index)
        s[8](self, ports)
        s[9](self, plane)

    def __hash__(self) -> int:  # (ids are unique within a document; equal routes have equal ids)
        return hash(self.id)

    #: the document's route: its id, ``order`` (the reader takes any int64), match, one action
    #: (a key of :data:`ACTION_KINDS`) and the behavior's other fields
    DOC: ClassVar[Obj] = Obj({
        "id": Key(_ID, required=True),
        "order": Key(integer(1), required=True, bounds=(-(2**63), 2**63 - 1)),
        "match": Key(Match.DOC, required=True),
        **{a.KEY: Key(a.DOC) for a in ACTION_KINDS},
        "mirror": Key(Mirror.DOC),
        "transforms": Key(kinds_array(lambda: TRANSFORM_KINDS)),
        "policies": Key(kinds_array(lambda: POLICY_KINDS)),
        "limits": Key(Limits.DOC),
    }, oneOf=[{"required": [a.KEY]} for a in ACTION_KINDS])


_ROUTE = _setters(Route, "id", "host", "match", "behavior", "key", "source", "rule_index", "match_index", "ports",
                  "plane")


# == clusters ==============================================================================
@_value(cached_hash=True, init=False)
class Destination(_Hashed):
    id: str
    address: str
    port: int
    weight: int
    use_https: bool

    #: (read without ``weight``: 1; without ``useHttps``: false, the contract's defaults)
    DOC: ClassVar[Obj] = Obj({
        "id": Key(_ID, required=True),
        "address": Key(string(1), required=True),
        "port": Key(_PORT, required=True),
        "weight": Key(integer(1), required=True, read_required=False, bounds=(1, _MAX_WEIGHT)),
        "useHttps": Key(boolean(), required=True, read_required=False),
    })

    def __init__(self, id: str, address: str, port: int, weight: int, use_https: bool) -> None:  # noqa: A002
        s = _DESTINATION
        s[0](self, id)
        s[1](self, address)
        s[2](self, port)
        s[3](self, weight)
        s[4](self, use_https)


_DESTINATION = _setters(Destination, "id", "address", "port", "weight", "use_https")


@_value()
class SessionAffinity:
    policy: str
    name: str

    DOC: ClassVar[Obj] = Obj({"policy": Key(const("Cookie"), required=True), "name": Key(string(1), required=True)})


@_value()
class UpstreamTls:
    """How ``useHttps`` destinations are validated: files in the TLS Secret (PEM), and the
    optional fields of a Gateway API BackendTLSPolicy: ``server_name`` (the SNI sent and, unless
    ``subject_alt_names`` is given, the name the certificate must match), ``subject_alt_names``
    (any one must match), ``system_roots`` (trust the data plane's system CA store instead of
    ``ca_file``)."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    server_name: str | None = None
    subject_alt_names: tuple[SubjectAltName, ...] | None = None
    system_roots: bool | None = None

    DOC: ClassVar[Obj] = Obj({
        "caFile": Key(string(1)),
        "certFile": Key(string(1)),
        "keyFile": Key(string(1)),
        "serverName": Key(string(1)),
        "subjectAltNames": Key(array(SubjectAltName.DOC, min_items=1)),
        "systemRoots": Key(boolean()),
    })


@_value()
class HttpClient:
    request_timeout: str | None = None  # TimeSpan: wait for response headers
    tls: UpstreamTls | None = None

    DOC: ClassVar[Obj] = Obj({"requestTimeout": Key(_TIMESPAN), "tls": Key(UpstreamTls.DOC)})


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

    DOC: ClassVar[Obj] = Obj({
        "id": Key(_ID, required=True),
        "algorithm": Key(enum("RoundRobin", "Random", "LeastRequests", "LeastTime", "PowerOfTwoChoices")),
        "destinations": Key(array(Destination.DOC), required=True),
        "sessionAffinity": Key(SessionAffinity.DOC),
        "httpClient": Key(HttpClient.DOC),
    })


# == the document ==========================================================================
@_value()
class Listener:
    """A data-plane listener (``type: transparent``; the render binds every address)."""

    port: int
    decrypt_ssl: bool
    host: str = "0.0.0.0"  # noqa: S104

    #: (the render writes ``0.0.0.0``; the reader takes any IP address)
    DOC: ClassVar[Obj] = Obj({
        "host": Key(const("0.0.0.0"), required=True),  # noqa: S104
        "port": Key(_PORT, required=True),
        "type": Key(const("transparent"), required=True),
        "decryptSsl": Key(boolean(), required=True),
    })


@_value()
class Certificate:
    file: str
    hosts: tuple[str, ...]
    default: bool = False

    #: (the render writes ``default`` only when true)
    DOC: ClassVar[Obj] = Obj({
        "file": Key(string(pattern=r"^[^/]+\.pfx$"), required=True),
        "hosts": Key({"type": "array", "items": string(1), "uniqueItems": True}, required=True),
        "default": Key(const(True)),
    })


@_value()
class Include:
    """An entry of a split root's ``include``: a part's file and the sha256 of its bytes."""

    file: str
    sha256: str

    DOC: ClassVar[Obj] = Obj({"file": Key(string(pattern=PART_FILE_PATTERN), required=True),
                              "sha256": Key(string(pattern=SHA256_PATTERN), required=True)})


def _listed(name: str, **rules: Any) -> Key:
    """A top-level list of the objects ``$defs/<name>`` (the render always writes it; the reader
    takes its absence for an empty list)."""
    return Key(array(ref(name), **rules), required=True, read_required=False)


_HEAD = {
    "schemaVersion": Key(const(SCHEMA_VERSION), required=True),
    "listeners": _listed("listener"),
    "certificates": Key(Obj({"items": Key(array(ref("certificate")), required=True)}), required=True,
                        read_required=False),
}


@dataclass(frozen=True, slots=True)
class Document:
    """The whole twp document: routes in order (``order`` = position + 1), clusters by id."""

    listeners: tuple[Listener, ...] = ()
    certificates: tuple[Certificate, ...] = ()
    routes: tuple[Route, ...] = ()
    clusters: tuple[Cluster, ...] = ()

    #: the document's three shapes: a root not split, a split root (its routes and clusters in
    #: the parts it includes), a part; and the objects they list (the schema's ``$defs``)
    DOC: ClassVar[Obj] = Obj({**_HEAD, "routes": _listed("route"), "clusters": _listed("cluster")},
                             title="root document, not split")
    SPLIT: ClassVar[Obj] = Obj({**_HEAD, "include": Key(array(ref("include"), min_items=1), required=True)},
                               title="root document of a split config")
    PART: ClassVar[Obj] = Obj({"routes": _listed("route"), "clusters": _listed("cluster")},
                              title="part twp.part-<n>.yaml")
    DEFS: ClassVar[Mapping[str, type[Any]]] = MappingProxyType(
        {"route": Route, "cluster": Cluster, "listener": Listener, "certificate": Certificate, "include": Include})

    def cluster(self, cluster_id: str) -> Cluster | None:
        """The cluster with this id (a bisection: the clusters are sorted by id)."""
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
