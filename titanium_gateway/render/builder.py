"""The render's state: one :class:`RenderContext` per render, filled by every translator.

Order of a render (see :func:`titanium_gateway.render.render`):
GatewayClasses -> Gateways (listeners, certificates) -> HTTPRoutes -> Ingresses -> routes
ordered -> the :class:`~titanium_gateway.twp.model.Document` -> ``emit`` -> the Gateways'
statuses with Programmed (``ctx.status.finish``) -> result.

Context API for translators (HTTPRoute, Ingress). Everything a translator adds is a model value
(:mod:`titanium_gateway.twp.model`), never text:

* ``ctx.snapshot``, ``ctx.options``, ``ctx.now`` — inputs (never mutate objects).
* ``ctx.backends`` — :class:`~titanium_gateway.render.backends.BackendIndex`; use
  ``backends.resolve_backend(ctx.backends, ns, svc, port, settings)`` then
  ``ctx.add_cluster(resolution.cluster)``.
* ``ctx.grants`` — :class:`~titanium_gateway.render.referencegrant.ReferenceGrantIndex`.
* ``ctx.listener_sets`` — the ListenerSets of ours by (namespace, name), once translated
  (``listenerset.ListenerSetInfo``: a route attaches to one like to a Gateway).
* ``ctx.backend_tls`` — :class:`~titanium_gateway.render.backendtls.BackendTlsPolicies`: the
  cluster settings a Service port's BackendTLSPolicy asks for (``settings(ns, svc, port name, s)``).
* ``ctx.namespace_labels(ns)`` — labels of a Namespace (absent Namespace: only
  ``kubernetes.io/metadata.name``).
* ``ctx.gateway_ports`` — ``{data-plane port: "HTTP" | "HTTPS"}`` used by programmed Gateway
  listeners of the shared data plane (filled before Ingress runs; Ingress reports
  PortUnavailable on a clash).
* ``ctx.add_listener(port, decrypt, plane="") -> bool`` — a listener of the data plane
  ``plane`` (render/planes.py: ``""`` the shared one); False (nothing changed) when the port is
  already bound there with the other ``decrypt`` value.
* ``ctx.add_cluster(cluster) -> str`` — dedup by id (first wins); returns the id. Use
  :func:`~titanium_gateway.render.backends.cluster_id` for ids.
* ``ctx.add_route(route) -> bool`` — a :class:`~titanium_gateway.twp.model.Route` with its
  precedence key (:func:`titanium_gateway.render.precedence.key_from_parts`), in the data plane
  ``route.plane``. False when the id is already taken in that plane (nothing added).
* ``ctx.host_part(host)`` — the precedence part of a match host, once per render.
* ``ctx.convert(namespace, name)`` — the certificate conversion of a Secret (None when there is
  no such Secret), once per render.
* ``ctx.bind_certificate(namespace, name, hosts, default_rank=None, plane="") -> CertificateConversion``
  — converts the kubernetes.io/tls Secret ``namespace/name``, and on success adds
  ``<ns>.<name>.pfx`` to the TLS files of the data plane ``plane`` and records SNI ``hosts``;
  ``default_rank`` (a tuple, smaller wins, e.g. ``(created, ns, name, index)``) makes it a
  default candidate: the smallest rank over the plane's bindings becomes its one
  ``default: true`` item. On error (missing Secret, conversion failure) nothing is bound and
  ``.error`` says why (InvalidCertificateRef).
* ``ctx.add_tls_file(name, data, plane="")`` — another file of the plane's TLS Secret (upstream-TLS PEM).
* ``ctx.add_status(ObjectStatus)`` — into the render's status collector, ``ctx.status``
  (render/status/collector.py; recorded for a replay too), keyed by (kind, namespace, name);
  the last one wins. A :class:`~titanium_gateway.render.result.Released` (our entries to
  remove from an object no longer ours) is added the same way and ends in
  ``RenderResult.released``. A Gateway's or ListenerSet's status is not added: its outcome is
  (``ctx.status.outcome``), and the collector builds the status once Programmed is known.
* ``ctx.route_status(RouteStatusOutcome)``, ``ctx.class_status(GatewayClassOutcome)``,
  ``ctx.policy_status(PolicyStatusOutcome)`` — what a translator decided for a route's, a
  GatewayClass's, a BackendTLSPolicy's status, built into it by render/status/ (``routes.py``,
  ``gatewayclass.py``, ``policies.py``) and added as above (an Ingress's: its translator's
  ``IngressStatuses``, render/status/ingress.py).
* ``ctx.not_ours(NotOurs)`` — an object not ours, and why (decided by its translator).
* ``ctx.add_event(EventRecord)`` — deduplicated by ``EventRecord.dedupe_key``.
* ``ctx.conditions(obj, previous)`` — a :class:`~titanium_gateway.render.status.conditions.ConditionList`
  stamped with the object's generation and ``ctx.now``.

Precedence tiers (``precedence.TIER_*``): NORMAL for routes whose match is exact, DEGRADED for a
500 route carrying only the expressible part of a match it cannot express (ordered after every
normal route, so it never shadows), DEFAULT_BACKEND for the Ingress defaultBackend (last).
A route that cannot be honoured answers 500 with its reason code only (``unhonoured.unhonoured``;
the why is in status and Events); an invalid
share of a weighted split points at a cluster without destinations (503).
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.render import fields as f
from titanium_gateway.render.backends import BackendIndex, resolve_backend
from titanium_gateway.render.backendtls import BackendTlsPolicies
from titanium_gateway.render.certificates import (
    CertificateConversion,
    TLSFiles,
    convert_tls_secret,
    pfx_file_name,
)
from titanium_gateway.render.memo import Recording, order_from_hint
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.planes import SHARED
from titanium_gateway.render.precedence import host_part
from titanium_gateway.render.referencegrant import ReferenceGrantIndex
from titanium_gateway.render.result import (
    CertificateEntry,
    EventRecord,
    ListenerKey,
    NotOurs,
    ObjectStatus,
)
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.render.status import gatewayclass as gatewayclass_status
from titanium_gateway.render.status import policies as policy_status
from titanium_gateway.render.status.collector import StatusCollector
from titanium_gateway.render.status.conditions import ConditionList
from titanium_gateway.render.status.routes import RouteParents, RouteStatusOutcome
from titanium_gateway.twp.model import Backend, Certificate, Cluster, Listener, Route

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def _not_ours_order(key: tuple[str, str, str]) -> tuple[int, str, str]:
    kind, namespace, name = key
    return (kinds.rank(kind), f"{namespace}/{name}" if namespace else name, kind)
#: The sort key of the routes: precedence key, then id (ids are unique, so the sort never
#: compares further).
route_order = operator.attrgetter("key", "id")


@dataclass
class _CertBinding:
    namespace: str
    name: str
    plane: str
    hosts: set[str] = field(default_factory=set)
    default_rank: tuple[Any, ...] | None = None
    not_after: int | None = None


def with_id_suffix(cluster: Cluster, suffix: str) -> Cluster:
    """The cluster under the id ``<id><suffix>`` (an Ingress backend-protocol H2C or GRPC)."""
    backend = cluster.backend
    return dataclasses.replace(cluster, id=cluster.id + suffix,
                               backend=None if backend is None else dataclasses.replace(backend, id_suffix=suffix))


class RenderContext:
    """Everything one render accumulates (see module doc for the API)."""

    def __init__(self, snapshot: Snapshot, options: RenderOptions) -> None:
        self.snapshot = snapshot
        self.options = options
        self.now = snapshot.now
        self.backends = BackendIndex(snapshot)
        self.grants = ReferenceGrantIndex(snapshot)
        self.backend_tls = BackendTlsPolicies(snapshot, options.secret_namespaces)
        #: (namespace, name) -> the ListenerSets of ours (render/listenerset.py, after the Gateways)
        self.listener_sets: dict[tuple[str, str], Any] = {}
        self._ns_labels: dict[str, dict[str, str]] = {}
        for key, ns in snapshot.namespaces.items():
            meta = f.metadata(ns)
            name = f.text(meta.get("name")) or key
            labels = meta.get("labels")
            clean = {
                str(k): str(v) for k, v in (labels.items() if isinstance(labels, Mapping) else ())
                if isinstance(k, str) and isinstance(v, str)
            }
            clean.setdefault(NAMESPACE_NAME_LABEL, name)
            self._ns_labels[name] = clean
        self.gateway_ports: dict[int, str] = {}
        #: data plane -> data-plane port -> decrypts TLS (the shared plane is always there)
        self.plane_listeners: dict[str, dict[int, bool]] = {SHARED: {}}
        self.clusters: dict[str, Cluster] = {}
        #: (data plane, route id) -> route
        self.routes: dict[tuple[str, str], Route] = {}
        self._certs: dict[tuple[str, str, str], _CertBinding] = {}
        self.tls_files = TLSFiles()  # a PFX is made when its file is read
        #: data plane -> the names of its TLS files
        self._plane_files: dict[str, dict[str, None]] = {}
        #: every status, release and Gateway/ListenerSet outcome of this render (render/status/)
        self.status = StatusCollector()
        #: the builder of route statuses from their outcomes (render/status/routes.py)
        self.route_parents = RouteParents(options.controller_name, self.now)
        self._events: dict[tuple[str, str, str, str, str], EventRecord] = {}
        self._not_ours: dict[tuple[str, str, str], NotOurs] = {}
        #: While set, every output call is also recorded here (see render/memo.py).
        self.recording: Recording | None = None
        #: cluster id -> (Service + EndpointSlice versions, cluster) of the previous render
        self.known_clusters: Mapping[str, tuple[Any, Cluster]] = {}
        #: the previous render's routes in order: a near-sorted start for the sort
        self.order_hint: Sequence[Route] = ()
        #: the previous render's routes by (data plane, route id), and the routes this render's
        #: translations made (not replayed): what tells the order what changed
        self.order_index: Mapping[tuple[str, str], Route] = {}
        self.fresh_routes: list[Route] = []
        self.taken_routes: dict[tuple[str, str], Route] = {}
        #: match host -> its precedence part
        self._host_parts: dict[str | None, str] = {}
        #: Secret key ("namespace/name") -> its certificate conversion (None: no such Secret)
        self._conversions: dict[str, CertificateConversion | None] = {}

    # -- inputs -----------------------------------------------------------------------------
    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        labels = self._ns_labels.get(namespace)
        if labels is None:
            return {NAMESPACE_NAME_LABEL: namespace}
        return labels

    def conditions(self, obj: Mapping[str, Any], previous: Iterable[Mapping[str, Any]]) -> ConditionList:
        conds = ConditionList(obj, previous=previous, now=self.now)
        if self.recording is not None:
            self.recording.conditions.append(conds)
        return conds

    def convert(self, namespace: str, name: str) -> CertificateConversion | None:
        """``convert_tls_secret`` of the Secret ``namespace/name`` once per render (a Secret is
        often bound by many Ingresses and listeners, and each call decodes and hashes its PEM
        text to find the conversion); None when there is no such Secret."""
        key = f"{namespace}/{name}"
        try:
            return self._conversions[key]
        except KeyError:
            pass
        secret = self.snapshot.secrets.get(key)
        conv = self._conversions[key] = None if secret is None else convert_tls_secret(secret)
        return conv

    def missing_secret(self, namespace: str, name: str) -> str:
        """Why the Secret ``namespace/name`` is not in the snapshot: absent, or in a namespace
        whose Secrets the controller does not read (``--secret-namespaces``, set by the chart)."""
        readable = self.options.secret_namespaces
        if readable and namespace not in readable:
            return (f"Secret {namespace}/{name} cannot be read: the controller reads Secrets in "
                    f"{', '.join(readable)} only (--secret-namespaces; chart values "
                    "controller.secretNamespaces, controller.secretsClusterWide)")
        return f"Secret {namespace}/{name} not found"

    def certificate_problem(self, namespace: str, name: str) -> str:
        """Why the Secret ``namespace/name`` cannot be a certificate ("" when it can), with the
        messages of :meth:`bind_certificate`, binding nothing."""
        conv = self.convert(namespace, name)
        if conv is None:
            return self.missing_secret(namespace, name)
        return "" if conv.ok else f"Secret {namespace}/{name}: {conv.error}"

    # -- shared values ----------------------------------------------------------------------
    def host_part(self, host: str | None) -> str:
        """:func:`~titanium_gateway.render.precedence.host_part` once per render for each match
        host (the HTTPRoute and Ingress translators share it)."""
        part = self._host_parts.get(host)
        if part is None:
            part = self._host_parts[host] = host_part(host)
        return part

    # -- outputs ----------------------------------------------------------------------------
    @property
    def listeners(self) -> dict[int, bool]:
        """The listeners of the shared data plane."""
        return self.plane_listeners[SHARED]

    def add_plane(self, plane: str) -> None:
        """A data plane that exists even when nothing is added to it (a Gateway's, without a
        usable listener yet)."""
        self.plane_listeners.setdefault(plane, {})

    def add_listener(self, port: int, decrypt: bool, plane: str = SHARED) -> bool:
        if self.recording is not None:
            self.recording.listeners.append((port, decrypt, plane))
        listeners = self.plane_listeners.get(plane)
        if listeners is None:
            listeners = self.plane_listeners[plane] = {}
        current = listeners.get(port)
        if current is None:
            listeners[port] = decrypt
            return True
        return current == decrypt

    def add_cluster(self, cluster: Cluster) -> str:
        cid = cluster.id
        if self.recording is not None:
            self._record_cluster(cluster)
        if cid not in self.clusters:
            self.clusters[cid] = cluster
        return cid

    def _record_cluster(self, cluster: Cluster) -> None:
        """How to get this cluster again in a later render: its id (its backend says which
        Service port to resolve again: its endpoints may have changed by then), or the constant
        itself (no destinations)."""
        rec = self.recording
        assert rec is not None
        if cluster.id in rec.cluster_ids:
            return
        if cluster.backend is not None:
            rec.cluster_ids.add(cluster.id)
            rec.clusters.append(cluster.id)
        elif not cluster.destinations:
            rec.cluster_ids.add(cluster.id)
            rec.clusters.append(cluster)
        else:
            rec.volatile = True

    def resolve(self, backend: Backend) -> Cluster | None:
        """The cluster of ``backend`` in this render (None when it no longer resolves)."""
        res = resolve_backend(self.backends, backend.namespace, backend.service, backend.port, backend.settings)
        if res.cluster is None:
            return None
        return with_id_suffix(res.cluster, backend.id_suffix) if backend.id_suffix else res.cluster

    def add_route(self, route: Route) -> bool:
        if self.routes.setdefault((route.plane, route.id), route) is not route:
            return False  # the id is taken: the first route keeps it
        self.fresh_routes.append(route)
        if self.recording is not None:
            self.recording.routes.append(route)
        return True

    def bind_certificate(
        self,
        namespace: str,
        name: str,
        hosts: Iterable[str],
        default_rank: tuple[Any, ...] | None = None,
        plane: str = SHARED,
    ) -> CertificateConversion:
        conv = self.convert(namespace, name)
        if conv is None:
            return CertificateConversion(None, self.missing_secret(namespace, name))
        if not conv.ok:
            return CertificateConversion(None, f"Secret {namespace}/{name}: {conv.error}")
        if self.recording is not None:
            hosts = tuple(hosts)
            self.recording.certificates.append((namespace, name, hosts, default_rank, plane))
        binding = self._certs.get((plane, namespace, name))
        if binding is None:
            binding = self._certs[(plane, namespace, name)] = _CertBinding(namespace, name, plane,
                                                                           not_after=conv.not_after)
        binding.hosts.update(h for h in hosts if h)
        if default_rank is not None and (binding.default_rank is None or default_rank < binding.default_rank):
            binding.default_rank = default_rank
        file = pfx_file_name(namespace, name)
        self.tls_files.set_certificate(file, conv)
        self._plane_files.setdefault(plane, {})[file] = None
        return conv

    def add_tls_file(self, name: str, data: bytes, plane: str = SHARED) -> None:
        if self.recording is not None:
            self.recording.tls_files.append((name, data, plane))
        self.tls_files[name] = data
        self._plane_files.setdefault(plane, {})[name] = None

    def add_status(self, status: ObjectStatus) -> None:
        if self.recording is not None:
            self.recording.statuses.append(status)
        self.status.record(status)

    def route_status(self, outcome: RouteStatusOutcome) -> None:
        """A route's status, built from what its translator decided."""
        rec = self.recording
        self.add_status(self.route_parents.status(outcome, rec.conditions if rec is not None else None))

    def class_status(self, outcome: gatewayclass_status.GatewayClassOutcome) -> None:
        """A GatewayClass's status, built from what its translator decided."""
        rec = self.recording
        self.add_status(gatewayclass_status.status(outcome, self.now, rec.conditions if rec is not None else None))

    def policy_status(self, outcome: policy_status.PolicyStatusOutcome) -> None:
        """A policy's status, built from what was decided for it."""
        rec = self.recording
        self.add_status(policy_status.status(self.route_parents, outcome, rec.conditions if rec is not None else None))

    def foreign_gateways(self, kind: str = kinds.GATEWAY.kind) -> dict[tuple[str, str], str]:
        """(namespace, name) -> why a Gateway (a ``kind``) is not ours (after its translation)."""
        return {(r.namespace, r.name): r.reason for r in self._not_ours.values() if r.kind == kind}

    def foreign_listener_sets(self) -> dict[tuple[str, str], str]:
        """(namespace, name) -> why a ListenerSet is not ours (after its translation)."""
        return self.foreign_gateways(kinds.LISTENER_SET.kind)

    def foreign_parents(self) -> dict[str, dict[tuple[str, str], str]]:
        """Each kind a route's parentRef may name -> (namespace, name) -> why not ours."""
        return {kind: self.foreign_gateways(kind) for kind in kinds.PARENT_KINDS}

    def not_ours(self, record: NotOurs) -> None:
        if self.recording is not None:
            self.recording.not_ours.append(record)
        self._not_ours[record.key] = record

    def add_event(self, event: EventRecord) -> None:
        if self.recording is not None:
            self.recording.events.append(event)
        self._events.setdefault(event.dedupe_key, event)

    # -- memo (render/memo.py) ----------------------------------------------------------------
    def record(self, fn: Callable[..., Any], *args: Any) -> tuple[Recording, Any]:
        """``fn(*args)`` with its effects recorded: ``(recording, fn's result)``. A recording
        made while another one is open is added to that one too."""
        outer, rec = self.recording, Recording()
        self.recording = rec
        try:
            out = fn(*args)
        finally:
            self.recording = outer
        if outer is not None:
            outer.absorb(rec)
        return rec, out

    def can_replay(self, rec: Recording) -> bool:
        """Whether :meth:`replay` would apply ``rec`` now (nothing is changed): each of its
        clusters is in this render, or resolves again, and its routes' ids are free."""
        known = self.clusters
        for c in rec.clusters:
            if type(c) is str and c not in known:
                hit = self.known_clusters.get(c)
                if hit is None:
                    return False
                backend = hit[1].backend
                assert backend is not None
                if hit[0] != self.backends.version(backend.namespace, backend.service) and self.resolve(backend) is None:
                    return False
        keys = rec.route_keys if len(rec.route_keys) == len(rec.routes) else [(r.plane, r.id) for r in rec.routes]
        return self.routes.keys().isdisjoint(keys)

    def replay(self, rec: Recording) -> bool:
        """Apply a recording's effects (added to the open recording, if any). False, with
        nothing changed, when it cannot apply exactly (a cluster no longer resolves, a route id
        is taken): the caller translates the object instead."""
        known = self.clusters
        clusters: list[Cluster] = []
        for c in rec.clusters:
            if type(c) is not str:
                clusters.append(c)
            elif c not in known:
                hit = self.known_clusters.get(c)
                if hit is None:
                    return False
                cluster = hit[1]
                backend = cluster.backend
                assert backend is not None
                if hit[0] != self.backends.version(backend.namespace, backend.service):
                    got = self.resolve(backend)  # the Service or its EndpointSlices changed
                    if got is None:
                        return False
                    cluster = got
                clusters.append(cluster)
        routes = self.routes
        keys = rec.route_keys if len(rec.route_keys) == len(rec.routes) else [(r.plane, r.id) for r in rec.routes]
        if not routes.keys().isdisjoint(keys):
            return False
        for cluster in clusters:
            known.setdefault(cluster.id, cluster)
        routes.update(zip(keys, rec.routes, strict=True))
        if len(rec.status_items) == len(rec.statuses):
            self.status.record_items(rec.status_items)
        else:
            for status in rec.statuses:
                self.status.record(status)
        for event in rec.events:
            self._events.setdefault(event.dedupe_key, event)
        for record in rec.not_ours:
            self._not_ours[record.key] = record
        outer, self.recording = self.recording, None  # absorbed whole below, not call by call
        try:
            for port, decrypt, plane in rec.listeners:
                self.add_listener(port, decrypt, plane)
            for namespace, name, hosts, rank, plane in rec.certificates:
                self.bind_certificate(namespace, name, hosts, rank, plane)
        finally:
            self.recording = outer
        for name, data, plane in rec.tls_files:
            self.tls_files[name] = data
            self._plane_files.setdefault(plane, {})[name] = None
        if outer is not None:
            outer.absorb(rec)
        return True

    # -- finishing --------------------------------------------------------------------------
    def end_translation(self) -> None:
        """Drop what only the translation needed once every object is translated: what the
        ordering and emit make next then no longer adds to it at the render's peak."""
        self._host_parts.clear()
        self._conversions.clear()

    def take_ordered_routes(self) -> list[Route]:
        """The routes in precedence order (key, then id); the context keeps none (but
        :attr:`taken_routes`, the routes by (data plane, id), for the next render's order)."""
        routes = self.routes
        hint = self.order_hint
        if hint:  # replayed routes are the very objects of the previous render
            items: list[Route] = order_from_hint(hint, routes, route_order, self.fresh_routes, self.order_index)
        else:
            items = sorted(routes.values(), key=route_order)
        self.order_hint, self.order_index, self.fresh_routes = (), {}, []
        self.taken_routes = routes
        self.routes = {}
        return items

    def ordered_routes(self) -> list[dict[str, Any]]:
        """The routes in order as the document's plain data (``order`` = 1, 2, ...); the context
        is unchanged (tests and tools; the render uses :meth:`take_ordered_routes`)."""
        from titanium_gateway.twp.emit import route_data

        return [route_data(r, n + 1) for n, r in enumerate(sorted(self.routes.values(), key=route_order))]

    def sorted_clusters(self) -> list[Cluster]:
        return [self.clusters[k] for k in sorted(self.clusters)]

    def cluster_table(self) -> dict[str, tuple[Any, Cluster]]:
        """cluster id -> (its Service and EndpointSlice versions, the cluster) of the clusters
        resolved from a Service whose versions are known: what the next render's replays re-use."""
        table: dict[str, tuple[Any, Cluster]] = {}
        version = self.backends.version
        for cid, cluster in self.clusters.items():
            backend = cluster.backend
            if backend is not None:
                ver = version(backend.namespace, backend.service)
                if ver is not None:
                    table[cid] = (ver, cluster)
        return table

    def planes(self) -> list[str]:
        """Every data plane with something in it (the shared one always), in key order."""
        keys = set(self.plane_listeners)
        keys.update(plane for plane, _ in self.routes)
        keys.update(self._plane_files)
        return sorted(keys)

    def listener_values(self, plane: str = SHARED) -> tuple[Listener, ...]:
        return tuple(Listener(port, decrypt) for port, decrypt in sorted(self.plane_listeners.get(plane, {}).items()))

    def listener_keys(self, plane: str = SHARED) -> frozenset[ListenerKey]:
        return frozenset(ListenerKey(p, d) for p, d in self.plane_listeners.get(plane, {}).items())

    def certificate_entries(self, plane: str = SHARED) -> tuple[CertificateEntry, ...]:
        bindings = [b for b in self._certs.values() if b.plane == plane]
        ranked = [b for b in bindings if b.default_rank is not None]
        default = min(ranked, key=lambda b: (b.default_rank, b.namespace, b.name)) if ranked else None
        entries = [
            CertificateEntry(
                file=pfx_file_name(b.namespace, b.name),
                hosts=tuple(sorted(b.hosts)),
                source=f"{b.namespace}/{b.name}",
                default=b is default,
                not_after=b.not_after,
            )
            for b in bindings
        ]
        return tuple(sorted(entries, key=lambda e: e.file))

    def plane_tls_files(self, plane: str = SHARED) -> TLSFiles:
        """The files of the plane's TLS Secret, by name (nothing is made)."""
        names = self._plane_files.get(plane, {})
        files = self.tls_files
        return TLSFiles.of(files, sorted(names))

    @staticmethod
    def certificate_values(entries: Iterable[CertificateEntry]) -> tuple[Certificate, ...]:
        return tuple(Certificate(e.file, e.hosts, e.default) for e in entries)

    def events(self) -> tuple[EventRecord, ...]:
        return tuple(self._events[k] for k in sorted(self._events))

    def not_ours_records(self) -> tuple[NotOurs, ...]:
        records = self._not_ours
        return tuple(records[k] for k in sorted(records, key=_not_ours_order))
