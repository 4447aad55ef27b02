"""Leader election on a pre-created ``coordination.k8s.io/v1`` Lease (client-go's algorithm).

The chart pre-creates the Lease and grants get/update/patch on it by name, so the elector
never creates it. A candidate takes the Lease when it is free (empty holder) or expired: the
record has not changed for ``lease_duration`` seconds of *our* clock since we last saw it change
(no trust in the other replica's clock). The leader renews every ``retry_period``; if it cannot
renew within ``renew_deadline`` it stops leading (``is_leader()`` turns False at once, then
``on_stopped_leading`` runs). ``release()`` empties the holder so a peer takes over at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from titanium_gateway.controller.options import LeaseTimings
from titanium_gateway.kube.api import LEASES, ApiError, KubeApi
from titanium_gateway.kube.clock import REAL_CLOCK, Clock
from titanium_gateway.metrics import Registry, leader_election_master_status
from titanium_gateway.writers.base import microtime

log = logging.getLogger(__name__)


class LeaderElector:
    def __init__(self, api: KubeApi, namespace: str, name: str, identity: str, *,
                 timings: LeaseTimings = LeaseTimings(), clock: Clock = REAL_CLOCK,
                 on_started_leading: Callable[[], None] | None = None,
                 on_stopped_leading: Callable[[], None] | None = None,
                 registry: Registry | None = None) -> None:
        timings.validate()
        self.api = api
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.t = timings
        self.clock = clock
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self._cond = threading.Condition()
        self._stop = False
        self._leading = False
        self._last_renew: float | None = None  # our clock when we last renewed successfully
        self._observed: tuple[str, str] | None = None  # (holder, renewTime) last seen
        self._observed_at = 0.0
        self._thread: threading.Thread | None = None
        self._status = leader_election_master_status(registry)

    # --- state ------------------------------------------------------------------------------
    def is_leader(self) -> bool:
        """True only while we hold a Lease renewed less than renew_deadline ago."""
        with self._cond:
            return (self._leading and self._last_renew is not None
                    and self.clock.now() - self._last_renew < self.t.renew_deadline)

    def holder(self) -> str:
        with self._cond:
            return self._observed[0] if self._observed else ""

    # --- loop -------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="leader-elector", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _wait(self, seconds: float) -> bool:
        """Wait ``seconds`` of the clock; True when stopped."""
        with self._cond:
            end = self.clock.now() + seconds
            while not self._stop and self.clock.now() < end:
                self.clock.wait(self._cond, end - self.clock.now())
            return self._stop

    def run(self) -> None:
        # acquire
        while not self._stop:
            if self._try_acquire_or_renew():
                break
            if self._wait(self.t.retry_period):
                return
        if self._stop:
            return
        with self._cond:
            self._leading = True
        self._status.labels(name=self.name).set(1)
        log.info("became leader", extra={"lease": f"{self.namespace}/{self.name}", "identity": self.identity})
        if self.on_started_leading:
            self.on_started_leading()
        # renew
        while not self._stop:
            if self._wait(self.t.retry_period):
                return
            deadline = (self._last_renew or self.clock.now()) + self.t.renew_deadline
            while not self._stop and not self._try_acquire_or_renew():
                if self.clock.now() >= deadline:
                    self._lose("could not renew the Lease within the renew deadline")
                    return
                if self._wait(min(self.t.retry_period / 2, max(0.0, deadline - self.clock.now()))):
                    return

    def _lose(self, why: str) -> None:
        with self._cond:
            was = self._leading
            self._leading = False
        self._status.labels(name=self.name).set(0)
        if was:
            log.error("lost leadership", extra={"lease": f"{self.namespace}/{self.name}", "reason": why})
            if self.on_stopped_leading:
                self.on_stopped_leading()

    def _try_acquire_or_renew(self) -> bool:
        now = self.clock.now()
        try:
            lease = self.api.get(LEASES, self.namespace, self.name)
        except ApiError as e:
            level = logging.ERROR if e.is_not_found else logging.WARNING
            log.log(level, "cannot read the Lease (the chart pre-creates it)",
                    extra={"lease": f"{self.namespace}/{self.name}", "error": str(e)})
            return False
        except Exception as e:  # transport errors: try again next period
            log.warning("cannot read the Lease", extra={"error": f"{type(e).__name__}: {e}"})
            return False
        spec: dict[str, Any] = dict(lease.get("spec") or {})
        holder = str(spec.get("holderIdentity") or "")
        record = (holder, str(spec.get("renewTime") or ""))
        if record != self._observed:
            self._observed, self._observed_at = record, now
        duration = float(spec.get("leaseDurationSeconds") or self.t.lease_duration)
        if holder and holder != self.identity and now < self._observed_at + duration:
            return False  # held by another, not expired
        wall = microtime(self.clock.wall())
        new_spec = dict(spec)
        new_spec.update({"holderIdentity": self.identity, "leaseDurationSeconds": max(1, round(self.t.lease_duration)),
                         "renewTime": wall})
        if holder != self.identity:
            new_spec["acquireTime"] = wall
            new_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if holder else 0)
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace,
                             "resourceVersion": (lease.get("metadata") or {}).get("resourceVersion")},
                "spec": new_spec}
        try:
            self.api.replace(LEASES, self.namespace, self.name, body)
        except ApiError as e:
            log.debug("lease update failed", extra={"error": str(e)})
            return False
        except Exception as e:
            log.warning("lease update failed", extra={"error": f"{type(e).__name__}: {e}"})
            return False
        with self._cond:
            self._last_renew = now
        self._observed, self._observed_at = (self.identity, wall), now
        return True

    def release(self) -> bool:
        """Give the Lease up (on a clean shut-down) so a peer takes over at once."""
        self.stop()
        with self._cond:
            was = self._leading
            self._leading = False
        self._status.labels(name=self.name).set(0)
        if not was:
            return False
        try:
            lease = self.api.get(LEASES, self.namespace, self.name)
            spec = dict(lease.get("spec") or {})
            if spec.get("holderIdentity") != self.identity:
                return False
            spec.update({"holderIdentity": "", "leaseDurationSeconds": 1,
                         "renewTime": microtime(self.clock.wall())})
            self.api.replace(LEASES, self.namespace, self.name, {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace,
                             "resourceVersion": (lease.get("metadata") or {}).get("resourceVersion")},
                "spec": spec})
            log.info("released the Lease", extra={"lease": f"{self.namespace}/{self.name}"})
            return True
        except Exception as e:
            log.warning("could not release the Lease", extra={"error": f"{type(e).__name__}: {e}"})
            return False
