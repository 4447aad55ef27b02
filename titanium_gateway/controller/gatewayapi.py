"""Which Gateway API kinds the controller watches, at which version, and how sound their caches are.

Discovery: the CustomResourceDefinitions are watched (``controller/crds.py``); once their cache has
synced, and again whenever a CRD is added, changed or removed, each kind of :data:`KINDS` is
watched at the first of its versions that its established CRD serves (ReferenceGrant: v1 where
served, Gateway API v1.5+, else v1beta1), or not at all when it is not installed (its snapshot
collection is then empty: there are no such objects). The bundle found
(``gateway.networking.k8s.io/bundle-version`` and ``channel`` annotations) and every kind not
watched are logged; the render gets them as ``Snapshot.gateway_api`` (the GatewayClass status says
them, and ``status.supportedFeatures`` is written only where the served CRD has the field).
A kind whose version changes gets a new informer; it replaces the old one in the controller's
informer set only once it has listed (or fails), so no render sees an empty cache meanwhile.

Soundness: a watch that keeps failing leaves its cache stale. A failure is *lasting*
(``SharedInformer.stale``) after 5 s of 401, 403 or 404 (the permission or the version is gone)
and after ``stale_after`` seconds of any other error (410 loops, 5xx, connection errors). While the ReferenceGrant watch fails lastingly
(or has not listed yet) the render is told the grants are unknown (``Snapshot.unreadable``) and
refuses every reference that needs one, instead of honouring grants that may have been revoked.
The other optional kinds are reported the same way (nothing reads them yet). The required kinds
(GatewayClass, Gateway, HTTPRoute) keep their last cache: dropping it would unconfigure every
route. Every lasting failure makes ``/readyz`` fail with its cause (``problems``), and one line is
logged when it starts and when it ends; a required cache (or the CRD cache) that has not synced
``sync_timeout`` seconds after the start makes ``/healthz`` fail (``stuck``), as controller-runtime's
cache sync timeout stops its manager. docs/operations.md describes both.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.controller.crds import Served, crd_transform
from titanium_gateway.kube import api as k
from titanium_gateway.kube.api import KubeApi, Resource
from titanium_gateway.kube.clock import REAL_CLOCK, Clock
from titanium_gateway.kube.informer import EventHandler, InformerSet, SharedInformer
from titanium_gateway.kube.reflector import Backoff
from titanium_gateway.kube.threads import CoreThread, dead
from titanium_gateway.render.gatewayapi import GatewayApiInfo

log = logging.getLogger(__name__)

GATEWAY_GROUP = k.GATEWAY_GROUP


#: The kinds watched where installed (the table of kinds' ``DISCOVERED`` rows): ``resource``,
#: ``versions`` read in preference order, the Snapshot ``field``, whether ``required`` (no reconcile
#: before its cache synced, and a failing watch keeps its last cache), ``with_kind`` (a core kind
#: watched only while that kind is), ``needed_for`` (log lines).
WatchedKind = kinds.Kind
KINDS: tuple[WatchedKind, ...] = tuple(row for row in kinds.KINDS if row.informer == kinds.DISCOVERED)
BY_KIND: Mapping[str, WatchedKind] = MappingProxyType({w.kind: w for w in KINDS})

#: name -> (resource) of the informers; SharedInformer factory of the controller
MakeInformer = Callable[[str, Resource], SharedInformer]
Plan = dict[str, Resource]


def plan_for(served: Served) -> Plan:
    """kind -> the resource (version) to watch, for every kind of :data:`KINDS` that is served."""
    plan: Plan = {}
    for w in KINDS:
        if w.resource.group != GATEWAY_GROUP:
            continue
        version = served.version(w.kind, w.versions)
        if version:
            plan[w.kind] = replace(w.resource, version=version)
    for w in KINDS:
        if w.with_kind and w.with_kind in plan:
            plan[w.kind] = w.resource
    return plan


def assumed_plan() -> Plan:
    """Every kind at its preferred version: the informers a controller has before discovery ran
    (``GatewayApiWatch.start`` replaces them with the discovered plan)."""
    return {w.kind: w.resource for w in KINDS}


def info_for(served: Served, plan: Plan) -> GatewayApiInfo:
    bundles = served.bundles()
    watched = {kind: res.api_version for kind, res in plan.items() if res.group == GATEWAY_GROUP}
    gwc = plan.get(kinds.GATEWAY_CLASS.kind)
    crd = served.crds.get(kinds.GATEWAY_CLASS.kind)
    features = crd.features.get(gwc.version, "") if gwc is not None and crd is not None else ""
    return GatewayApiInfo(bundle=next(iter(bundles)) if len(bundles) == 1 else "",
                          watched=MappingProxyType(watched), supported_features=features)


def _last_error(inf: SharedInformer | None) -> str:
    """``: <the last error>`` of a failing informer, "" otherwise."""
    failure = inf.failure() if inf is not None else None
    return f": {failure[1]}" if failure is not None and failure[1] is not None else ""


def _not_watched(w: WatchedKind, served: Served) -> str:
    if w.with_kind:
        return f"{w.with_kind} is not installed"
    crd = served.crds.get(w.kind)
    if crd is None:
        return "not installed"
    if not crd.established:
        return "its CRD is not established yet"
    return f"served as {', '.join(crd.served) or 'no version'}; this controller reads {', '.join(w.versions)}"


class GatewayApiWatch:
    """The Gateway API informers of one controller: discovery, informer lifecycle, soundness.

    ``informers`` is the controller's informer set: this object adds, replaces and removes the
    informers of :data:`KINDS` in it (copy on write, so a snapshot taken meanwhile is whole);
    ``make_informer(kind, resource)`` builds one with the controller's handlers.
    """

    def __init__(self, api: KubeApi, informers: InformerSet, make_informer: MakeInformer, *,
                 on_change: Callable[[], None], clock: Clock = REAL_CLOCK, watch_timeout: int = 300,
                 backoff_factory: Callable[[], Backoff] | None = None, stale_after: float = 60.0,
                 sync_timeout: float = 120.0, check_interval: float = 1.0, swap_timeout: float = 30.0) -> None:
        self.informers = informers
        self.make_informer = make_informer
        self.on_change = on_change
        self.clock = clock
        self.stale_after = stale_after
        self.sync_timeout = sync_timeout
        self.check_interval = check_interval
        self.swap_timeout = swap_timeout
        self.crds = SharedInformer(api, k.CUSTOM_RESOURCE_DEFINITIONS, name="customresourcedefinitions",
                                   transform=crd_transform, watch_timeout=watch_timeout,
                                   backoff_factory=backoff_factory, clock=clock)
        self.crds.add_event_handler(EventHandler(lambda _o: self._crds_changed(), lambda o, n: self._crds_changed(),
                                                 lambda _o: self._crds_changed()))
        self._cond = threading.Condition()
        self._dirty = False
        self._stopped = False
        self._thread: CoreThread | None = None
        self._started_at: float | None = None
        #: the kinds watched now (before ``start``: the assumed plan, informers not started)
        self.plan: Plan = assumed_plan()
        self.planned = False  # a discovered plan is applied
        self.info: GatewayApiInfo | None = None
        #: the kinds unknown to the render and the caches not sound, at the last check (the logs)
        self._unreadable: dict[str, str] = {}
        self._problems: dict[str, str] = {}
        #: bumps whenever ``plan`` or ``info`` change (part of the snapshot version)
        self.generation = 0
        for kind, res in self.plan.items():
            informers.add(kind, make_informer(kind, res))

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Before the controller starts its informers: the assumed informers leave the set (never
        started); the discovered ones join it once the CRDs are read."""
        for kind in list(self.plan):
            self.informers.remove(kind)
        self.plan = {}
        self._started_at = self.clock.now()
        self.crds.start()
        self._thread = CoreThread(self._run, "gateway-api-discovery")
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self.crds.stop()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5)

    def dead_threads(self) -> list[str]:
        out = self.crds.dead_threads()
        if dead(self._thread, self._stopped):
            out.append("gateway-api-discovery")
        return out

    def _crds_changed(self) -> None:
        with self._cond:
            self._dirty = True
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._dirty and not self._stopped:
                    # (until the first plan: soon after the CRDs listed, even when there are none)
                    self.clock.wait(self._cond, self.check_interval if self.planned else 0.05)
                if self._stopped:
                    return
                dirty = (self._dirty or not self.planned) and self.crds.has_synced()
                if dirty:
                    self._dirty = False
            if dirty:
                self._replan()
            self._check()

    # --- discovery ----------------------------------------------------------------------------
    def _replan(self) -> None:
        served = Served(self.crds.list(), GATEWAY_GROUP)
        plan = plan_for(served)
        info = info_for(served, plan)
        if plan == self.plan and info == self.info and self.planned:
            return
        if info != self.info:
            bundles = served.bundles()
            log.info("Gateway API CRDs found", extra={
                "bundle": info.bundle or "mixed or unknown",
                "bundles": {label: ", ".join(kinds) for label, kinds in bundles.items()},
                "watched": dict(info.watched)})
        for w in KINDS:
            if w.kind not in plan and (w.kind in self.plan or not self.planned):
                why = _not_watched(w, served)
                log.warning("Gateway API kind %s is not watched (%s): unavailable: %s", w.kind, why, w.needed_for,
                            extra={"kind": w.kind, "reason": why})
        fresh: dict[str, SharedInformer] = {}
        for kind, res in plan.items():
            if self.plan.get(kind) != res:
                inf = self.make_informer(kind, res)
                inf.start()
                fresh[kind] = inf
                if kind in self.plan:
                    log.info("watching %s as %s instead of %s", kind, res.api_version, self.plan[kind].api_version)
        # a kind watched before keeps its old cache until the new one listed (or fails lastingly,
        # or ``swap_timeout`` passed: then it is unknown to the render until it lists)
        end = self.clock.now() + self.swap_timeout
        swaps = [kind for kind in fresh if kind in self.plan]
        while swaps and not self._stopped and self.clock.now() < end:
            swaps = [kind for kind in swaps if not (fresh[kind].has_synced() or self._lasting(fresh[kind]))]
            if swaps:
                with self._cond:
                    self.clock.wait(self._cond, 0.05)
        for kind, inf in fresh.items():
            old = self.informers.replace(kind, inf)
            if old is not None:
                old.stop()
        for kind in [kind for kind in self.plan if kind not in plan]:
            old = self.informers.remove(kind)
            if old is not None:
                old.stop()
        self.plan, self.info, self.planned = plan, info, True
        self.generation += 1
        self.on_change()

    # --- soundness ----------------------------------------------------------------------------
    def _lasting(self, inf: SharedInformer) -> str:
        """Why ``inf``'s cache cannot be trusted ("" when it can): its watch fails lastingly."""
        return inf.stale(self.stale_after)

    def _state(self) -> tuple[dict[str, str], dict[str, str]]:
        """(unreadable: optional kind -> why, problems: every kind whose cache is not sound -> why)."""
        unreadable: dict[str, str] = {}
        problems: dict[str, str] = {}
        crd_why = self._lasting(self.crds)
        if crd_why:
            problems["CustomResourceDefinition"] = f"cannot be read: {crd_why}"
        for kind, res in self.plan.items():
            inf = self.informers.get(kind)
            why = self._lasting(inf) if inf is not None else ""
            if why:
                why = f"{res.api_version} {res.plural} cannot be read: {why}"
            elif inf is None or not inf.has_synced():
                why = f"{res.api_version} {res.plural} not listed yet"
            if why:
                problems[kind] = why
                if not BY_KIND[kind].required:
                    unreadable[kind] = why
        return unreadable, problems

    def _check(self) -> None:
        """Log where a cache stops or starts being sound, and have the controller render again
        when the kinds unknown to the render change (e.g. a failure became lasting)."""
        unreadable, problems = self._state()
        for kind, why in problems.items():
            if self._problems.get(kind) != why and "not listed yet" not in why:
                needed = BY_KIND[kind].needed_for if kind in BY_KIND else "discovering the Gateway API kinds"
                effect = "its objects are unknown" if kind in unreadable else "its last cache is kept"
                log.error("%s watch fails: %s; %s (%s): the controller is not ready", kind, why, effect, needed,
                          extra={"kind": kind, "error": why})
        for kind in self._problems:
            if kind not in problems and "not listed yet" not in self._problems[kind]:
                log.info("%s watch works again", kind, extra={"kind": kind})
        self._problems = problems
        if unreadable != self._unreadable:
            self._unreadable = unreadable
            self.on_change()

    def synced(self) -> bool:
        """A reconcile may start: the CRDs are read, the discovered plan applied, every required
        cache listed and every other one listed or failing lastingly (then unknown to the render)."""
        if not self.planned:
            return False
        for kind in self.plan:
            inf = self.informers.get(kind)
            if inf is None:
                return False
            if not inf.has_synced() and (BY_KIND[kind].required or not self._lasting(inf)):
                return False
        return True

    def problems(self) -> list[str]:
        """Why the controller is not ready, as far as these caches go (``/readyz``)."""
        if not self.crds.has_synced():
            why = self._lasting(self.crds)
            return [f"CustomResourceDefinitions {'cannot be read: ' + why if why else 'not listed yet'}"]
        if not self.planned:
            return ["the Gateway API kinds are being discovered"]
        _unreadable, problems = self._state()
        return [f"{kind}: {why}" for kind, why in sorted(problems.items())]

    def stuck(self, also: Iterable[str] = ()) -> str:
        """"" or why the controller is broken (``/healthz``): a required cache (these, or the
        informers ``also`` names) that has not listed ``sync_timeout`` seconds after the start."""
        if self._started_at is None or self.clock.now() - self._started_at < self.sync_timeout:
            return ""
        if not self.crds.has_synced():
            return f"CustomResourceDefinitions not listed after {self.sync_timeout:g} s{_last_error(self.crds)}"
        required = [*also, *(kind for kind in self.plan if BY_KIND[kind].required)]
        for name in required:
            inf = self.informers.get(name)
            if inf is None or not inf.has_synced():
                return f"{name} not listed after {self.sync_timeout:g} s{_last_error(inf)}"
        return ""

    # --- the render's input -------------------------------------------------------------------
    def snapshot(self, caches: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, Any], tuple[Any, ...]]:
        """The Snapshot fields of these kinds, from the controller's cache views (``caches``: the
        informer set's snapshot), with the soundness of each cache as it is now; and their version
        (besides the caches' change counts)."""
        unreadable, _problems = self._state()
        out: dict[str, Any] = {w.field: caches[w.kind] for w in KINDS if w.kind in caches}
        out["unreadable"] = MappingProxyType(unreadable)
        out["gateway_api"] = self.info
        return out, (self.generation, tuple(sorted(unreadable.items())))
