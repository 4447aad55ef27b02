"""Probing the data planes a pass delivered: does every ready pod run the written config?

Each data plane's pods are probed (in parallel when there are several: one slow plane must not
delay the others). When every ready pod reports the written hash the plane's state says so and
a reconcile is triggered (which decides Programmed again); until then the controller polls every
``probe_interval`` seconds, and a pod still behind some seconds after its config-poke is poked
again (``PodPoker.repoke``: back-off, a cap, a rate limit). With the listener stamp (the shared
data plane with ``--data-plane-deployment``, a Gateway's own always), a pod confirms only once it
was created with the current listener set.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from titanium_gateway.controller.delivery import DeliveredPlane, PlaneState
from titanium_gateway.kube.clock import Clock
from titanium_gateway.kube.workqueue import CoalescingTrigger
from titanium_gateway.prober.prober import DataPlane, Prober, ProbeResult, awaiting_rollout
from titanium_gateway.render.result import Plane
from titanium_gateway.writers.deployment import canonical_listeners

log = logging.getLogger(__name__)


class PlaneProbing:
    """Probes delivered data planes and records what their pods confirmed in their states."""

    def __init__(self, prober: Prober, trigger: CoalescingTrigger, clock: Clock, *, shared_stamped: bool,
                 probe_interval: float) -> None:
        self.prober = prober
        self.trigger = trigger
        self.clock = clock
        #: the shared data plane's pods carry the listener stamp (``--data-plane-deployment``)
        self.shared_stamped = shared_stamped
        self.probe_interval = probe_interval

    def probe_all(self, delivered: Sequence[DeliveredPlane]) -> None:
        if len(delivered) == 1:
            self.probe(*_parts(delivered[0]))
            return
        with ThreadPoolExecutor(max_workers=min(8, len(delivered)), thread_name_prefix="planes") as pool:
            for done in [pool.submit(self.probe, *_parts(d)) for d in delivered]:
                done.result()

    def probe(self, st: PlaneState, plane: Plane, dp: DataPlane) -> None:
        eps = dp.endpoints
        # with the listener stamp, a pod confirms only once it was created with the current set
        stamped = self.shared_stamped or plane.gateway is not None
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
            self.trigger.trigger(after=self.probe_interval)


def _parts(d: DeliveredPlane) -> tuple[PlaneState, Plane, DataPlane]:
    return d.state, d.plane, d.pods
