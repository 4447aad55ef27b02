"""The Ingress translation's view of one owned Ingress (:class:`IngressInfo`) and of one of
its rule paths or its defaultBackend (:class:`PathInfo`): what the other modules of the
translation read and fill in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from titanium_gateway.render.ingress.titanium import IngressAnnotations
from titanium_gateway.twp.model import Cluster, ClusterSettings, Policy, Source

#: (cluster, reason, message) of a backend: a cluster, or why there is none
Resolved = tuple[Cluster | None, str, str]


@dataclass(slots=True)
class IngressInfo:
    obj: Mapping[str, Any]
    namespace: str
    name: str
    uid: str
    created: str
    ann: IngressAnnotations
    is_canary: bool
    #: precedence.owner_part of the Ingress (its part of its routes' precedence keys)
    owner_key: str
    source: Source
    settings: ClusterSettings | None = None  # None: upstream TLS Secret unusable
    settings_error: str = ""
    id_suffix: str = ""
    #: its routes' policies (the annotation set's, with its own RateLimit) and their key, once made
    policies: tuple[Policy, ...] | None = None
    policies_key: tuple[Any, ...] = ()

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class PathInfo:
    ing: IngressInfo
    route_id: str
    rule: int  # -1 for the defaultBackend
    index: int
    host: str | None
    path: str | None
    kind: str | None  # Exact | Prefix | None (any path)
    path_type: str  # as written (Exact, Prefix, ImplementationSpecific; "" for defaultBackend)
    backend: Any
    error_reason: str = ""
    error_message: str = ""
    #: (canary path, its cluster (added only when the primary forwards)): at most one (a second
    #: canary is a CanaryConflict); () until there is one
    canaries: tuple[tuple[PathInfo, Cluster], ...] = ()

    @property
    def is_default(self) -> bool:
        return self.rule < 0

    @property
    def conflict_key(self) -> tuple[str, str, str]:
        """The route's identity for RouteConflict and canary binding: host, normalized path and
        the data-plane path kind, so ``ImplementationSpecific`` (a Prefix) and ``Prefix`` on
        the same path are the same route. A path with an InvalidPath error keeps its pathType
        as written: its 500 route never owns (nor conflicts with) a valid route's match."""
        if self.is_default:
            return ("", "", "defaultBackend")
        if self.error_reason == "InvalidPath":
            return (self.host or "", self.path or "", "invalid:" + self.path_type)
        return (self.host or "", self.path or "", self.kind or "")

    def describe(self) -> str:
        if self.is_default:
            return "the default backend"
        host = self.host or "any host"
        return f"host {host} path {self.path} ({self.path_type})"
