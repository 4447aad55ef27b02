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
Programmed again on the last result (``render.status.programmed.reprogram``: the objects did not
change, so nothing else does) instead of rendering again; until then it polls every ``probe_interval`` seconds (re-probing only: nothing is rendered
again while no input of the render changed), and a pod still behind some seconds after its
config-poke is poked again (``PodPoker.repoke``: back-off, a cap, a rate limit). The first pass
of a leadership term probes before it writes any status (the pods may already serve what the
previous leader wrote). An exception in a reconcile is logged, counted and retried with
back-off: it never stops the loop. When the API server answered 429 with Retry-After (a config
writer, an Event), no reconcile starts before the Retry-After has passed (the max of the
back-off and the Retry-After), however many changes arrive meanwhile.

Every data plane of the result is delivered and probed this way (``RenderResult.planes``,
render/planes.py); a plane's Programmed follows its own pods (``Snapshot.probe(key)``).

The parts of the loop, each in a module of its own:

* ``controller/informers.py``: the informers it runs besides the Gateway API kinds
  (``controller/gatewayapi.py``: discovery, soundness);
* ``controller/eventfilter.py``: which informer events trigger a reconcile;
* ``controller/reuse.py``: whether a pass renders, reuses the last result or decides Programmed again;
* ``controller/delivery.py``: the data planes' states and one pass's writes to each (a report);
* ``controller/probing.py``: what each delivered data plane's pods confirmed;
* ``controller/releases.py``: the statuses of objects no longer ours;
* ``controller/reconcile_metrics.py``: the loop's metrics.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.controller import reuse
from titanium_gateway.controller.delivery import Delivery, PlaneState, PlaneWriters
from titanium_gateway.controller.eventfilter import EventFilter
from titanium_gateway.controller.gatewayapi import GatewayApiWatch
from titanium_gateway.controller.informers import (
    NOT_RENDERED,
    PLANE_WATCHED,
    SLICE_SERVICE_INDEX,
    WATCHED,
    cached_object,
)
from titanium_gateway.controller.options import ControllerOptions
from titanium_gateway.controller.probing import PlaneProbing
from titanium_gateway.controller.reconcile_metrics import ReconcileMetrics
from titanium_gateway.controller.releases import Releases, seen_versions
from titanium_gateway.kube import api as k
from titanium_gateway.kube.clock import REAL_CLOCK, Clock
from titanium_gateway.kube.informer import InformerSet, SharedInformer
from titanium_gateway.kube.ratelimit import RateLimiter
from titanium_gateway.kube.threads import CoreThread, dead
from titanium_gateway.kube.workqueue import CoalescingTrigger
from titanium_gateway.metrics import Registry
from titanium_gateway.prober.prober import DataPlane, Prober, is_data_plane_pod
from titanium_gateway.render import planes as _planes
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.result import Plane, RenderResult
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.render.status.programmed import reprogram
from titanium_gateway.writers.base import LeaderGuard, NotLeader, retry_after_of, rfc3339
from titanium_gateway.writers.configmap import ConfigMapWriter
from titanium_gateway.writers.deployment import DeploymentStamper
from titanium_gateway.writers.events import EventWriter
from titanium_gateway.writers.pods import PodPoker
from titanium_gateway.writers.provisioner import Provisioner
from titanium_gateway.writers.secret import SecretWriter
from titanium_gateway.writers.status import StatusWriter

__all__ = ["NOT_RENDERED", "PLANE_WATCHED", "RECONCILE_KEY", "RECONCILE_MIN_IDLE", "SLICE_SERVICE_INDEX", "WATCHED",
           "Controller", "Parts", "PlaneState", "PlaneWriters", "ReconcileMetrics", "RenderFn", "cached_object"]

log = logging.getLogger(__name__)

RenderFn = Callable[[Snapshot, RenderOptions], RenderResult]
#: kinds whose status the status writer writes (their echo does not trigger a reconcile)
STATUS_KINDS = kinds.STATUS_KINDS
RECONCILE_KEY = "reconcile"
#: Seconds the worker rests after a reconcile before the next one may start (the next start is
#: also at least ``--min-reconcile-ms`` after this one's: at most 2 reconciles a second by
#: default, however long each takes, and never back to back).
RECONCILE_MIN_IDLE = 0.1
#: Re-freeze the collector once this many cached objects changed since the last freeze (or after
#: any relist): the new objects leave the collector's scans too.
FREEZE_AFTER_CHANGES = 2000


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
        self.render_fn = parts.render_fn
        self.render_cache = parts.render_cache
        self.registry = parts.registry
        self._rate_limiter = parts.rate_limiter
        self._max_retry_delay = parts.max_retry_delay
        self._m = ReconcileMetrics(parts.registry)
        self._new_informer = parts.make_informer
        #: which informer events trigger a reconcile
        self.events = EventFilter(self.trigger, self.status_writer.echoes, self._is_data_plane_pod)
        # the Gateway API kinds: watched where installed, at the version served
        self.gateway_api = parts.gateway_api(self.informers, self._make_informer, self.trigger.trigger)
        self.provisioner = parts.provisioner
        svc_ns, svc = self.render_options.data_plane_service
        #: the data planes' states (the shared one's, each Gateway's own) and one pass's writes
        self.delivery = Delivery(
            PlaneState(_planes.SHARED, svc_ns, svc, self.config_writer, self.secret_writer, self.poker),
            self.informers, self.stamper, self.trigger, pod_namespace=opts.data_plane_namespace,
            can_remove=lambda _snap: self.gateway_api.synced(), provisioner=parts.provisioner,
            plane_writers=parts.plane_writers)
        self.probing = PlaneProbing(parts.prober, self.trigger, clock, shared_stamped=bool(opts.data_plane_deployment),
                                    probe_interval=opts.probe_interval)
        self.releases = Releases(self._current, opts.controller_name)
        #: True until the data plane was probed in this leadership term (or, without leader
        #: election, since the start): what the pods run is unknown, so the first pass probes
        #: before it submits statuses (``reconcile``)
        self._unprobed = True
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
        #: whether the current pass rendered (a pass that did not is idle for the trigger's spacing)
        self._rendered = True
        #: the result whose statuses were last submitted (all of them, or those it changed)
        self._submitted: RenderResult | None = None
        self.reconciles = 0
        for name in self._watched():
            self.events.subscribe(name, self.informers[name])

    @property
    def prober(self) -> Prober:
        return self.probing.prober

    @prober.setter
    def prober(self, value: Prober) -> None:
        self.probing.prober = value

    # the shared data plane's confirmed hash and probe message
    @property
    def _shared(self) -> PlaneState:
        return self.delivery.shared

    @property
    def _confirmed(self) -> str | None:
        return self._shared.confirmed

    @property
    def _probe_message(self) -> str:
        return self._shared.message

    def _watched(self) -> list[str]:
        """The informers always run: ``WATCHED``, and ``PLANE_WATCHED`` in per-gateway mode."""
        return [*WATCHED, *(name for name in PLANE_WATCHED if name in self.informers)]

    def _make_informer(self, name: str, res: k.Resource) -> SharedInformer:
        """A new informer of one kind (``Parts.make_informer``), subscribed like the others (the
        Gateway API informers are made as the kinds are discovered)."""
        inf = self._new_informer(name, res)
        self.events.subscribe(name, inf)
        return inf

    def _is_data_plane_pod(self, pod: Any) -> bool:
        svc_ns, svc = self.render_options.data_plane_service
        return is_data_plane_pod(pod, self.informers["Service"].get(svc_ns, svc),
                                 self.informers["EndpointSlice"].store.by_index(SLICE_SERVICE_INDEX, f"{svc_ns}/{svc}"),
                                 svc_ns, svc)

    def data_plane(self) -> DataPlane:
        """The data plane of ``--data-plane-service`` as the caches show it now: its pods (poked,
        stamped) and its ready endpoints (probed)."""
        return self.delivery.pods(self._shared)

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
        self.delivery.reset()  # (Gateways' planes made again with fresh writers)
        self.event_writer.reset()
        self._unprobed = True
        self._rendered_from = None
        self._submitted = None
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
            self._rendered = True
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
                self.trigger.done(idle=not self._rendered)
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
        taken with the cache view atomically, and the Gateway API kinds watched), then what the
        pods of each data plane confirmed; everything else the render reads is fixed for the
        process (options) or only stamps new transitions (``now``)."""
        caches, versions = self.informers.versioned_snapshot()
        fields = {fld: caches[name] for name, (_res, fld) in WATCHED.items() if fld}
        gateway_api, gateway_api_version = self.gateway_api.snapshot(caches)
        fields.update(gateway_api)
        # (the Pods are read by the prober, not the render): what the objects are, then what the
        # prober said
        objects = (tuple(sorted((name, n) for name, n in versions.items() if name not in NOT_RENDERED)),
                   gateway_api_version)
        plane_probes = self.delivery.probes()
        version = (objects, *self._probes_now(plane_probes))
        snap = Snapshot(**fields, confirmed_config_hash=self._confirmed, probe_message=self._probe_message,
                        plane_probes=plane_probes, now=rfc3339(self.clock.wall()))
        return snap, version

    def _probes_now(self, plane_probes: Mapping[str, tuple[str | None, str]] | None = None) -> tuple[Any, ...]:
        """What the pods of every data plane confirmed (the tail of a snapshot's version)."""
        probes = self.delivery.probes() if plane_probes is None else plane_probes
        return (self._confirmed, self._probe_message, tuple(sorted(probes.items())))

    def reconcile(self) -> RenderResult | None:
        """One pass. Followers only keep their caches warm."""
        if not self.guard.is_leader():
            return None
        t0 = time.monotonic()
        snap, version = self.versioned_snapshot()
        self._rendered_from, prev = None, self._rendered_from  # set again only when this pass succeeds
        last = self.last_result
        still_written = last is not None and prev is not None and self.delivery.still_written(last)
        decision = reuse.decide(version, prev, last is not None, still_written)
        self._rendered = decision == reuse.RENDER
        only: set[tuple[str, str, str]] | None = None  # the statuses to submit (None: all of them)
        if decision == reuse.REUSE:
            assert last is not None
            result = last
        elif decision == reuse.REPROGRAM:
            assert last is not None
            result = reprogram(last, assume_programmed=self.render_options.assume_programmed,
                               confirmed_hash=snap.confirmed_config_hash, probe_message=snap.probe_message,
                               now=snap.now, plane_probes=snap.plane_probes)
            if self._submitted is last:  # only the Gateways' and ListenerSets' statuses are new objects
                only = {st.key for st, before in zip(result.statuses, last.statuses, strict=True) if st is not before}
            self.last_result = result
            self.reprograms += 1
        else:
            # the previous result (its config text alone is 26 MB at 10k routes) is not needed
            # any more: let it go before the render builds the next one, not after
            self.last_result = None
            self.delivery.rendering()
            result = self.render_fn(snap, self.render_options)  # (it pauses the cyclic GC itself)
            self.renders += 1
            render_s = time.monotonic() - t0
            self._m.rendered(result, render_s, self.render_cache)
            self.last_result = result
            log.debug("rendered", extra={"config_hash": result.config_hash,
                                         "duration_ms": round(render_s * 1000, 1)})
        reused = decision == reuse.REUSE
        report = self.delivery.deliver(result, snap)
        result = self.last_result = report.result
        probed = False
        if self._unprobed and report.delivered:
            # The first pass of a term (a failover, a restart): the pods may serve this very
            # config already (the previous leader's). Probe before any status is written: a
            # render that did not know what the pods run would write Programmed=False/Pending
            # over the True the previous leader wrote, and True again a pass later.
            self._unprobed = False
            self.probing.probe_all(report.delivered)
            if self._probes_now() != version[1:]:
                # what the pods run changed Programmed: this render's statuses are stale; the
                # pass the probe triggered decides Programmed again and writes them
                self._rendered_from = version
                log.debug("reconciled", extra={"config_hash": result.config_hash, "rendered": not reused,
                                               "statuses": "after the first probe"})
                return result
            probed = True
        if not reused:
            self._submit_statuses(result, snap, only)
        self._post_events(result)
        if report.delivered and not probed:
            self.probing.probe_all(report.delivered)
        self._rendered_from = version
        log.debug("reconciled", extra={"config_hash": result.config_hash, "rendered": not reused,
                                       "duration_ms": round((time.monotonic() - t0) * 1000, 1)})
        return result

    def _submit_statuses(self, result: RenderResult, snap: Snapshot, only: set[tuple[str, str, str]] | None) -> None:
        """Handed to the status worker (latest wins per object; it retries its own failures,
        honouring Retry-After): the config path never waits for status writes. ``only``: the
        keys of the statuses that changed since the last submit of this result's objects (the
        others are submitted already), or None for all of them."""
        released, guards = self.releases.statuses(result)  # (it remembers the statuses of our objects)
        own = result.statuses if only is None else tuple(st for st in result.statuses if st.key in only)
        statuses = (*own, *result.released, *released)
        self.status_writer.submit(statuses, guards, seen_versions(snap, statuses), complete=only is None)
        self._submitted = result
        self._m.gateways(result)

    def _post_events(self, result: RenderResult) -> None:
        self.event_writer.write(result.events)
        event_wait = self.event_writer.paused_for()
        if event_wait > 0:  # 429 on an Event: the rest are posted once the Retry-After has passed
            self.trigger.defer(event_wait)
        bump_due = self.event_writer.policy.next_due()
        if bump_due is not None:  # bump on time even when nothing changes (a quiet cluster)
            self.trigger.trigger(after=max(0.0, bump_due - self.clock.now()))

