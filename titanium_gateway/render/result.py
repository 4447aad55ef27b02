"""The output of the pure render: data, never side effects."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from titanium_gateway import kinds
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

#: What a released object's status becomes once merged (see :class:`Released`): a route (of any
#: kind) keeps only the parent entries of other controllers, a BackendTLSPolicy their ancestors;
#: a GatewayClass, Gateway or ListenerSet the Gateway API CRDs' default status, which claims nothing (other fields of ours, listeners and
#: addresses, go too); an Ingress loses the load-balancer address we published (``Kind.released``).
RELEASED_STATUS: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {row.kind: row.released for row in kinds.KINDS if row.released is not None})


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


#: (status, reason, message) of a condition
Outcome = tuple[bool, str, str]


# -- the outcomes of the objects whose status follows a data plane: a Gateway or ListenerSet
# and its listeners, everything their status says but Programmed (render/status/programmed.py
# builds the status with the data plane's delivery, in the render and again in ``reprogram``)
@dataclass(frozen=True, slots=True)
class ListenerOutcome:
    """A listener's status entry but its Programmed condition."""

    name: str
    supported_kinds: tuple[Mapping[str, str], ...]
    attached: int
    #: valid (Programmed follows the delivery), else Programmed False Invalid
    valid: bool
    accepted: Outcome
    resolved: Outcome
    conflicted: Outcome
    #: an entry of a ListenerSet: conflicted, it is also not accepted nor programmed, with the
    #: conflict's reason (the Gateway API's ListenerEntryStatus)
    set_entry: bool
    #: the listener's conditions in the object's status (their transition times are kept)
    previous: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True)
class GatewayOutcome:
    """A Gateway's (``kind`` Gateway) or ListenerSet's status but its Programmed conditions."""

    api_version: str
    kind: str
    namespace: str
    name: str
    #: ``metadata.generation`` (observedGeneration)
    generation: int
    #: the object's conditions in its status
    previous: tuple[Mapping[str, Any], ...]
    acceptance: Outcome
    #: whether Programmed follows the delivery (a Gateway: accepted with a valid listener; a
    #: ListenerSet: accepted), else Programmed False: ``unprogrammed``, or Invalid
    valid: bool
    #: the data plane that serves it (``""`` the shared one; a Gateway's ``namespace/name``);
    #: None: none, ``no_plane`` says why
    plane: str | None
    no_plane: str = ""
    #: why its requested address is not (yet) its address (Programmed False, AddressNotAssigned)
    address_problem: str = ""
    #: a Gateway's ``status.addresses`` (None: not written, a ListenerSet)
    addresses: tuple[Mapping[str, str], ...] | None = None
    #: a Gateway's ``status.attachedListenerSets`` (None: not written)
    attached_listener_sets: int | None = None
    #: the listeners (None: not written: a ListenerSet not allowed, or whose Gateway is not accepted)
    listeners: tuple[ListenerOutcome, ...] | None = ()
    #: the reason that goes with ``address_problem``: AddressNotAssigned (not yet the Service's)
    #: or AddressNotUsable (its data plane cannot use it)
    address_reason: str = "AddressNotAssigned"
    #: Programmed when not valid, if not Invalid (a ListenerSet not accepted: why)
    unprogrammed: Outcome | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.namespace, self.name)


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
    """What the render gives: every data plane's delivery, keyed by plane (:attr:`planes`; the
    shared one, ``""``, is one key among the others), and what is global to the render."""

    statuses: tuple[ObjectStatus, ...] = ()
    events: tuple[EventRecord, ...] = ()
    #: The rules no request can reach (every route of theirs is taken first by other rules),
    #: as reported by ``ShadowedRule`` events (render/reach.py), in route order.
    unreachable: tuple[Unreachable, ...] = ()
    #: Objects that carry a status entry of ours but are no longer ours: their entries go
    #: (written like ``statuses``), sorted by key.
    released: tuple[Released, ...] = ()
    #: What of the snapshot is not ours, and why (sorted by kind - GatewayClass, Gateway,
    #: HTTPRoute, Ingress - then namespace and name).
    not_ours: tuple[NotOurs, ...] = ()
    #: Every data plane, in key order (the shared one, ``""``, first; render/planes.py): its
    #: document's bytes, parts, hash, TLS files, certificates, listeners, delivery error, document.
    planes: tuple[Plane, ...] = ()
    #: The typed outcomes of the Gateways and ListenerSets (their statuses but Programmed), by
    #: key: ``render.status.programmed.reprogram`` builds their statuses again from them.
    gateway_outcomes: tuple[GatewayOutcome, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def of_config(cls, config: bytes, config_hash: str, *, parts: tuple[tuple[str, bytes], ...] = (),
                  tls_files: Mapping[str, bytes] | None = None, certificates: tuple[CertificateEntry, ...] = (),
                  listeners: frozenset[ListenerKey] = frozenset(), delivery_error: str = "",
                  document: Document | None = None, **rest: Any) -> RenderResult:
        """A result of one shared data plane (a result not made by the render: tests, tools),
        serving every Gateway (and ListenerSet) it has a status for."""
        statuses = rest.get("statuses", ())
        gateways = tuple(sorted((st.namespace, st.name) for st in statuses if st.kind == kinds.GATEWAY.kind))
        sets = tuple(sorted((st.namespace, st.name) for st in statuses if st.kind == kinds.LISTENER_SET.kind))
        plane = Plane("", config, config_hash, parts, tls_files if tls_files is not None else _EMPTY_BYTES,
                      certificates, listeners, delivery_error, document, None, gateways, listener_sets=sets)
        return cls(planes=(plane,), **rest)

    def data_planes(self) -> tuple[Plane, ...]:
        """:attr:`planes`."""
        return self.planes

    def plane(self, key: str) -> Plane | None:
        """The data plane ``key`` (``""``: the shared one)."""
        return next((p for p in self.planes if p.key == key), None)

    @property
    def shared(self) -> Plane:
        """The shared data plane (every result has one: the Ingresses' and, in ``shared`` mode,
        every Gateway's)."""
        return self.planes[0]

    def gateway_planes(self) -> tuple[Plane, ...]:
        """The data planes of their own Gateways have (``per-gateway``)."""
        return tuple(p for p in self.planes if p.gateway is not None)

    # The shared data plane's delivery, read through it (never held twice).
    @property
    def config(self) -> bytes:
        return self.shared.config

    @property
    def config_hash(self) -> str:
        return self.shared.config_hash

    @property
    def parts(self) -> tuple[tuple[str, bytes], ...]:
        return self.shared.parts

    @property
    def tls_files(self) -> Mapping[str, bytes]:
        return self.shared.tls_files

    @property
    def certificates(self) -> tuple[CertificateEntry, ...]:
        return self.shared.certificates

    @property
    def listeners(self) -> frozenset[ListenerKey]:
        return self.shared.listeners

    @property
    def delivery_error(self) -> str:
        return self.shared.delivery_error

    @property
    def document(self) -> Document | None:
        return self.shared.document
