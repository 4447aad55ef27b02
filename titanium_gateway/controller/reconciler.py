"""The controller: informers -> coalescing trigger -> ONE worker -> render -> writers -> prober.

Every informer event only calls ``trigger()`` (one key: "the world changed"); the worker runs
at most one reconcile per ``--min-reconcile-ms``, start to start (at once after a quiet period),
and rests ``RECONCILE_MIN_IDLE`` seconds after each (so a change that just missed a reconcile
is served ``--min-reconcile-ms`` after that reconcile started, not after it ended). A reconcile
snapshots every cache (O(1) each), renders, and, while this replica leads, writes in this
order: TLS Secret, part ConfigMaps, root ConfigMap, pod pokes, Deployment stamp; hands the
statuses to the status writer's own worker (which writes them meanwhile, latest wins per object,
and retries its own failures); posts events; then it probes the data plane. When every ready
pod reports the written hash the controller triggers another reconcile, which decides
Programmed again on the last result (``render.programmed.reprogram``: the objects did not
change, so nothing else does) instead of rendering again; until then it polls every ``probe_interval`` seconds (re-probing only: nothing is rendered
again while no input of the render changed), and a pod still behind some seconds after its
config-poke is poked again (``PodPoker.repoke``: back-off, a cap, a rate limit). The first pass
of a leadership term probes before it writes any status (the pods may already serve what the
previous leader wrote). An exception in a reconcile is logged, counted and retried with
back-off: it never stops the loop. When the API server answered 429 with Retry-After (a config
writer, an Event), no reconcile starts before the Retry-After has passed (the max of the
back-off and the Retry-After), however many changes arrive meanwhile.

Every data plane of the result is delivered and probed this way (``RenderResult.planes``,
render/planes.py): the shared one with the parts of :class:`Parts`; with ``--data-plane-mode
per-gateway`` each Gateway's own with writers of its own (:class:`PlaneState`, made when the
plane appears), after the provisioner made its Deployment, Service and admin-token Secret. A
plane's Programmed follows its own pods (``Snapshot.plane_probes``); a change of one Gateway's
routes writes only that Gateway's ConfigMaps (the writers write only what changed).
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from titanium_gateway.controller.admission import refused_by_admission
from titanium_gateway.controller.gatewayapi import GatewayApiWatch
from titanium_gateway.controller.options import ControllerOptions
from titanium_gateway.controller.transform import CA_KEY
from titanium_gateway.kube import api as k
from titanium_gateway.kube.clock import REAL_CLOCK, Clock
from titanium_gateway.kube.informer import EventHandler, InformerSet, SharedInformer
from titanium_gateway.kube.ratelimit import RateLimiter
from titanium_gateway.kube.threads import CoreThread, dead
from titanium_gateway.kube.workqueue import CoalescingTrigger
from titanium_gateway.metrics import Registry
from titanium_gateway.prober.prober import (
    DataPlane,
    Prober,
    ProbeResult,
    awaiting_rollout,
    data_plane,
    is_data_plane_pod,
)
from titanium_gateway.render import planes as _planes
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.programmed import reprogram
from titanium_gateway.render.result import ObjectStatus, Plane, Released, RenderResult
from titanium_gateway.render.snapshot import KIND_FIELDS, Snapshot
from titanium_gateway.writers.base import LeaderGuard, NotLeader, Refused, retry_after_of, rfc3339
from titanium_gateway.writers.configmap import ConfigMapWriter
from titanium_gateway.writers.deployment import DeploymentStamper, canonical_listeners
from titanium_gateway.writers.events import EventWriter
from titanium_gateway.writers.pods import PodPoker
from titanium_gateway.writers.provisioner import Provisioner
from titanium_gateway.writers.secret import SecretWriter
from titanium_gateway.writers.status import RESOURCES as STATUS_RESOURCES
from titanium_gateway.writers.status import StatusWriter, WriteGuard, merged_status, status_differs

log = logging.getLogger(__name__)

RenderFn = Callable[[Snapshot, RenderOptions], RenderResult]
#: EndpointSlice index: ``namespace/service`` of the slice's Service (the data plane's slices in O(1))
SLICE_SERVICE_INDEX = "service"

#: informer name -> (resource, Snapshot field or None): the kinds always served. The Gateway API
#: kinds (and the ConfigMaps of BackendTLSPolicies) are watched where installed, at the version
#: served (controller/gatewayapi.py)
WATCHED: Mapping[str, tuple[k.Resource, str | None]] = {
    "Namespace": (k.NAMESPACES, "namespaces"),
    "Service": (k.SERVICES, "services"),
    "EndpointSlice": (k.ENDPOINT_SLICES, "endpoint_slices"),
    "Secret": (k.SECRETS, "secrets"),
    "IngressClass": (k.INGRESS_CLASSES, "ingress_classes"),
    "Ingress": (k.INGRESSES, "ingresses"),
    "Pod": (k.PODS, None),
}


#: informer name -> resource: with ``--data-plane-mode per-gateway``, the objects of Gateways' own
#: data planes (only those labelled by this controller: render/planes.py ``managed_selector``)
PLANE_WATCHED: Mapping[str, k.Resource] = {"PlanePod": k.PODS, "PlaneDeployment": k.DEPLOYMENTS}
#: informers whose objects the render does not read (their changes never render again)
NOT_RENDERED = frozenset({"Pod", *PLANE_WATCHED})

StatusKey = tuple[str, str, str]
#: kinds whose status the status writer writes (their echo does not trigger a reconcile)
STATUS_KINDS = frozenset(STATUS_RESOURCES)
RECONCILE_KEY = "reconcile"
#: Seconds the worker rests after a reconcile before the next one may start (the next start is
#: also at least ``--min-reconcile-ms`` after this one's: at most 2 reconciles a second by
#: default, however long each takes, and never back to back).
RECONCILE_MIN_IDLE = 0.1
#: Re-freeze the collector once this many cached objects changed since the last freeze (or after
#: any relist): the new objects leave the collector's scans too.
FREEZE_AFTER_CHANGES = 2000
#: The kinds whose ownership the controller remembers from one render to the next: the render
#: cannot tell from such an object that it was ours (an HTTPRoute's parent entries name us).
REMEMBERED_KINDS = frozenset({"GatewayClass", "Gateway", "ListenerSet", "Ingress"})


def _meta_rv(obj: Mapping[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


def _seen_versions(snap: Snapshot, statuses: Iterable[ObjectStatus]) -> dict[StatusKey, str]:
    """The resourceVersion of each object as the render saw it (absent ones left out): the status
    writer treats only a write onto exactly that version as one whose echo needs no reconcile
    (``StatusWriter.echoes``)."""
    out: dict[StatusKey, str] = {}
    for st in statuses:
        field = KIND_FIELDS.get(st.kind)
        cache = getattr(snap, field) if field is not None else None
        obj = None if cache is None else cache.get(f"{st.namespace}/{st.name}" if st.namespace else st.name)
        if obj is not None:
            out[st.key] = _meta_rv(obj)
    return out


def cached_object(informers: InformerSet, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
    """The cached object of ``kind`` (``namespace`` "" for a cluster-scoped one), or None (also
    when ``kind`` is a Gateway API kind that is not installed, so not watched)."""
    inf = informers.get(kind)
    return inf.get(namespace or None, name) if inf is not None else None


def _holds_ca(obj: Any) -> bool:
    data = obj.get("data") if isinstance(obj, Mapping) else None
    return isinstance(data, Mapping) and CA_KEY in data


class ReconcileMetrics:
    """The reconcile loop's own metric families, in ``registry``."""

    def __init__(self, registry: Registry) -> None:
        self.total = registry.counter("controller_runtime_reconcile_total", "Reconciles by result.", ["result"])
        self.time = registry.histogram("controller_runtime_reconcile_time_seconds", "Time of one reconcile.")
        self.render = registry.histogram("titanium_render_duration_seconds", "Time of the pure render.")
        self.bytes = registry.gauge("titanium_config_bytes", "Bytes of the rendered config (root + parts).")
        self.memo = registry.counter(
            "titanium_render_memo_total",
            "HTTPRoute translations by outcome: replayed from the last render or translated.", ["outcome"])
        self.cert_expiry = registry.gauge(
            "titanium_certificate_expiry_timestamp_seconds",
            "notAfter (Unix seconds) of each kubernetes.io/tls Secret converted for the data plane "
            "(Gateway listener certificateRefs and Ingress tls).", ["namespace", "name"])
        self.programmed = registry.gauge(
            "titanium_gateway_programmed",
            "1 while the Programmed condition this controller writes on a Gateway is True, else 0.",
            ["namespace", "name"])


@dataclasses.dataclass(frozen=True)
class Parts:
    """What a :class:`Controller` works with; ``controller/wiring.py`` builds them from the options."""

    #: one informer per ``WATCHED`` kind, not started; the controller subscribes to them
    informers: InformerSet
    trigger: CoalescingTrigger
    guard: LeaderGuard
    config_writer: ConfigMapWriter
    secret_writer: SecretWriter
    status_writer: StatusWriter
    event_writer: EventWriter
    poker: PodPoker
    stamper: DeploymentStamper
    prober: Prober
    render_fn: RenderFn
    #: the render's translation memo that ``render_fn`` uses (None when it uses none)
    render_cache: Any
    #: failure back-off of the reconcile key, and its cap (seconds)
    rate_limiter: RateLimiter
    max_retry_delay: float
    #: where the parts and the controller report their metrics
    registry: Registry
    #: a new informer of one kind (scope and cache transform, not subscribed, not started)
    make_informer: Callable[[str, k.Resource], SharedInformer]
    #: the Gateway API watch over the controller's informer set, given the subscribing informer
    #: factory and what to call when the kinds watched change (controller/gatewayapi.py)
    gateway_api: Callable[[InformerSet, Callable[[str, k.Resource], SharedInformer], Callable[[], None]],
                          GatewayApiWatch]
    #: ``per-gateway``: the objects of Gateways' own data planes, and the writers of one (None: shared)
    provisioner: Provisioner | None = None
    plane_writers: Callable[[Plane], PlaneWriters] | None = None


@dataclasses.dataclass(frozen=True)
class PlaneWriters:
    """The writers of one Gateway's own data plane (``Parts.plane_writers``)."""

    config_writer: ConfigMapWriter
    secret_writer: SecretWriter
    poker: PodPoker
    #: its pods' admin token
    token: str


@dataclasses.dataclass
class PlaneState:
    """What the controller knows of one data plane: where it is, its writers, what its pods
    confirmed and why not."""

    key: str
    namespace: str
    service: str
    config_writer: ConfigMapWriter
    secret_writer: SecretWriter
    poker: PodPoker
    #: its pods' admin token (None: the controller's own, the shared data plane's)
    token: str | None = None
    #: the Gateway's uid (a Gateway made again under the same name gets new writers)
    uid: str = ""
    confirmed: str | None = None
    message: str = ""
    #: why its objects could not be made (the provisioner's answer; "" when they are)
    problem: str = ""
    #: why the API server's admission refused its config or certificate write ("" when it did not)
    refused: str = ""
    #: the result's plane holds its parts' names only (their bytes were written and released)
    parts_released: bool = False
    #: True until its pods were probed in this leadership term
    unprobed: bool = True


class Controller:
    """The reconcile loop over its :class:`Parts`: informer events trigger, one worker renders,
    writes, and probes."""

    def __init__(self, opts: ControllerOptions, parts: Parts, *, clock: Clock = REAL_CLOCK,
                 stuck_after: float = 300.0, gc_tuning: bool = False, service_type: str = "LoadBalancer") -> None:
        self.opts = opts
        self.clock = clock
        self.render_options = opts.to_render_options(service_type)
        self.informers = parts.informers
        self.trigger = parts.trigger
        self.guard = parts.guard
        self.config_writer = parts.config_writer
        self.secret_writer = parts.secret_writer
        self.status_writer = parts.status_writer
        self.event_writer = parts.event_writer
        self.poker = parts.poker
        self.stamper = parts.stamper
        self.prober = parts.prober
        self.render_fn = parts.render_fn
        self.render_cache = parts.render_cache
        self.registry = parts.registry
        self._rate_limiter = parts.rate_limiter
        self._max_retry_delay = parts.max_retry_delay
        self._m = ReconcileMetrics(parts.registry)
        self._new_informer = parts.make_informer
        # the Gateway API kinds: watched where installed, at the version served
        self.gateway_api = parts.gateway_api(self.informers, self._make_informer, self.trigger.trigger)
        self.provisioner = parts.provisioner
        self._plane_writers = parts.plane_writers
        svc_ns, svc = self.render_options.data_plane_service
        #: the shared data plane's state, and each Gateway's own (``per-gateway``) by plane key
        self._shared = PlaneState(_planes.SHARED, svc_ns, svc, self.config_writer, self.secret_writer, self.poker)
        self._gateway_planes: dict[str, PlaneState] = {}
        #: True until the data plane was probed in this leadership term (or, without leader
        #: election, since the start): what the pods run is unknown, so the first pass probes
        #: before it submits statuses (``reconcile``)
        self._unprobed = True
        # GatewayClass/Gateway/Ingress statuses of the last render (the objects we own), and the
        # objects that stopped being ours: key -> (our last status, resourceVersion when noticed)
        self._owned: dict[StatusKey, ObjectStatus] = {}
        self._releasing: dict[StatusKey, tuple[ObjectStatus, str]] = {}
        self._worker: threading.Thread | None = None
        self._busy_since: float | None = None  # time.monotonic() when the running reconcile began
        self.stuck_after = stuck_after
        #: process-wide GC policy (the real process sets it; tests running many controllers in
        #: one interpreter do not): freeze the caches out of the collector once synced and after
        #: each relist or large batch (the render pauses the collector itself: ``gc_paused``).
        self.gc_tuning = gc_tuning
        self._frozen_at: tuple[int, int] | None = None  # (store changes, reflector lists) at the last freeze
        self._stopped = threading.Event()
        self.last_result: RenderResult | None = None
        #: what ``last_result`` was rendered from: the caches' change counts, the confirmed hash
        #: and the probe message (None: render again). Set only after a successful reconcile.
        self._rendered_from: tuple[Any, ...] | None = None
        self.renders = 0
        #: passes that decided Programmed again without a render (only the prober's answer changed)
        self.reprograms = 0
        self.reconciles = 0
        self._memo_seen = (0, 0)
        self._cert_series: set[tuple[str, str]] = set()
        self._gateway_series: set[tuple[str, str]] = set()
        self._subscribe()

    # the shared data plane's confirmed hash and probe message
    @property
    def _confirmed(self) -> str | None:
        return self._shared.confirmed

    @_confirmed.setter
    def _confirmed(self, value: str | None) -> None:
        self._shared.confirmed = value

    @property
    def _probe_message(self) -> str:
        return self._shared.message

    @_probe_message.setter
    def _probe_message(self, value: str) -> None:
        self._shared.message = value

    def _subscribe(self) -> None:
        """Every informer event triggers a reconcile, except the echo of our own status writes,
        the Pods that are not the data plane's and the ConfigMaps without a CA certificate (the
        Gateway API informers are subscribed as they are made: ``_make_informer``)."""
        for name in self._watched():
            self._subscribe_one(name, self.informers[name])

    def _watched(self) -> list[str]:
        """The informers always run: ``WATCHED``, and ``PLANE_WATCHED`` in per-gateway mode."""
        return [*WATCHED, *(name for name in PLANE_WATCHED if name in self.informers)]

    def _subscribe_one(self, name: str, inf: SharedInformer) -> None:
        on_add, on_update, on_delete = self._on_add, self._on_update, self._on_delete
        if name in STATUS_KINDS:
            on_update = functools.partial(self._on_status_kind_update, name)
        elif name == "Pod":
            on_add, on_update, on_delete = self._on_pod_add, self._on_pod_update, self._on_pod_delete
        elif name == "ConfigMap":
            on_add, on_update, on_delete = self._on_ca_add, self._on_ca_update, self._on_ca_add
        inf.add_event_handler(EventHandler(on_add, on_update, on_delete))

    def _make_informer(self, name: str, res: k.Resource) -> SharedInformer:
        """A new informer of one kind (``Parts.make_informer``), subscribed like the others."""
        inf = self._new_informer(name, res)
        self._subscribe_one(name, inf)
        return inf

    # --- informer events: one key, coalesced --------------------------------------------------
    def _on_add(self, obj: Any) -> None:
        self.trigger.trigger()

    def _on_update(self, old: Any, new: Any) -> None:
        if old is new:
            return
        self.trigger.trigger()

    def _on_status_kind_update(self, kind: str, old: Any, new: Any) -> None:
        """An object whose status we write: the echo of our own status write needs no reconcile
        (``StatusWriter.echoes``): 1000 route statuses would otherwise re-render the cluster
        every ``--min-reconcile-ms`` while they are written, for nothing."""
        if old is new or self.status_writer.echoes(kind, old, new):
            return
        self.trigger.trigger()

    def _on_delete(self, obj: Any) -> None:
        self.trigger.trigger()

    # ConfigMaps: only those that hold a CA certificate (``ca.crt``, what a BackendTLSPolicy may
    # name) trigger; the others change nothing the render reads
    def _on_ca_add(self, obj: Any) -> None:
        if _holds_ca(obj):
            self.trigger.trigger()

    def _on_ca_update(self, old: Any, new: Any) -> None:
        if old is not new and (_holds_ca(old) or _holds_ca(new)):
            self.trigger.trigger()

    # Pods: every Pod of the data-plane namespace is cached, only the data plane's trigger (the
    # controller's own pods and any other workload there do not make the controller re-probe)
    def _is_data_plane_pod(self, pod: Any) -> bool:
        svc_ns, svc = self.render_options.data_plane_service
        return is_data_plane_pod(pod, self.informers["Service"].get(svc_ns, svc),
                                 self.informers["EndpointSlice"].store.by_index(SLICE_SERVICE_INDEX, f"{svc_ns}/{svc}"),
                                 svc_ns, svc)

    def _on_pod_add(self, obj: Any) -> None:
        if self._is_data_plane_pod(obj):
            self.trigger.trigger()

    def _on_pod_update(self, old: Any, new: Any) -> None:
        if old is not new and (self._is_data_plane_pod(new) or self._is_data_plane_pod(old)):
            self.trigger.trigger()

    def _on_pod_delete(self, obj: Any) -> None:
        if self._is_data_plane_pod(obj):
            self.trigger.trigger()

    def data_plane(self) -> DataPlane:
        """The data plane of ``--data-plane-service`` as the caches show it now: its pods (poked,
        stamped) and its ready endpoints (probed)."""
        svc_ns, svc = self.render_options.data_plane_service
        return data_plane(self.informers["Service"].get(svc_ns, svc),
                          self.informers["EndpointSlice"].store.by_index(SLICE_SERVICE_INDEX, f"{svc_ns}/{svc}"),
                          self.informers["Pod"].list(), svc_ns, svc, pod_namespace=self.opts.data_plane_namespace)

    def _current(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        return cached_object(self.informers, kind, namespace, name)

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        self.gateway_api.start()  # before the informers: it decides which Gateway API kinds run
        self.informers.start()
        self._worker = CoreThread(self._run_worker, "reconcile-worker")
        self._worker.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopped.set()
        self.trigger.shut_down()
        self.gateway_api.stop()
        self.informers.stop()
        if self._worker is not None and self._worker is not threading.current_thread():
            self._worker.join(timeout)
        self.status_writer.close()

    def synced(self) -> bool:
        """Every cache listed (a Gateway API kind that is not required: listed or failing
        lastingly, then unknown to the render): a reconcile may start."""
        return all(self.informers[name].has_synced() for name in self._watched()) and self.gateway_api.synced()

    def readiness_problem(self) -> str:
        """"" when ready (``/readyz``), else why not: a cache has not listed yet, or its watch
        fails lastingly (its objects may be stale: docs/operations.md)."""
        problems = [f"{name}: {why}" for name in self._watched()
                    if (why := self.informers[name].stale(self.gateway_api.stale_after)
                        or ("" if self.informers[name].has_synced() else "not listed yet"))]
        problems += self.gateway_api.problems()
        return "; ".join(problems)

    def worker_running(self) -> bool:
        return self._worker is not None and self._worker.is_alive()

    def dead_threads(self) -> list[str]:
        """The core threads of the controller (reconcile worker, status worker, reflectors) that
        ended although not stopped: the process is broken (``/healthz`` 503, exit 1)."""
        stopping = self._stopped.is_set()
        out = ["reconcile-worker"] if dead(self._worker, stopping) else []
        if not stopping:
            out += self.status_writer.dead_threads()
            out += self.informers.dead_threads()
            out += self.gateway_api.dead_threads()
        return out

    def health_problem(self) -> str:
        """"" while healthy, else why not: a core thread died, or a reconcile has been running
        for ``stuck_after`` seconds."""
        if self._worker is None or not self._worker.is_alive():
            return "reconcile worker not running"
        gone = self.dead_threads()
        if gone:
            return f"core thread died: {', '.join(gone)}"
        busy = self._busy_since
        if busy is not None and time.monotonic() - busy >= self.stuck_after:
            return f"a reconcile has been running for more than {self.stuck_after:g} s"
        return self.gateway_api.stuck(also=self._watched())

    def alive(self) -> bool:
        """Every core thread runs and no reconcile has been running for ``stuck_after`` seconds."""
        return not self.health_problem()

    def on_started_leading(self) -> None:
        """A new term: forget what we wrote before (a peer may have written since) and what the
        pods confirmed; the first pass of the term probes them before it writes any status."""
        for w in (self.config_writer, self.secret_writer, self.stamper, self.poker):
            w.reset()
        if self.provisioner is not None:
            self.provisioner.reset()
        self._gateway_planes.clear()  # (made again with fresh writers)
        self.event_writer.reset()
        self._confirmed = None
        self._shared.problem = ""
        self._unprobed = True
        self._rendered_from = None
        self.trigger.trigger()

    # --- the worker ---------------------------------------------------------------------------
    def _run_worker(self) -> None:
        while not self.synced():
            if self._stopped.wait(0.05):
                return
        log.info("informers synced")
        self.trigger.trigger()
        while self.trigger.wait():
            start = time.monotonic()
            self._busy_since = start
            result = "success"
            try:
                if self.gc_tuning:
                    self._maybe_freeze_gc()
                if self.reconcile() is None:
                    result = "skipped"  # a follower: caches only
                self._rate_limiter.forget(RECONCILE_KEY)
            except NotLeader as e:
                result = "not_leader"
                log.info("stopped writing: %s", e)
            except Exception as e:
                result = "error"
                try:
                    delay = self.schedule_retry(e)
                except Exception:  # noqa: BLE001 - never lose the worker: retry at the longest back-off
                    log.exception("scheduling the retry failed")
                    delay = self._max_retry_delay
                    self.trigger.trigger(after=delay)
                log.exception("reconcile failed; retrying", extra={"retry_in_s": delay, "error": str(e)})
            finally:
                self._busy_since = None
                self.trigger.done()
                self._m.total.labels(result=result).inc()
                self._m.time.observe(time.monotonic() - start)
                self.reconciles += 1

    def _maybe_freeze_gc(self) -> None:
        """``gc.freeze()`` the caches after the first sync, after any relist and after a large
        batch of changes: the informer caches (~500k containers at 10k routes) then no longer
        take part in the collector's scans (they hold no reference cycles: dropped objects are
        freed by reference counting, frozen or not)."""
        mark = (self.informers.changes(), self.informers.lists())
        last = self._frozen_at
        if last is not None and mark[1] == last[1] and mark[0] - last[0] < FREEZE_AFTER_CHANGES:
            return
        t0 = time.monotonic()
        gc.collect()
        gc.freeze()
        self._frozen_at = mark
        log.debug("gc frozen", extra={"objects": gc.get_freeze_count(),
                                      "duration_ms": round((time.monotonic() - t0) * 1000, 1)})

    def schedule_retry(self, error: BaseException) -> float:
        """After a failed reconcile: retry after the exponential back-off, or after the server's
        Retry-After when it asked for longer (then as a hard gate: a change arriving meanwhile
        does not make the controller write sooner). Returns the delay."""
        delay = self._rate_limiter.when(RECONCILE_KEY)
        retry_after = retry_after_of(error)
        if retry_after is not None:
            delay = max(delay, retry_after)
            self.trigger.defer(delay)
        self.trigger.retry(delay)  # counted in workqueue_retries_total{name="reconcile"}
        return delay

    def snapshot(self) -> Snapshot:
        return self.versioned_snapshot()[0]

    def versioned_snapshot(self) -> tuple[Snapshot, tuple[Any, ...]]:
        """The render's input and a cheap version of it: the objects' (every cache's change count,
        taken with the cache view atomically, and the Gateway API kinds watched), then the
        confirmed hash and the probe message; everything else
        the render reads is fixed for the process (options) or only stamps new transitions
        (``now``)."""
        caches, versions = self.informers.versioned_snapshot()
        fields = {fld: caches[name] for name, (_res, fld) in WATCHED.items() if fld}
        gateway_api, gateway_api_version = self.gateway_api.snapshot(caches)
        fields.update(gateway_api)
        # (the Pods are read by the prober, not the render): what the objects are, then what the
        # prober said
        objects = (tuple(sorted((name, n) for name, n in versions.items() if name not in NOT_RENDERED)),
                   gateway_api_version)
        plane_probes = self._plane_probes()
        version = (objects, self._confirmed, self._probe_message, tuple(sorted(plane_probes.items())))
        snap = Snapshot(**fields, confirmed_config_hash=self._confirmed, probe_message=self._probe_message,
                        plane_probes=plane_probes, now=rfc3339(self.clock.wall()))
        return snap, version

    def _plane_probes(self) -> dict[str, tuple[str | None, str]]:
        """What each Gateway's own data plane confirmed, and why not (a provisioning problem first)."""
        return {key: (st.confirmed, st.problem or st.refused or st.message) for key, st in self._gateway_planes.items()}

    def reconcile(self) -> RenderResult | None:
        """One pass. Followers only keep their caches warm."""
        if not self.guard.is_leader():
            return None
        t0 = time.monotonic()
        snap, version = self.versioned_snapshot()
        self._rendered_from, prev = None, self._rendered_from  # set again only when this pass succeeds
        last = self.last_result
        usable = last is not None and prev is not None and self._still_written(last)
        reused = usable and version == prev
        if reused:
            # Nothing the render reads changed (e.g. the Programmed poll while a pod has not
            # confirmed yet): the last result stands; re-probe, and write only what failed before.
            assert last is not None
            result = last
        elif usable and version[0] == prev[0]:  # type: ignore[index]
            # Only the prober's answer changed (the pods confirmed the config, one fell behind, a
            # new reason): the objects are the same, so is everything but Programmed, which is
            # decided again on the last result (render/programmed.py) instead of rendering again.
            assert last is not None
            result = reprogram(last, assume_programmed=self.render_options.assume_programmed,
                               confirmed_hash=snap.confirmed_config_hash, probe_message=snap.probe_message,
                               now=snap.now, plane_probes=snap.plane_probes)
            self.last_result = result
            self.reprograms += 1
        else:
            # the previous result (its config text alone is 26 MB at 10k routes) is not needed
            # any more: let it go before the render builds the next one, not after
            self.last_result = None
            for st in self._states():
                st.parts_released = False
            result = self.render_fn(snap, self.render_options)  # (it pauses the cyclic GC itself)
            self.renders += 1
            render_s = time.monotonic() - t0
            self._m.render.observe(render_s)
            self._m.bytes.set(sum(len(p.config) + sum(len(b) for _, b in p.parts) for p in result.data_planes()))
            memo = self.render_cache
            if memo is not None:
                self._m.memo.labels("replayed").inc(memo.hits - self._memo_seen[0])
                self._m.memo.labels("translated").inc(memo.misses - self._memo_seen[1])
                self._memo_seen = (memo.hits, memo.misses)
            self.last_result = result
            self._certificate_metrics(result)
            log.debug("rendered", extra={"config_hash": result.config_hash,
                                         "duration_ms": round(render_s * 1000, 1)})
        delivered = self._deliver(result, snap)
        result = self.last_result if self.last_result is not None else result
        probed = False
        if self._unprobed and delivered:
            # The first pass of a term (a failover, a restart): the pods may serve this very
            # config already (the previous leader's). Probe before any status is written: a
            # render that did not know what the pods run would write Programmed=False/Pending
            # over the True the previous leader wrote, and True again a pass later.
            self._unprobed = False
            self._probe_all(delivered)
            if self._probes_now() != version[1:]:
                # what the pods run changed Programmed: this render's statuses are stale; the
                # pass the probe triggered decides Programmed again and writes them
                self._rendered_from = version
                log.debug("reconciled", extra={"config_hash": result.config_hash, "rendered": not reused,
                                               "statuses": "after the first probe"})
                return result
            probed = True
        if not reused:
            # Handed to the status worker (latest wins per object; it retries its own failures,
            # honouring Retry-After): the config path never waits for status writes.
            released, guards = self._released_statuses(result)
            statuses = (*result.statuses, *result.released, *released)
            self.status_writer.submit(statuses, guards, _seen_versions(snap, statuses))
            self._gateway_metrics(result)
        self.event_writer.write(result.events)
        event_wait = self.event_writer.paused_for()
        if event_wait > 0:  # 429 on an Event: the rest are posted once the Retry-After has passed
            self.trigger.defer(event_wait)
        bump_due = self.event_writer.policy.next_due()
        if bump_due is not None:  # bump on time even when nothing changes (a quiet cluster)
            self.trigger.trigger(after=max(0.0, bump_due - self.clock.now()))
        if delivered and not probed:
            self._probe_all(delivered)
        self._rendered_from = version
        log.debug("reconciled", extra={"config_hash": result.config_hash, "rendered": not reused,
                                       "duration_ms": round((time.monotonic() - t0) * 1000, 1)})
        return result

    def _probes_now(self) -> tuple[Any, ...]:
        """What the pods of every data plane confirmed (the tail of a snapshot's version)."""
        return (self._confirmed, self._probe_message, tuple(sorted(self._plane_probes().items())))

    # --- the data planes -------------------------------------------------------------------------
    def _states(self) -> list[PlaneState]:
        return [self._shared, *self._gateway_planes.values()]

    def _still_written(self, result: RenderResult) -> bool:
        """Every data plane of ``result`` whose part bytes were released is still written (a
        reuse of the result needs them: anything else renders again)."""
        for plane in result.data_planes():
            st = self._shared if plane.key == _planes.SHARED else self._gateway_planes.get(plane.key)
            if st is None or (st.parts_released and not st.config_writer.is_complete(plane.config_hash)):
                return False
        return True

    def _state(self, plane: Plane) -> PlaneState:
        """The state of a data plane of the result (a Gateway's made when it appears, and made
        again for a Gateway made again under the same name)."""
        if plane.gateway is None:
            return self._shared
        st = self._gateway_planes.get(plane.key)
        if st is None or st.uid != plane.gateway.uid:
            assert self._plane_writers is not None
            w = self._plane_writers(plane)
            names = _planes.plane_names(plane.gateway.name, plane.gateway.class_name)
            st = self._gateway_planes[plane.key] = PlaneState(
                plane.key, plane.gateway.namespace, names.service, w.config_writer, w.secret_writer, w.poker,
                w.token, plane.gateway.uid)
        return st

    def _deliver(self, result: RenderResult, snap: Snapshot) -> list[tuple[PlaneState, Plane, DataPlane]]:
        """Write every data plane of ``result`` (a Gateway's after its objects are made): TLS
        Secret, part ConfigMaps, root ConfigMap, pod pokes, the shared Deployment's stamp.
        Returns the planes delivered, with their pods, to probe."""
        planes = result.data_planes()
        if self.provisioner is not None:
            self._provision(result, snap)
        out: list[tuple[PlaneState, Plane, DataPlane]] = []
        released: dict[str, Plane] = {}
        for plane in planes:
            st = self._state(plane)
            if plane.delivery_error:
                log.error("config not delivered", extra={"config_hash": plane.config_hash, "data_plane": plane.key,
                                                         "error": plane.delivery_error})
                continue
            if st.problem:
                continue  # (its objects could not be made: the problem is its Programmed message)
            if st.confirmed == plane.config_hash:
                st.config_writer.confirm(plane.config_hash)
                st.secret_writer.confirm(plane.config_hash)
            try:
                st.secret_writer.write(plane)  # type: ignore[arg-type]
                written = st.config_writer.write(plane)  # type: ignore[arg-type]
            except (k.ApiError, Refused) as e:
                if not refused_by_admission(st, plane, e, self.trigger):
                    raise
                continue
            refused_by_admission(st, plane, None, self.trigger)
            if written:
                log.info("config written", extra={"config_hash": plane.config_hash, "data_plane": plane.key,
                                                   "bytes": len(plane.config), "parts": len(plane.parts)})
            own = plane.gateway is not None
            if (plane.parts or own) and not st.parts_released and st.config_writer.is_complete(plane.config_hash):
                # Written: the parts' bytes (24 MB at 10k routes + 10k Ingresses), and a Gateway's
                # own root (most are not split: 20 of them hold as much as the parts), are not
                # needed again; a reuse of this result needs the writer to still hold it written,
                # and anything else renders again.
                released[plane.key] = dataclasses.replace(plane, config=b"" if own else plane.config,
                                                          parts=tuple((n, b"") for n, _ in plane.parts))
                st.parts_released = True
            dp = self._data_plane_of(st, plane)
            st.poker.poke(dp.pods, plane.config_hash, plane.tls_files)  # a certificate change pokes too
            if plane.gateway is None:
                self.stamper.stamp(plane.listeners, dp.pods)
            out.append((st, released.get(plane.key, plane), dp))
        if released:
            self.last_result = _with_planes(result, released)
        return out

    def _provision(self, result: RenderResult, snap: Snapshot) -> None:
        """Make the objects of each Gateway's own data plane, and delete those of Gateways that
        have none any more (never while the Gateways cannot be read: the snapshot would be
        missing them)."""
        assert self.provisioner is not None
        own = result.gateway_planes()
        for plane in own:
            st = self._state(plane)
            problem = self.provisioner.ensure(plane, self._plane_object)
            if problem != st.problem:
                st.problem = problem
                self.trigger.trigger()  # (Programmed says it)
        keep = {(p.gateway.namespace, p.gateway.name) for p in own if p.gateway is not None}
        current = {p.key for p in own}
        for key in [key for key in self._gateway_planes if key not in current]:
            del self._gateway_planes[key]
        if "Gateway" in snap.unreadable or not self.gateway_api.synced():
            return
        services = [svc for svc in self.informers["Service"].list()
                    if _planes.is_managed((svc.get("metadata") or {}).get("labels"))]
        present = {(str((gw.get("metadata") or {}).get("namespace") or ""), str((gw.get("metadata") or {}).get("name")))
                   for gw in snap.gateways.values()}
        self.provisioner.remove(keep, present, self.informers["PlaneDeployment"].list(), services)

    def _plane_object(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The cached Deployment or Service of a Gateway's own data plane."""
        inf = self.informers.get("PlaneDeployment" if kind == "Deployment" else kind)
        return inf.get(namespace, name) if inf is not None else None

    def _data_plane_of(self, st: PlaneState, plane: Plane) -> DataPlane:
        if plane.gateway is None:
            return self.data_plane()
        ns, svc = st.namespace, st.service
        return data_plane(self.informers["Service"].get(ns, svc),
                          self.informers["EndpointSlice"].store.by_index(SLICE_SERVICE_INDEX, f"{ns}/{svc}"),
                          [p for p in self.informers["PlanePod"].list()
                           if (p.get("metadata") or {}).get("namespace") == ns], ns, svc, pod_namespace=ns)

    def _probe_all(self, delivered: list[tuple[PlaneState, Plane, DataPlane]]) -> None:
        """Probe each delivered data plane (in parallel when there are several: one slow plane
        must not delay the others)."""
        if len(delivered) == 1:
            self._probe_plane(*delivered[0])
            return
        with ThreadPoolExecutor(max_workers=min(8, len(delivered)), thread_name_prefix="planes") as pool:
            for done in [pool.submit(self._probe_plane, *d) for d in delivered]:
                done.result()

    def _certificate_metrics(self, result: RenderResult) -> None:
        """One expiry series per converted certificate; those of certificates gone are removed."""
        seen: set[tuple[str, str]] = set()
        for cert in result.certificates:
            if cert.not_after is None:
                continue
            ns, _, name = cert.source.partition("/")
            self._m.cert_expiry.labels(ns, name).set(cert.not_after)
            seen.add((ns, name))
        for key in self._cert_series - seen:
            self._m.cert_expiry.remove(*key)
        self._cert_series = seen

    def _gateway_metrics(self, result: RenderResult) -> None:
        """One Programmed series per Gateway this controller owns (the statuses it submits)."""
        seen: set[tuple[str, str]] = set()
        for st in result.statuses:
            if st.kind != "Gateway":
                continue
            conditions = st.status.get("conditions") or ()
            programmed = any(c.get("type") == "Programmed" and c.get("status") == "True" for c in conditions)
            self._m.programmed.labels(st.namespace, st.name).set(1 if programmed else 0)
            seen.add((st.namespace, st.name))
        for key in self._gateway_series - seen:
            self._m.programmed.remove(*key)
        self._gateway_series = seen

    def _still_ours(self, cur: Mapping[str, Any], ours: ObjectStatus) -> bool:
        """The object still carries the status we rendered for it (nobody wrote since)."""
        return not status_differs(cur, merged_status(ours.kind, cur, ours.status, self.opts.controller_name))

    def _released_statuses(self, result: RenderResult) -> tuple[list[Released], dict[StatusKey, WriteGuard]]:
        """A GatewayClass, Gateway or Ingress the render reported on last time but no longer does
        (its class changed, or the class's controller did) while it still exists: our status must
        not keep claiming Accepted/Programmed. It is reset to the CRDs' "Waiting for controller"
        default, only while it still carries exactly the status we rendered (a guard checked again
        after a 409): the new owner's status is never overwritten."""
        owned = {st.key: st for st in result.statuses if st.kind in REMEMBERED_KINDS}
        for key, st in self._owned.items():
            if key not in owned and key not in self._releasing:
                self._releasing[key] = (st, _meta_rv(self._current(*key)))
        self._owned = owned
        out: list[Released] = []
        guards: dict[StatusKey, WriteGuard] = {}
        for key, (ours, first_rv) in list(self._releasing.items()):
            cur = self._current(*key)
            if key in owned or cur is None:  # ours again, or deleted
                del self._releasing[key]
                continue
            release = Released.of(ours.api_version, ours.kind, ours.namespace, ours.name)
            if not status_differs(cur, merged_status(ours.kind, cur, release.status, self.opts.controller_name)):
                del self._releasing[key]  # released
            elif self._still_ours(cur, ours):
                out.append(release)
                guards[key] = lambda c, o=ours: self._still_ours(c, o)
            elif _meta_rv(cur) != first_rv:
                del self._releasing[key]  # another controller wrote its status since: not ours to clear
        return out, guards

    def _probe(self, result: RenderResult, dp: DataPlane) -> None:
        """Probe the shared data plane (``result``'s own fields)."""
        self._probe_plane(self._shared, result.data_planes()[0], dp)

    def _probe_plane(self, st: PlaneState, plane: Plane, dp: DataPlane) -> None:
        eps = dp.endpoints
        # with the listener stamp, a pod confirms only once it was created with the current set
        # (a Gateway's own Deployment always carries it)
        stamped = bool(self.opts.data_plane_deployment) or plane.gateway is not None
        rollout = awaiting_rollout(eps, canonical_listeners(plane.listeners)) if stamped else ""
        if rollout:
            pr = ProbeResult(None, rollout)
        else:
            no_endpoints = "" if eps else dp.no_endpoint_message()
            pr = self.prober.probe(eps, plane.config_hash, no_endpoints=no_endpoints) if st.token is None else \
                self.prober.probe(eps, plane.config_hash, no_endpoints=no_endpoints, token=st.token)
        if pr.examined:
            # a pod still behind some seconds after its poke may have been given the old files
            # by its kubelet (the pod change arrived before the ConfigMap change): poke it again,
            # and come back when the next re-poke is due (sooner than the poll, or once all
            # ready pods confirmed while one that is not ready is still behind)
            st.poker.repoke(dp.pods, pr.confirmed_pods, pr.lasting_pods)
            repoke_at = st.poker.next_repoke()
            if repoke_at is not None:
                self.trigger.trigger(after=max(0.0, repoke_at - self.clock.now()))
        if pr.confirmed_hash == plane.config_hash:
            if st.confirmed != plane.config_hash:
                log.info("config confirmed by every ready data-plane pod",
                         extra={"config_hash": plane.config_hash, "pods": len(eps), "data_plane": plane.key})
                st.confirmed = plane.config_hash
                st.message = ""
                st.config_writer.confirm(plane.config_hash)
                st.secret_writer.confirm(plane.config_hash)
                self.trigger.trigger()
            return
        changed = pr.message != st.message
        if changed:
            log.info("config pending", extra={"config_hash": plane.config_hash, "reason": pr.message,
                                              "data_plane": plane.key})
        st.message = pr.message
        if st.confirmed == plane.config_hash:
            st.confirmed = None  # a pod fell behind (e.g. restarted): Programmed goes Pending
            self.trigger.trigger()
        elif changed:
            # the render put the previous probe message into Programmed: render it again now (the
            # coalescing window applies), not only at the next poll
            self.trigger.trigger()
        else:
            self.trigger.trigger(after=self.opts.probe_interval)


def _with_planes(result: RenderResult, changed: Mapping[str, Plane]) -> RenderResult:
    """``result`` with some of its data planes replaced (the shared one's fields too)."""
    planes = tuple(changed.get(p.key, p) for p in result.planes)
    shared = changed.get(_planes.SHARED)
    if shared is None:
        return dataclasses.replace(result, planes=planes)
    return dataclasses.replace(result, planes=planes, parts=shared.parts)
