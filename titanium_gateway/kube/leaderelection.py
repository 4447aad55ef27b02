"""Leader election over a ``coordination.k8s.io/v1`` Lease (client-go tools/leaderelection).

- ``LeaderElectionConfig`` is validated up front: lease_duration > renew_deadline >
  1.2 x retry_period (defaults 15 s / 10 s / 2 s).
- ``LeaseLock`` reads and replaces the Lease with its resourceVersion (409: another replica won
  the race). The chart pre-creates the Lease and RBAC grants no ``create``: a missing Lease is
  reported (``LeaderElector.condition == "LeaseMissing"``, a clear ``last_error``) and retried;
  the elector never creates it.
- MicroTime fields are written RFC 3339 with exactly 6 fractional digits and ``Z``.
- Another holder's lease counts as expired ``leaseDurationSeconds`` after *we observed* its last
  change (local monotonic clock, immune to clock skew between nodes).
- ``is_leader()`` turns False as soon as ``renew_deadline`` has passed since the last successful
  renew, even while a renew call is still hanging — before the lease can expire for the others.
  Writers check it before every write. ``run()`` then returns False: the caller exits non-zero.
- ``stop()`` ends ``run()`` and releases the lease (holderIdentity "", leaseDurationSeconds 1).
- Any failure of an attempt (an API error, no connection to the API server, a timeout, an
  answer that is not a Lease) is an unsuccessful attempt, never the end of ``run()``: while not
  leading it is retried for as long as the process lives, every retry_period at first, backing
  off exponentially while the failures go on (capped at lease_duration, so a replica started
  during an API outage takes the Lease within about one lease duration after the API is back);
  while leading, the renew deadline decides (no back-off).
"""

from __future__ import annotations

import copy
import logging
import random
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

from titanium_gateway.kube.api import LEASES, ApiError, KubeApi, Obj
from titanium_gateway.kube.clock import REAL_CLOCK, Clock, StopSignal
from titanium_gateway.metrics import Registry, leader_election_master_status

log = logging.getLogger(__name__)

JITTER_FACTOR = 1.2


def format_micro_time(dt: datetime) -> str:
    """``2026-11-30T19:04:05.000000Z``: UTC, exactly 6 fractional digits, ``Z``."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    dt = dt.astimezone(timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond:06d}Z"


def parse_micro_time(value: str | None) -> datetime | None:
    """Parse RFC 3339 with or without a fraction (any precision) and ``Z`` or an offset."""
    if not value:
        return None
    v = value.strip()
    if v.endswith(("Z", "z")):
        v = v[:-1] + "+00:00"
    if "." in v:
        head, _, rest = v.partition(".")
        digits = ""
        while rest and rest[0].isdigit():
            digits, rest = digits + rest[0], rest[1:]
        v = f"{head}.{(digits + '000000')[:6]}{rest}"
    try:
        dt = datetime.fromisoformat(v)
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class LeaderElectionRecord:
    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    leader_transitions: int = 0

    @classmethod
    def from_lease(cls, lease: Obj) -> LeaderElectionRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder_identity=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=parse_micro_time(spec.get("acquireTime")),
            renew_time=parse_micro_time(spec.get("renewTime")),
            leader_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> Obj:
        spec: Obj = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": int(self.lease_duration_seconds),
            "leaseTransitions": int(self.leader_transitions),
        }
        if self.acquire_time is not None:
            spec["acquireTime"] = format_micro_time(self.acquire_time)
        if self.renew_time is not None:
            spec["renewTime"] = format_micro_time(self.renew_time)
        return spec


_OBJECT_AT = re.compile(r" (?:object )?at 0x[0-9a-fA-F]+")


def describe_error(e: BaseException) -> str:
    """``Class: message`` without the object addresses urllib3 puts in its messages (so one
    lasting failure reads the same every time: it is logged once, not at every retry)."""
    text = _OBJECT_AT.sub("", str(e))
    if isinstance(e, ApiError):
        return text
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


class LeaseMissing(Exception):
    """The Lease does not exist (the chart pre-creates it; RBAC grants no create)."""


class LeaseLock:
    """Get / update one pre-created Lease, remembering the last object read (for its resourceVersion)."""

    def __init__(self, api: KubeApi, namespace: str, name: str) -> None:
        self.api = api
        self.namespace = namespace
        self.name = name
        self._lease: Obj | None = None

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    def get(self) -> LeaderElectionRecord:
        """The current record; raises ``ApiError`` (404 when the Lease is absent)."""
        lease = self.api.get(LEASES, self.namespace, self.name)
        self._lease = lease
        return LeaderElectionRecord.from_lease(lease)

    def update(self, record: LeaderElectionRecord) -> None:
        """Replace the Lease read last, with its resourceVersion (409 when someone else wrote first)."""
        if self._lease is None:
            raise RuntimeError("LeaseLock.update before get")
        body = copy.deepcopy(self._lease)
        body.setdefault("apiVersion", "coordination.k8s.io/v1")
        body.setdefault("kind", "Lease")
        body.get("metadata", {}).pop("managedFields", None)
        body["spec"] = {**(body.get("spec") or {}), **record.to_spec()}
        self._lease = self.api.replace(LEASES, self.namespace, self.name, body)


@dataclass(frozen=True)
class LeaderElectionConfig:
    lease_name: str
    lease_namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    def validate(self) -> None:
        if not self.lease_name or not self.lease_namespace:
            raise ValueError("leader election needs a lease name and namespace")
        if not self.identity:
            raise ValueError("leader election needs a non-empty identity")
        if self.retry_period <= 0 or self.renew_deadline <= 0 or self.lease_duration <= 0:
            raise ValueError("lease_duration, renew_deadline and retry_period must be positive")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError(f"lease_duration ({self.lease_duration}s) must be greater than renew_deadline "
                             f"({self.renew_deadline}s)")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError(f"renew_deadline ({self.renew_deadline}s) must be greater than "
                             f"{JITTER_FACTOR} x retry_period ({self.retry_period}s)")


class LeaderElector:
    def __init__(self, api: KubeApi, config: LeaderElectionConfig, *,
                 on_started_leading: Callable[[], None] | None = None,
                 on_stopped_leading: Callable[[], None] | None = None,
                 on_new_leader: Callable[[str], None] | None = None,
                 clock: Clock = REAL_CLOCK, registry: Registry | None = None,
                 rng: random.Random | None = None) -> None:
        config.validate()
        self.config = config
        self.lock = LeaseLock(api, config.lease_namespace, config.lease_name)
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.on_new_leader = on_new_leader
        self.clock = clock
        self._rng = rng or random.Random()
        self._gauge = leader_election_master_status(registry).labels(name=config.lease_name)
        self._gauge.set(0)
        self._mu = threading.Lock()
        self._stop = StopSignal(clock)
        self._leading = False
        self._last_renew: float | None = None  # clock.now() of the last successful acquire/renew
        self._observed: LeaderElectionRecord | None = None
        self._observed_at = 0.0
        self._reported_leader: str | None = None
        self.condition = "Pending"  # Pending | Leading | Following | LeaseMissing | Error | Lost | Released
        self.last_error: str | None = None
        #: attempts that failed in a row (an error, not another holder): the acquire back-off
        self.failures = 0

    # --- state --------------------------------------------------------------------------------
    def is_leader(self) -> bool:
        """True only while leading AND the last renew is younger than renew_deadline."""
        with self._mu:
            if not self._leading or self._last_renew is None:
                return False
            return self.clock.now() < self._last_renew + self.config.renew_deadline

    def leader(self) -> str:
        """The holder identity last observed (may be stale, or "" when none)."""
        with self._mu:
            return self._observed.holder_identity if self._observed else ""

    @property
    def identity(self) -> str:
        return self.config.identity

    @property
    def stopped(self) -> bool:
        """``stop()`` was called."""
        return self._stop.stopped

    @property
    def sleeping_until(self) -> float | None:
        """Clock time the current retry sleep ends (None while awake)."""
        return self._stop.sleeping_until

    def _jittered(self, d: float) -> float:
        return d * (1.0 + (JITTER_FACTOR - 1.0) * self._rng.random())

    # --- one attempt ----------------------------------------------------------------------------
    def try_acquire_or_renew(self) -> bool:
        """One attempt to take or keep the lease; True when we hold it now."""
        now_wall = self.clock.wall()
        me = self.config.identity
        try:
            old = self.lock.get()
        except ApiError as e:
            if not e.is_not_found:
                self._fail("Error", f"get Lease {self.lock.describe()}: {e}")
                return False
            self._fail("LeaseMissing",
                       f"Lease {self.lock.describe()} does not exist: the chart pre-creates it and RBAC grants "
                       f"no create; install the chart or create the Lease by hand")
            return False
        except Exception as e:  # noqa: BLE001 - no connection, a timeout, an answer that is no Lease
            self._fail("Error", f"get Lease {self.lock.describe()}: {describe_error(e)}")
            return False

        self._observe(old)
        now = self.clock.now()
        held_by_other = bool(old.holder_identity) and old.holder_identity != me
        if held_by_other and self._observed_at + max(old.lease_duration_seconds, 0) > now:
            self.condition = "Following" if not self._leading else self.condition
            self._recovered()
            return False
        if old.holder_identity == me and old.acquire_time is not None:
            rec = LeaderElectionRecord(me, self._duration_s(), old.acquire_time, now_wall, old.leader_transitions)
        else:
            rec = LeaderElectionRecord(me, self._duration_s(), now_wall, now_wall, old.leader_transitions + 1)
        try:
            self.lock.update(rec)
        except ApiError as e:
            if e.is_conflict:
                self.last_error = "lost the race to update the Lease (409)"
                self.failures = 0
            else:
                self._fail("Error", f"update Lease {self.lock.describe()}: {e}")
            return False
        except Exception as e:  # noqa: BLE001
            self._fail("Error", f"update Lease {self.lock.describe()}: {describe_error(e)}")
            return False
        self._observe(rec)
        self._renewed()
        return True

    def _duration_s(self) -> int:
        return max(1, int(round(self.config.lease_duration)))

    def _fail(self, condition: str, message: str) -> None:
        self.failures += 1
        if self.last_error != message:
            log.error("leader election: %s", message, extra={"lease": self.lock.describe(),
                                                             "failures": self.failures})
        self.last_error = message
        if not self._leading:
            self.condition = condition

    def _recovered(self) -> None:
        if self.failures and self.last_error:
            log.info("leader election: the Lease can be read again", extra={"lease": self.lock.describe(),
                                                                             "failures": self.failures})
        self.failures = 0
        self.last_error = None

    def _renewed(self) -> None:
        with self._mu:
            self._last_renew = self.clock.now()
        self._recovered()

    def _attempt(self) -> bool:
        """``try_acquire_or_renew``, whatever happens in it: a failure is a failed attempt."""
        try:
            return self.try_acquire_or_renew()
        except Exception as e:  # noqa: BLE001 - the elector must outlive any error
            self.failures += 1
            self.last_error = describe_error(e)
            log.exception("leader election: attempt failed", extra={"lease": self.lock.describe(),
                                                                     "error": self.last_error})
            return False

    def retry_delay(self) -> float:
        """Seconds before the next acquire attempt: retry_period (jittered) while nothing fails;
        after ``failures`` failed attempts in a row, retry_period x 2^(failures-1), capped at
        lease_duration (jittered too)."""
        base = self.config.retry_period
        if self.failures > 1:
            cap = max(base, self.config.lease_duration)
            base = min(cap, base * 2.0 ** min(self.failures - 1, 32))
        return self._jittered(base)

    def _observe(self, rec: LeaderElectionRecord) -> None:
        with self._mu:
            if rec != self._observed:
                self._observed = rec
                self._observed_at = self.clock.now()
        holder = rec.holder_identity
        if holder and holder != self._reported_leader:
            self._reported_leader = holder
            if self.on_new_leader is not None:
                try:
                    self.on_new_leader(holder)
                except Exception:  # noqa: BLE001
                    log.exception("on_new_leader failed")

    # --- loops ----------------------------------------------------------------------------------
    def acquire(self) -> bool:
        """Retry every retry_period (jittered) until we hold the lease (True) or ``stop()`` (False)."""
        while not self._stop.stopped:
            if self._attempt():
                with self._mu:
                    self._leading = True
                self.condition = "Leading"
                self._gauge.set(1)
                log.info("leader election: %s became the leader of %s", self.identity, self.lock.describe())
                return True
            if not self._stop.sleep(self.retry_delay()):
                return False
        return False

    def renew_loop(self) -> bool:
        """Keep renewing; False as soon as renew_deadline passes without a successful renew,
        True when ``stop()`` ended it."""
        while True:
            if not self._stop.sleep(self.config.retry_period):
                return True
            while True:
                with self._mu:
                    deadline = (self._last_renew or 0.0) + self.config.renew_deadline
                ok = self._attempt()
                now = self.clock.now()
                if self._stop.stopped:
                    return True
                if not ok and self.leader() not in ("", self.identity):
                    return False  # another replica holds the lease: we lost it, stop at once
                if ok and now < deadline:
                    break
                if now >= deadline:
                    return False
                if not self._stop.sleep(min(self.config.retry_period, deadline - now)):
                    return True

    def run(self) -> bool:
        """Acquire, call on_started_leading, renew until lost or stopped.

        Returns True after ``stop()`` (clean shut-down, lease released when configured) and False
        when leadership was lost: the caller must exit non-zero.
        """
        if not self.acquire():
            return True
        self._call(self.on_started_leading, "on_started_leading")
        clean = self.renew_loop()
        with self._mu:
            self._leading = False
        self._gauge.set(0)
        if clean:
            if self.config.release_on_cancel:
                self.release()
        else:
            self.condition = "Lost"
            log.error("leader election: %s failed to renew %s within %.1fs; stopping leading",
                      self.identity, self.lock.describe(), self.config.renew_deadline)
        self._call(self.on_stopped_leading, "on_stopped_leading")
        return clean

    def _call(self, fn: Callable[[], None] | None, what: str) -> None:
        if fn is None:
            return
        try:
            fn()
        except Exception:  # noqa: BLE001
            log.exception("%s failed", what)

    def stop(self) -> None:
        """End ``run()`` (it releases the lease when it held it and release_on_cancel is set)."""
        self._stop.stop()

    def release(self) -> bool:
        """Give the lease up: holderIdentity "" and leaseDurationSeconds 1 so another replica takes
        over at once. Only when we are the holder; True on success."""
        with self._mu:
            self._leading = False
        self._gauge.set(0)
        try:
            old = self.lock.get()
        except Exception as e:  # noqa: BLE001 - an API error or no connection: the Lease just expires
            log.warning("leader election: release: %s", describe_error(e))
            return False
        if old.holder_identity != self.identity:
            return False
        now = self.clock.wall()
        rec = LeaderElectionRecord("", 1, now, now, old.leader_transitions)
        try:
            self.lock.update(rec)
        except Exception as e:  # noqa: BLE001
            log.warning("leader election: release: %s", describe_error(e))
            return False
        self.condition = "Released"
        self._observe(rec)
        return True
