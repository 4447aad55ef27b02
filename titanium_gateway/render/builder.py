"""The render accumulator: one :class:`RenderContext` per render, filled by every translator.

Order of a render (see :func:`titanium_gateway.render.render`):
GatewayClasses -> Gateways (listeners, certificates) -> HTTPRoutes -> ``ingress.translate(ctx)``
-> routes ordered -> emit -> Programmed conditions -> result.

Context API for translators (HTTPRoute, Ingress):

* ``ctx.snapshot``, ``ctx.options``, ``ctx.now`` — inputs (never mutate objects).
* ``ctx.backends`` — :class:`~titanium_gateway.render.backends.BackendIndex`; use
  ``backends.resolve_backend(ctx.backends, ns, svc, port, settings)`` then
  ``ctx.add_cluster(resolution.cluster)``.
* ``ctx.grants`` — :class:`~titanium_gateway.render.referencegrant.ReferenceGrantIndex`.
* ``ctx.namespace_labels(ns)`` — labels of a Namespace (absent Namespace: only
  ``kubernetes.io/metadata.name``).
* ``ctx.gateway_ports`` — ``{data-plane port: "HTTP" | "HTTPS"}`` used by programmed Gateway
  listeners (filled before Ingress runs; Ingress reports PortUnavailable on a clash).
* ``ctx.add_listener(port, decrypt) -> bool`` — a data-plane listener; False (nothing changed)
  when the port is already bound with the other ``decrypt`` value.
* ``ctx.add_cluster(cluster) -> str`` — dedup by ``cluster["id"]`` (first wins); returns the id.
  Use :func:`~titanium_gateway.render.backends.cluster_id` for ids.
* ``ctx.add_route(route, key) -> bool`` — ``route`` is the emitted dict WITHOUT ``order``
  (keys: ``id``, ``match``, one action, optional ``mirror``, ``transforms``, ``policies``,
  ``limits``); ``key`` from :func:`titanium_gateway.render.precedence.route_key` (pass the
  same ``route_id``). False when the id is already taken (nothing added).
* ``ctx.bind_certificate(namespace, name, hosts, default_rank=None) -> CertificateConversion``
  — converts the kubernetes.io/tls Secret ``namespace/name`` (memoized), and on success adds
  ``<ns>.<name>.pfx`` to the TLS files and records SNI ``hosts``; ``default_rank`` (a tuple,
  smaller wins, e.g. ``(created, ns, name, index)``) makes it a default candidate: the
  smallest rank over all bindings becomes the one ``default: true`` item. On error (missing
  Secret, conversion failure) nothing is bound and ``.error`` says why (InvalidCertificateRef).
* ``ctx.add_tls_file(name, data)`` — another file of the TLS Secret (upstream-TLS PEM).
* ``ctx.add_status(ObjectStatus)`` — keyed by (kind, namespace, name); the last one wins.
* ``ctx.add_event(EventRecord)`` — deduplicated by ``EventRecord.dedupe_key``.
* ``ctx.conditions(obj, previous)`` — a :class:`~titanium_gateway.render.conditions.ConditionList`
  stamped with the object's generation and ``ctx.now``.
* ``ctx.shared["gateways"]`` — ``{(ns, name): gateway.GatewayInfo}`` of our Gateways (read only).

Precedence tiers (``precedence.TIER_*``): NORMAL for routes whose match is exact, DEGRADED for a
500 route carrying only the expressible part of a match it cannot express (ordered after every
normal route, so it never shadows), DEFAULT_BACKEND for the Ingress defaultBackend (last).
A route that cannot be honoured is ``{"id", "match", "directResponse": {"status": 500, "body":
"<Reason>: <why>"}}``; an invalid share of a weighted split points at a cluster with
``destinations: []`` (503).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from titanium_gateway.render.backends import BackendIndex
from titanium_gateway.render.certificates import CertificateConversion, convert_tls_secret, pfx_file_name
from titanium_gateway.render.conditions import ConditionList
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.precedence import PrecedenceKey
from titanium_gateway.render.referencegrant import ReferenceGrantIndex
from titanium_gateway.render.result import CertificateEntry, EventRecord, ListenerKey, ObjectStatus
from titanium_gateway.render.snapshot import Snapshot

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass
class _CertBinding:
    namespace: str
    name: str
    hosts: set[str] = field(default_factory=set)
    default_rank: tuple[Any, ...] | None = None


class RenderContext:
    """Everything one render accumulates (see module doc for the API)."""

    def __init__(self, snapshot: Snapshot, options: RenderOptions) -> None:
        self.snapshot = snapshot
        self.options = options
        self.now = snapshot.now
        self.backends = BackendIndex(snapshot)
        self.grants = ReferenceGrantIndex(snapshot)
        self._ns_labels: dict[str, dict[str, str]] = {}
        for key, ns in snapshot.namespaces.items():
            meta = ns.get("metadata") if isinstance(ns, Mapping) else None
            meta = meta if isinstance(meta, Mapping) else {}
            name = meta.get("name") if isinstance(meta.get("name"), str) else key
            labels = meta.get("labels")
            clean = {
                str(k): str(v) for k, v in (labels.items() if isinstance(labels, Mapping) else ())
                if isinstance(k, str) and isinstance(v, str)
            }
            clean.setdefault(NAMESPACE_NAME_LABEL, name)
            self._ns_labels[name] = clean
        self.gateway_ports: dict[int, str] = {}
        self.listeners: dict[int, bool] = {}
        self.clusters: dict[str, dict[str, Any]] = {}
        self._routes: dict[str, tuple[PrecedenceKey, dict[str, Any]]] = {}
        self._route_count = 0
        self._certs: dict[tuple[str, str], _CertBinding] = {}
        self.tls_files: dict[str, bytes] = {}
        self.statuses: dict[tuple[str, str, str], ObjectStatus] = {}
        self._events: dict[tuple[str, str, str, str, str], EventRecord] = {}
        #: Free-form data shared between translators (e.g. Gateway info for HTTPRoutes).
        self.shared: dict[str, Any] = {}

    # -- inputs -----------------------------------------------------------------------------
    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        labels = self._ns_labels.get(namespace)
        if labels is None:
            return {NAMESPACE_NAME_LABEL: namespace}
        return labels

    def conditions(self, obj: Mapping[str, Any], previous: Iterable[Mapping[str, Any]]) -> ConditionList:
        return ConditionList(obj, previous=previous, now=self.now)

    # -- outputs ----------------------------------------------------------------------------
    def add_listener(self, port: int, decrypt: bool) -> bool:
        current = self.listeners.get(port)
        if current is None:
            self.listeners[port] = decrypt
            return True
        return current == decrypt

    def add_cluster(self, cluster: Mapping[str, Any]) -> str:
        cid = str(cluster["id"])
        if cid not in self.clusters:
            self.clusters[cid] = dict(cluster)
        return cid

    def add_route(self, route: Mapping[str, Any], key: PrecedenceKey) -> bool:
        rid = str(route["id"])
        if rid in self._routes:
            return False
        self._routes[rid] = (key, dict(route))
        return True

    def bind_certificate(
        self,
        namespace: str,
        name: str,
        hosts: Iterable[str],
        default_rank: tuple[Any, ...] | None = None,
    ) -> CertificateConversion:
        secret = self.snapshot.secrets.get(f"{namespace}/{name}")
        if secret is None:
            return CertificateConversion(None, f"Secret {namespace}/{name} not found")
        conv = convert_tls_secret(secret)
        if not conv.ok:
            return CertificateConversion(None, f"Secret {namespace}/{name}: {conv.error}")
        binding = self._certs.setdefault((namespace, name), _CertBinding(namespace, name))
        binding.hosts.update(h for h in hosts if h)
        if default_rank is not None and (binding.default_rank is None or default_rank < binding.default_rank):
            binding.default_rank = default_rank
        assert conv.pfx is not None
        self.tls_files[pfx_file_name(namespace, name)] = conv.pfx
        return conv

    def add_tls_file(self, name: str, data: bytes) -> None:
        self.tls_files[name] = data

    def add_status(self, status: ObjectStatus) -> None:
        self.statuses[status.key] = status

    def add_event(self, event: EventRecord) -> None:
        self._events.setdefault(event.dedupe_key, event)

    # -- finishing --------------------------------------------------------------------------
    def ordered_routes(self) -> list[dict[str, Any]]:
        """Routes sorted by precedence key, each with ``order`` = 1, 2, ... (id first); copies,
        the context is unchanged (the render itself uses :meth:`take_ordered_routes`)."""
        items = sorted(self._routes.values(), key=lambda kr: (kr[0], kr[1]["id"]))
        out: list[dict[str, Any]] = []
        for n, (_, route) in enumerate(items, start=1):
            ordered = {"id": route["id"], "order": n}
            ordered.update(route)  # "id" keeps its first position
            out.append(ordered)
        return out

    def take_ordered_routes(self) -> Iterator[dict[str, Any]]:
        """The routes in precedence order with ``order`` set in the stored dict (no copy; the
        writer emits keys in contract order whatever the dict's order). Hands the routes over one at a time and drops the
        context's references, so each route dict is freed as soon as the writer has turned it
        into text (the render's memory peak holds the routes or their text, not both)."""
        items: list[Any] = sorted(self._routes.values(), key=lambda kr: (kr[0], kr[1]["id"]))
        self._route_count = len(items)
        self._routes.clear()
        for n in range(len(items)):
            route = items[n][1]
            items[n] = None
            route["order"] = n + 1
            yield route

    def route_count(self) -> int:
        return len(self._routes) or self._route_count

    def sorted_clusters(self) -> list[dict[str, Any]]:
        return [self.clusters[k] for k in sorted(self.clusters)]

    def listener_keys(self) -> frozenset[ListenerKey]:
        return frozenset(ListenerKey(p, d) for p, d in self.listeners.items())

    def certificate_entries(self) -> tuple[CertificateEntry, ...]:
        ranked = [b for b in self._certs.values() if b.default_rank is not None]
        default = min(ranked, key=lambda b: (b.default_rank, b.namespace, b.name)) if ranked else None
        entries = [
            CertificateEntry(
                file=pfx_file_name(b.namespace, b.name),
                hosts=tuple(sorted(b.hosts)),
                source=f"{b.namespace}/{b.name}",
                default=b is default,
            )
            for b in self._certs.values()
        ]
        return tuple(sorted(entries, key=lambda e: e.file))

    def events(self) -> tuple[EventRecord, ...]:
        return tuple(self._events[k] for k in sorted(self._events))

    def sorted_statuses(self) -> tuple[ObjectStatus, ...]:
        return tuple(self.statuses[k] for k in sorted(self.statuses))
