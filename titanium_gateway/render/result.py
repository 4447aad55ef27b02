"""The output of the pure render: data, never side effects."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from titanium_gateway.render.listenerports import ServedPort

if TYPE_CHECKING:
    from titanium_gateway.render.reach import Unreachable
    from titanium_gateway.twp.model import Document

_EMPTY_BYTES: Mapping[str, bytes] = MappingProxyType({})


@dataclass(frozen=True, order=True)
class ListenerKey:
    """One data-plane listener; the set of these is bound at pod start."""

    port: int
    decrypt_ssl: bool


@dataclass(frozen=True)
class CertificateEntry:
    """One PFX file in the TLS Secret (never key material here)."""

    file: str  # "<namespace>.<name>.pfx"
    hosts: tuple[str, ...]
    source: str  # "<namespace>/<name>" of the kubernetes.io/tls Secret
    default: bool = False
    #: The certificate's notAfter as Unix seconds (the controller's expiry metric).
    not_after: int | None = None


@dataclass(frozen=True)
class ObjectStatus:
    """The status this controller wants on one object it owns.

    For HTTPRoute, ``status`` is ``{"parents": [...]}`` holding ONLY the entries whose
    controllerName is ours; the writer keeps other controllers' entries and drops ours that
    are not listed. For Ingress it is ``{"loadBalancer": {...}}``.
    """

    api_version: str
    kind: str
    namespace: str  # "" for cluster-scoped
    name: str
    status: Mapping[str, Any]

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.namespace, self.name)

    @classmethod
    def of(cls, api_version: str, kind: str, namespace: str, name: str, status: Mapping[str, Any]) -> ObjectStatus:
        """``ObjectStatus(api_version, kind, namespace, name, status)`` at about 40% of the cost:
        the frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``, and
        a render makes one per route and Ingress (20k at the 10k benchmark). The same object
        (a test compares the two)."""
        made = _new(cls)
        fields = made.__dict__
        fields["api_version"] = api_version
        fields["kind"] = kind
        fields["namespace"] = namespace
        fields["name"] = name
        fields["status"] = status
        return made


_new = object.__new__

#: Released at 1970-01-01 like the Gateway API CRDs' own default status ("Waiting for controller").
_EPOCH = "1970-01-01T00:00:00Z"


def _waiting(ctype: str) -> dict[str, str]:
    return {"type": ctype, "status": "Unknown", "reason": "Pending", "message": "Waiting for controller",
            "lastTransitionTime": _EPOCH}


#: What a released object's status becomes once merged (see :class:`Released`): a route (of any
#: kind) keeps only the parent entries of other controllers, a BackendTLSPolicy their ancestors;
#: a GatewayClass, Gateway or ListenerSet the Gateway API CRDs' default status, which claims nothing (other fields of ours, listeners and
#: addresses, go too); an Ingress loses the load-balancer address we published.
#: (Plain data, as the writer sends it: never modified.)
RELEASED_STATUS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "HTTPRoute": {"parents": []},
    "GRPCRoute": {"parents": []},
    "TLSRoute": {"parents": []},
    "TCPRoute": {"parents": []},
    "UDPRoute": {"parents": []},
    "BackendTLSPolicy": {"ancestors": []},
    "GatewayClass": {"conditions": [_waiting("Accepted")]},
    "Gateway": {"conditions": [_waiting("Accepted"), _waiting("Programmed")]},
    "ListenerSet": {"conditions": [_waiting("Accepted"), _waiting("Programmed")]},
    "Ingress": {"loadBalancer": None},
})


@dataclass(frozen=True)
class Released(ObjectStatus):
    """The one way to say "remove this controller's entries from this object's status": an
    object that is no longer ours but still carries what we wrote. It is a status to write like
    any other (the writer merges it as it merges ours: see ``statusmerge.merged_status``), made
    with :meth:`of`. The render releases an HTTPRoute that carries a parent entry of ours but
    no longer names a Gateway of ours (``RenderResult.released``); the controller, which
    remembers what it owned, releases a GatewayClass, Gateway or Ingress it no longer owns."""

    @classmethod
    def of(cls, api_version: str, kind: str, namespace: str, name: str) -> Released:  # type: ignore[override]
        return cls(api_version, kind, namespace, name, RELEASED_STATUS[kind])


@dataclass(frozen=True)
class NotOurs:
    """An object of the snapshot this controller does not serve, or serves only in part (an
    HTTPRoute with parentRefs that do not name a Gateway of ours), and why: decided where
    ownership is decided (GatewayClass controllerName, Gateway class, HTTPRoute parentRefs,
    Ingress class), so tools only show it."""

    kind: str
    namespace: str  # "" for cluster-scoped
    name: str
    #: why, as a sentence ("its GatewayClass theirs belongs to controller example.com/other"); for
    #: an HTTPRoute, each parentRef that is not ours, joined with "; "
    reason: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.namespace, self.name)


@dataclass(frozen=True)
class EventRecord:
    """An Event the controller should post (the dedupe/bump policy lives in the writer)."""

    kind: str
    namespace: str
    name: str
    type: str  # "Warning" | "Normal"
    reason: str
    message: str
    uid: str = ""
    api_version: str = ""

    @property
    def dedupe_key(self) -> tuple[str, str, str, str, str]:
        return (self.kind, self.namespace, self.name, self.reason, self.message)


@dataclass(frozen=True)
class GatewayRef:
    """The Gateway a data plane of its own serves (render/planes.py, ``per-gateway``): what the
    controller creates that data plane's objects from."""

    namespace: str
    name: str
    uid: str
    class_name: str
    #: ``spec.infrastructure.labels`` and ``.annotations``, for every object of its data plane
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()
    #: the address ``spec.addresses`` asks for (the Service's loadBalancerIP), None: any
    address: str | None = None
    #: the ports its Service exposes and the container ports they go to (render/listenerports.py)
    ports: tuple[ServedPort, ...] = ()


@dataclass(frozen=True)
class Plane:
    """What one data plane is given: its document's bytes, its TLS Secret's files, its
    listener set, and which Gateways' (and ListenerSets') Programmed follows its pods."""

    #: ``""``: the shared data plane (the chart's); ``namespace/name``: a Gateway's own
    key: str
    config: bytes
    config_hash: str
    parts: tuple[tuple[str, bytes], ...] = ()
    tls_files: Mapping[str, bytes] = field(default_factory=lambda: _EMPTY_BYTES)
    certificates: tuple[CertificateEntry, ...] = ()
    listeners: frozenset[ListenerKey] = frozenset()
    delivery_error: str = ""
    document: Document | None = field(default=None, compare=False, repr=False)
    #: the Gateway whose own data plane it is (None: the shared data plane)
    gateway: GatewayRef | None = None
    #: the Gateways whose Programmed follows this data plane's pods, by (namespace, name)
    gateways: tuple[tuple[str, str], ...] = ()
    #: why the Gateway's requested address is not its address (Programmed ``address_reason``)
    address_problem: str = ""
    #: the ListenerSets whose Programmed follows this data plane's pods (their Gateway's), by
    #: (namespace, name)
    listener_sets: tuple[tuple[str, str], ...] = ()
    #: AddressNotAssigned (not yet the Service's) or AddressNotUsable (cannot be used)
    address_reason: str = "AddressNotAssigned"


@dataclass(frozen=True)
class RenderResult:
    #: The root twp.yaml bytes (the ConfigMap key ``twp.yaml``).
    config: bytes
    #: SHA-256 (lowercase hex) of ``config``: what /version.config_hash must report.
    config_hash: str
    #: ``(filename, bytes)`` of each part, in include order (empty when not split).
    parts: tuple[tuple[str, bytes], ...] = ()
    #: Files of the generated TLS Secret: ``<ns>.<name>.pfx`` and upstream-TLS PEM files.
    tls_files: Mapping[str, bytes] = field(default_factory=lambda: _EMPTY_BYTES)
    certificates: tuple[CertificateEntry, ...] = ()
    statuses: tuple[ObjectStatus, ...] = ()
    events: tuple[EventRecord, ...] = ()
    listeners: frozenset[ListenerKey] = frozenset()
    #: Non-empty when the config cannot be delivered (e.g. more parts than the pods mount);
    #: the controller must not write it and Gateways report Programmed False with this.
    delivery_error: str = ""
    #: The document ``config`` (and ``parts``) is the text of, as model values with their
    #: provenance: each route's source object, rule and match, each cluster's backend
    #: (twp/model.py). None in results not made by the render.
    document: Document | None = field(default=None, compare=False, repr=False)
    #: The rules no request can reach (every route of theirs is taken first by other rules),
    #: as reported by ``ShadowedRule`` events (render/reach.py), in route order.
    unreachable: tuple[Unreachable, ...] = ()
    #: Objects that carry a status entry of ours but are no longer ours: their entries go
    #: (written like ``statuses``), sorted by key.
    released: tuple[Released, ...] = ()
    #: What of the snapshot is not ours, and why (sorted by kind - GatewayClass, Gateway,
    #: HTTPRoute, Ingress - then namespace and name).
    not_ours: tuple[NotOurs, ...] = ()
    #: Every data plane, by key (the shared one, ``""``, first): the fields above from
    #: ``config`` to ``document`` are the shared data plane's (render/planes.py).
    planes: tuple[Plane, ...] = ()

    def data_planes(self) -> tuple[Plane, ...]:
        """:attr:`planes`; for a result not made by the render (no planes), its one shared data
        plane, serving every Gateway it has a status for."""
        if self.planes:
            return self.planes
        gateways = tuple(sorted((st.namespace, st.name) for st in self.statuses if st.kind == "Gateway"))
        sets = tuple(sorted((st.namespace, st.name) for st in self.statuses if st.kind == "ListenerSet"))
        return (Plane("", self.config, self.config_hash, self.parts, self.tls_files, self.certificates,
                      self.listeners, self.delivery_error, self.document, None, gateways, listener_sets=sets),)

    def plane(self, key: str) -> Plane | None:
        """The data plane ``key`` (``""``: the shared one)."""
        return next((p for p in self.data_planes() if p.key == key), None)

    def gateway_planes(self) -> tuple[Plane, ...]:
        """The data planes of their own Gateways have (``per-gateway``)."""
        return tuple(p for p in self.planes if p.gateway is not None)
