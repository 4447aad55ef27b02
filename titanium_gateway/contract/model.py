"""Typed, immutable values of a loaded twp.yaml (root document and its parts).

Built by :func:`titanium_gateway.contract.load.load_config`; every value here has already been
validated against the contract (docs/contract.md), so the matching and the data plane never
meet a malformed field. Durations are seconds (``float``), regular expressions are compiled.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from types import MappingProxyType

#: An empty read-only mapping (the default of optional map fields).
EMPTY_MAP: MappingProxyType[str, str] = MappingProxyType({})


@dataclass(frozen=True)
class Listener:
    host: str
    port: int
    type: str
    decrypt_ssl: bool

    @property
    def key(self) -> tuple[str, int, bool]:
        """What binding this listener means (a change of the set rolls the pods)."""
        return (self.host, self.port, self.decrypt_ssl)


@dataclass(frozen=True)
class CertificateItem:
    file: str
    hosts: tuple[str, ...]
    default: bool = False


@dataclass(frozen=True)
class Match:
    host: str | None = None
    path: str | None = None
    path_kind: str | None = None  # Exact | Prefix | Regex
    method: str | None = None
    #: lower-cased header name -> value (compared case-insensitively)
    headers: tuple[tuple[str, str], ...] = ()
    query: tuple[tuple[str, str], ...] = ()
    query_regex: tuple[tuple[str, re.Pattern[str]], ...] = ()
    path_regex: re.Pattern[str] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class WeightedCluster:
    cluster_id: str
    weight: int


@dataclass(frozen=True)
class Forward:
    """Forward to one of the weighted route clusters (``clusterId`` is one cluster of weight 1)."""

    clusters: tuple[WeightedCluster, ...]

    kind = "forward"


@dataclass(frozen=True)
class Redirect:
    status_code: int
    host: str
    scheme: str | None = None
    port: int | None = None
    path: str | None = None

    kind = "redirect"


@dataclass(frozen=True)
class DirectResponse:
    status: int
    body: str

    kind = "direct"


Action = Forward | Redirect | DirectResponse


@dataclass(frozen=True)
class Mirror:
    cluster_id: str
    percent: float = 100.0


# -- transforms ---------------------------------------------------------------------------
@dataclass(frozen=True)
class HeaderTransform:
    """``RequestHeaderSet/Append/Remove`` and ``ResponseHeaderSet/Append/Remove``."""

    kind: str
    name: str
    value: str = ""

    @property
    def on_response(self) -> bool:
        return self.kind.startswith("Response")

    @property
    def verb(self) -> str:
        """``Set``, ``Append`` or ``Remove``."""
        return self.kind[len("ResponseHeader"):] if self.on_response else self.kind[len("RequestHeader"):]


@dataclass(frozen=True)
class HostSet:
    host: str
    kind = "HostSet"


@dataclass(frozen=True)
class PathSet:
    path: str
    kind = "PathSet"


@dataclass(frozen=True)
class PathRegexReplace:
    pattern: str
    replacement: str
    regex: re.Pattern[str] = field(compare=False, repr=False, default=re.compile(""))
    kind = "PathRegexReplace"


@dataclass(frozen=True)
class PathRemovePrefix:
    prefix: str
    kind = "PathRemovePrefix"


@dataclass(frozen=True)
class PathPrefix:
    prefix: str
    kind = "PathPrefix"


Transform = HeaderTransform | HostSet | PathSet | PathRegexReplace | PathRemovePrefix | PathPrefix


# -- policies ---------------------------------------------------------------------------
@dataclass(frozen=True)
class MaxRequestBodySize:
    bytes: int  # 0 = unlimited
    kind = "MaxRequestBodySize"


@dataclass(frozen=True)
class IpAllowDeny:
    allow: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
    kind = "IpAllowDeny"


@dataclass(frozen=True)
class RateLimit:
    requests_per_second: int
    window: float  # seconds
    partition: str
    kind = "RateLimit"

    @property
    def permits(self) -> int:
        """Requests admitted per window: ``requestsPerSecond`` x the window (at least 1)."""
        return max(1, round(self.requests_per_second * self.window))


@dataclass(frozen=True)
class Cors:
    allow_origins: tuple[str, ...]
    kind = "Cors"

    @property
    def any_origin(self) -> bool:
        return "*" in self.allow_origins


@dataclass(frozen=True)
class ExtAuth:
    url: str
    timeout: float  # seconds
    kind = "ExtAuth"


Policy = MaxRequestBodySize | IpAllowDeny | RateLimit | Cors | ExtAuth


@dataclass(frozen=True)
class Route:
    id: str
    order: int
    match: Match
    action: Action
    mirror: Mirror | None = None
    transforms: tuple[Transform, ...] = ()
    policies: tuple[Policy, ...] = ()
    request_timeout: float | None = None  # limits.requestTimeout, seconds

    @property
    def request_transforms(self) -> tuple[Transform, ...]:
        return tuple(t for t in self.transforms if not (isinstance(t, HeaderTransform) and t.on_response))

    @property
    def response_transforms(self) -> tuple[HeaderTransform, ...]:
        return tuple(t for t in self.transforms if isinstance(t, HeaderTransform) and t.on_response)


# -- clusters ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Destination:
    id: str
    address: str
    port: int
    weight: int = 1
    use_https: bool = False


@dataclass(frozen=True)
class SessionAffinity:
    policy: str  # Cookie
    name: str


@dataclass(frozen=True)
class ClientTls:
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None


@dataclass(frozen=True)
class HttpClient:
    request_timeout: float | None = None  # seconds: wait for the response headers
    tls: ClientTls | None = None


@dataclass(frozen=True)
class Cluster:
    id: str
    destinations: tuple[Destination, ...]
    algorithm: str = "RoundRobin"
    session_affinity: SessionAffinity | None = None
    http_client: HttpClient = HttpClient()


@dataclass(frozen=True)
class Include:
    file: str
    sha256: str


@dataclass(frozen=True)
class Config:
    """One loaded config: the root ``twp.yaml`` with the routes and clusters of its parts."""

    schema_version: str
    listeners: tuple[Listener, ...]
    certificates: tuple[CertificateItem, ...]
    routes: tuple[Route, ...]  # ascending ``order``
    clusters: MappingProxyType[str, Cluster]
    include: tuple[Include, ...] = ()
    config_hash: str = ""  # lowercase hex SHA-256 of the root bytes

    def cluster(self, cluster_id: str) -> Cluster:
        return self.clusters[cluster_id]

    def route(self, route_id: str) -> Route | None:
        for r in self.routes:
            if r.id == route_id:
                return r
        return None

    @property
    def listener_keys(self) -> frozenset[tuple[str, int, bool]]:
        return frozenset(listener.key for listener in self.listeners)

    @property
    def files(self) -> tuple[str, ...]:
        """Every file the config names besides the parts (PFX and upstream TLS files)."""
        names: list[str] = [c.file for c in self.certificates]
        for cluster in self.clusters.values():
            tls = cluster.http_client.tls
            if tls is not None:
                names.extend(n for n in (tls.ca_file, tls.cert_file, tls.key_file) if n)
        return tuple(dict.fromkeys(names))
