"""The one table of the kinds titanium-gateway reads: what each is and who deals with it.

Every kind the controller watches and the render reads has one row (:class:`Kind`): its API
group, version and plural (:attr:`Kind.resource`), the Snapshot attribute its objects go to, which
informer watches it and when (the core kinds always; a Gateway API kind where the CRD that
decides it is served, :attr:`Kind.crd`, serves one of its versions), whose status it carries
(:attr:`Kind.status`: the list shared with other controllers, or the whole status), what a
released status becomes, and which module of the render translates it. Every other module asks
this table (or a row of it) instead of spelling a kind's name or keeping a table of its own.

The rows are in the order statuses, ``status.yaml`` and the objects not ours are listed in
(:func:`rank`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from titanium_gateway.kube import api as k
from titanium_gateway.kube.api import Resource

GATEWAY_GROUP = k.GATEWAY_GROUP
#: the apiVersion the render reads (and writes statuses as) every Gateway API kind
GATEWAY_API_VERSION = f"{GATEWAY_GROUP}/v1"

#: :attr:`Kind.status`: the status list shared with other controllers (entries told apart by
#: ``controllerName``), or the whole status is this controller's
PARENTS = "parents"
ANCESTORS = "ancestors"
WHOLE = "whole"

#: :attr:`Kind.informer`
ALWAYS = "always"  # watched from the start, whatever is installed
DISCOVERED = "discovered"  # watched where its CRD (``Kind.crd``) serves a version it reads

#: Released at 1970-01-01 like the Gateway API CRDs' own default status ("Waiting for controller").
_EPOCH = "1970-01-01T00:00:00Z"


def _waiting(ctype: str) -> dict[str, str]:
    return {"type": ctype, "status": "Unknown", "reason": "Pending", "message": "Waiting for controller",
            "lastTransitionTime": _EPOCH}


@dataclass(frozen=True, eq=False)
class Kind:
    """One kind the controller watches and the render reads."""

    #: group, version (the preferred one), plural, kind, scope
    resource: Resource
    #: the Snapshot attribute of its objects
    field: str
    #: ``ALWAYS`` or ``DISCOVERED`` (controller/gatewayapi.py)
    informer: str = ALWAYS
    #: the kind whose CustomResourceDefinition decides whether it is watched ("": always served)
    crd: str = ""
    #: the versions read, in preference order (the fields the render reads are the same in each);
    #: a manifest of another of them is read as the first (the API server converts)
    versions: tuple[str, ...] = ()
    #: no reconcile before its cache synced, and a failing watch keeps its last cache (the render
    #: cannot do without it); otherwise its objects become unknown to the render while it fails
    required: bool = False
    #: what does not work without it (log lines)
    needed_for: str = ""
    #: whose status: "" none of ours; ``PARENTS``/``ANCESTORS``: that list, shared with other
    #: controllers; ``WHOLE``: the whole status is this controller's
    status: str = ""
    #: what the status becomes when the object is no longer ours (``result.Released``; plain
    #: data, as the writer sends it: never modified)
    released: Mapping[str, Any] | None = None
    #: the controller remembers owning its objects from one render to the next: the render
    #: cannot tell from such an object that it was ours (a route's parent entries name us)
    remembered: bool = False
    #: the module of the render that translates it (``render/<translator>``; "" only read)
    translator: str = ""
    #: a route kind served: the listener protocols it attaches to (listed in their
    #: ``supportedKinds``, in the order of this table); () for a kind never served
    listener_protocols: tuple[str, ...] = ()
    #: the kind's name (``resource.kind``; an attribute: modules compare it in loops)
    kind: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", self.resource.kind)

    @property
    def api_version(self) -> str:
        return self.resource.api_version

    @property
    def namespaced(self) -> bool:
        return self.resource.namespaced

    @property
    def gateway_api(self) -> bool:
        return self.resource.group == GATEWAY_GROUP

    @property
    def with_kind(self) -> str:
        """The kind it is watched along with ("": its own CRD decides, or it is always watched)."""
        return self.crd if self.crd != self.kind else ""

    @property
    def shared_list(self) -> str | None:
        """The status list shared with other controllers, None when the whole status is ours."""
        return self.status if self.status in (PARENTS, ANCESTORS) else None

    @property
    def served_versions(self) -> Mapping[str, str]:
        """apiVersion a manifest may have -> the apiVersion it is read as (the offline load)."""
        prefix = f"{self.resource.group}/" if self.resource.group else ""
        versions = self.versions or (self.resource.version,)
        return MappingProxyType({f"{prefix}{v}": f"{prefix}{versions[0]}" for v in versions})


def _gw(plural: str, kind: str, field: str, *, namespaced: bool = True, **kw: Any) -> Kind:
    kw.setdefault("versions", ("v1",))
    return Kind(Resource(GATEWAY_GROUP, "v1", plural, kind, namespaced), field, DISCOVERED, kind, **kw)


_ROUTE_RELEASED: Mapping[str, Any] = {PARENTS: []}
#: the translator of the route kinds that are answered, never served
_OTHER_ROUTES = "otherroutes.py"
_PARENT_RELEASED: Mapping[str, Any] = {"conditions": [_waiting("Accepted"), _waiting("Programmed")]}

GATEWAY_CLASS = _gw("gatewayclasses", "GatewayClass", "gateway_classes", namespaced=False, versions=("v1", "v1beta1"),
                    required=True, needed_for="every Gateway API object", status=WHOLE, remembered=True,
                    released={"conditions": [_waiting("Accepted")]}, translator="gatewayclass.py")
GATEWAY = _gw("gateways", "Gateway", "gateways", versions=("v1", "v1beta1"), required=True, needed_for="Gateways",
              status=WHOLE, remembered=True, released=_PARENT_RELEASED, translator="gateway.py")
LISTENER_SET = _gw("listenersets", "ListenerSet", "listener_sets", needed_for="ListenerSets", status=WHOLE,
                   remembered=True, released=_PARENT_RELEASED, translator="listenerset.py")
HTTP_ROUTE = _gw("httproutes", "HTTPRoute", "httproutes", versions=("v1", "v1beta1"), required=True,
                 needed_for="HTTPRoutes", status=PARENTS, released=_ROUTE_RELEASED, translator="httproute/",
                 listener_protocols=("HTTP", "HTTPS"))
#: (HTTP/2 end to end: h2c with prior knowledge on HTTP listeners, h2 by ALPN on HTTPS ones)
GRPC_ROUTE = _gw("grpcroutes", "GRPCRoute", "grpcroutes", needed_for="GRPCRoutes", status=PARENTS,
                 released=_ROUTE_RELEASED, translator="grpcroute.py", listener_protocols=("HTTP", "HTTPS"))
TLS_ROUTE = _gw("tlsroutes", "TLSRoute", "tlsroutes", needed_for="TLSRoutes", status=PARENTS,
                released=_ROUTE_RELEASED, translator=_OTHER_ROUTES)
TCP_ROUTE = _gw("tcproutes", "TCPRoute", "tcproutes", needed_for="TCPRoutes", status=PARENTS,
                released=_ROUTE_RELEASED, translator=_OTHER_ROUTES)
UDP_ROUTE = _gw("udproutes", "UDPRoute", "udproutes", needed_for="UDPRoutes", status=PARENTS,
                released=_ROUTE_RELEASED, translator=_OTHER_ROUTES)
BACKEND_TLS_POLICY = _gw("backendtlspolicies", "BackendTLSPolicy", "backend_tls_policies",
                         needed_for="BackendTLSPolicies", status=ANCESTORS,
                         released={ANCESTORS: []}, translator="backendtls.py")
#: v1 where served (Gateway API v1.5+), else v1beta1 (controller/gatewayapi.py)
REFERENCE_GRANT = _gw("referencegrants", "ReferenceGrant", "reference_grants", versions=("v1", "v1beta1"),
                      needed_for="references across namespaces (refused while the grants are unknown)",
                      translator="referencegrant.py")
INGRESS_CLASS = Kind(k.INGRESS_CLASSES, "ingress_classes", translator="ingress/")
INGRESS = Kind(k.INGRESSES, "ingresses", status=WHOLE, remembered=True,
               released={"loadBalancer": None}, translator="ingress/")
NAMESPACE = Kind(k.NAMESPACES, "namespaces")
SERVICE = Kind(k.SERVICES, "services")
ENDPOINT_SLICE = Kind(k.ENDPOINT_SLICES, "endpoint_slices")
SECRET = Kind(k.SECRETS, "secrets", translator="certificates.py")
#: (only the CA certificates a BackendTLSPolicy names: watched while that kind is)
CONFIG_MAP = Kind(k.CONFIG_MAPS, "config_maps", DISCOVERED, BACKEND_TLS_POLICY.kind, ("v1",),
                  needed_for="the CA certificates BackendTLSPolicies name", translator="backendtls.py")

#: Every row, in status order.
KINDS: tuple[Kind, ...] = (
    GATEWAY_CLASS, GATEWAY, LISTENER_SET, HTTP_ROUTE, GRPC_ROUTE, TLS_ROUTE, TCP_ROUTE, UDP_ROUTE,
    BACKEND_TLS_POLICY, REFERENCE_GRANT, INGRESS_CLASS, INGRESS, NAMESPACE, SERVICE, ENDPOINT_SLICE, SECRET,
    CONFIG_MAP,
)
BY_KIND: Mapping[str, Kind] = MappingProxyType({row.kind: row for row in KINDS})
#: kind -> Snapshot attribute
KIND_FIELDS: Mapping[str, str] = MappingProxyType({row.kind: row.field for row in KINDS})
CLUSTER_SCOPED = frozenset(row.kind for row in KINDS if not row.namespaced)
#: the kinds whose status this controller writes
STATUS_KINDS = frozenset(row.kind for row in KINDS if row.status)
#: the route kinds (their status: ``parents``)
ROUTE_KINDS = frozenset(row.kind for row in KINDS if row.status == PARENTS)
#: the kinds whose ownership the controller remembers (``Kind.remembered``)
REMEMBERED_KINDS = frozenset(row.kind for row in KINDS if row.remembered)
#: the route kinds served (``Kind.listener_protocols``), in the order listeners list them
SERVED_ROUTES: tuple[Kind, ...] = tuple(row for row in KINDS if row.listener_protocols)
#: the route kinds this controller answers but does not serve (their translator: render/otherroutes.py)
OTHER_ROUTES: tuple[Kind, ...] = tuple(row for row in KINDS if row.translator == _OTHER_ROUTES)
#: the kinds a route's parentRef may name, with listeners
PARENT_KINDS = frozenset({GATEWAY.kind, LISTENER_SET.kind})
_RANK = MappingProxyType({row.kind: i for i, row in enumerate(KINDS)})

#: The Resource of each Gateway API kind (the API calls name them)
GATEWAY_CLASSES = GATEWAY_CLASS.resource
GATEWAYS = GATEWAY.resource
HTTPROUTES = HTTP_ROUTE.resource
REFERENCE_GRANTS = REFERENCE_GRANT.resource
GRPCROUTES = GRPC_ROUTE.resource
TLSROUTES = TLS_ROUTE.resource
TCPROUTES = TCP_ROUTE.resource
UDPROUTES = UDP_ROUTE.resource
LISTENER_SETS = LISTENER_SET.resource
BACKEND_TLS_POLICIES = BACKEND_TLS_POLICY.resource


def rank(kind: str) -> int:
    """The position of ``kind`` in the order statuses and objects are listed in (unknown: last)."""
    return _RANK.get(kind, len(_RANK))


def status_resources() -> dict[str, Resource]:
    """kind -> Resource of every kind whose status this controller writes."""
    return {row.kind: row.resource for row in KINDS if row.status}


__all__ = [
    "ALWAYS", "ANCESTORS", "BY_KIND", "CLUSTER_SCOPED", "DISCOVERED", "GATEWAY_API_VERSION", "GATEWAY_GROUP",
    "KINDS", "KIND_FIELDS", "Kind", "OTHER_ROUTES", "PARENTS", "PARENT_KINDS", "REMEMBERED_KINDS", "ROUTE_KINDS",
    "SERVED_ROUTES", "STATUS_KINDS", "WHOLE", "rank", "status_resources",
]
