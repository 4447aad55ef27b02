"""Injectable clocks: the real one, and ``FakeClock`` for deterministic tests.

Every timed wait in the kube machinery goes through ``Clock.wait(cond, timeout)`` (the caller
holds ``cond`` and re-checks its own state after every wake-up) or ``Clock.sleep``. A
``FakeClock`` wakes those waiters when a test moves time with ``step()``, so tests never
depend on the wall clock. ``StopSignal`` is the sleep on a clock that a ``stop()`` from another
thread cuts short (a reflector's back-off, the leader elector's retry period).
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Monotonic seconds (only differences matter)."""

    def wall(self) -> datetime:
        """The current UTC time (for timestamps written to the API)."""

    def sleep(self, seconds: float) -> None: ...

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        """Wait on ``cond`` (held by the caller) for a notify or ``timeout`` seconds of this clock.

        May return early (spurious wake-up): callers loop and re-check their state.
        """


class RealClock:
    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> datetime:
        return datetime.now(timezone.utc)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        if timeout is None:
            cond.wait()
        elif timeout > 0:
            cond.wait(timeout)


REAL_CLOCK = RealClock()


class StopSignal:
    """A stop request, and the sleeps on ``clock`` it ends at once.

    ``cond`` guards ``stopped``; an owner may hold it to do something atomically with the stop
    (a reflector hands its open watch stream over under it). ``sleeping_until`` is the clock
    time the current sleep ends, None while awake (tests wait for a component to sleep).
    """

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.cond = threading.Condition()
        self.stopped = False
        self.sleeping_until: float | None = None

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify_all()

    def sleep(self, seconds: float) -> bool:
        """Sleep ``seconds`` of the clock, or until :meth:`stop`; False when stopped."""
        end = self.clock.now() + seconds
        with self.cond:
            self.sleeping_until = end
            try:
                while not self.stopped and self.clock.now() < end:
                    self.clock.wait(self.cond, end - self.clock.now())
            finally:
                self.sleeping_until = None
            return not self.stopped


class FakeClock:
    """Time moves only when a test calls ``step()``/``set()``; waiters are woken then.

    ``real_wait_cap`` bounds each real wait inside ``wait``/``sleep`` so a missed
    notification can only delay, never hang, a test.
    """

    def __init__(self, start: float = 1000.0, wall_start: datetime | None = None,
                 real_wait_cap: float = 0.05) -> None:
        self._lock = threading.Lock()
        self._now = start
        self._start = start
        self._wall0 = wall_start or datetime(2026, 11, 30, 19, 4, 5, tzinfo=timezone.utc)
        self._conds: set[threading.Condition] = set()
        self._sleep_cond = threading.Condition()
        self._cap = real_wait_cap
        self.sleepers = 0

    def now(self) -> float:
        with self._lock:
            return self._now

    def wall(self) -> datetime:
        with self._lock:
            return self._wall0 + timedelta(seconds=self._now - self._start)

    def step(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds
            conds = list(self._conds)
        self._notify(conds)

    def set(self, now: float) -> None:
        with self._lock:
            self._now = now
            conds = list(self._conds)
        self._notify(conds)

    def _notify(self, conds: list[threading.Condition]) -> None:
        for c in conds:
            with c:
                c.notify_all()
        with self._sleep_cond:
            self._sleep_cond.notify_all()

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        if timeout is not None and timeout <= 0:
            return
        with self._lock:
            self._conds.add(cond)
        try:
            cond.wait(self._cap)
        finally:
            with self._lock:
                self._conds.discard(cond)

    def sleep(self, seconds: float) -> None:
        deadline = self.now() + seconds
        with self._sleep_cond:
            self.sleepers += 1
            try:
                while self.now() < deadline:
                    self._sleep_cond.wait(self._cap)
            finally:
                self.sleepers -= 1

    def wait_for_sleepers(self, n: int = 1, timeout: float = 5.0) -> bool:
        """Block (real time) until ``n`` threads are inside ``sleep`` (test helper)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.sleepers >= n:
                return True
            time.sleep(0.001)
        return False
