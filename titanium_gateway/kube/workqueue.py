"""The controller's work queue: ``CoalescingTrigger``, a queue of one key ("the world changed").

At most one reconcile every ``min_interval`` however many changes arrive (a reconcile that
found nothing to do does not count), and a change after a quiet period is reconciled at once. It reports client-go's ``util/workqueue`` metrics for its
key (depth 0 or 1, adds, queue and work duration, retries, unfinished work), so dashboards made
for client-go controllers read it as they read any work queue.
"""

from __future__ import annotations

import threading

from titanium_gateway.kube.clock import REAL_CLOCK, Clock
from titanium_gateway.metrics import NoopWorkqueueMetrics, WorkqueueMetricsProvider


class _KeyMetrics:
    """client-go's workqueue metrics of one key (called with the trigger's lock held)."""

    def __init__(self, name: str, provider: WorkqueueMetricsProvider, clock: Clock) -> None:
        self.clock = clock
        self.depth = provider.new_depth_metric(name)
        self.adds = provider.new_adds_metric(name)
        self.latency = provider.new_latency_metric(name)
        self.work_duration = provider.new_work_duration_metric(name)
        self.unfinished = provider.new_unfinished_work_seconds_metric(name)
        self.longest = provider.new_longest_running_processor_seconds_metric(name)
        self.retries = provider.new_retries_metric(name)
        self._added_at: float | None = None
        self._started_at: float | None = None

    def add(self) -> None:
        self.adds.inc()
        self.depth.inc()
        if self._added_at is None:
            self._added_at = self.clock.now()

    def get(self) -> None:
        now = self.clock.now()
        self.depth.dec()
        self._started_at = now
        start, self._added_at = self._added_at, None
        if start is not None:
            self.latency.observe(max(0.0, now - start))

    def done(self) -> None:
        start, self._started_at = self._started_at, None
        if start is not None:
            self.work_duration.observe(max(0.0, self.clock.now() - start))

    def update_unfinished(self) -> None:
        age = 0.0 if self._started_at is None else self.clock.now() - self._started_at
        self.unfinished.set(age)
        self.longest.set(age)


class CoalescingTrigger:
    """Turns any number of change notifications into reconciles spaced by ``min_interval``.

    Producers call ``trigger()`` (cheap, thread-safe, never blocks). The single worker loops::

        while trigger.wait():
            try: reconcile()
            finally: trigger.done()

    ``wait()`` returns True when a reconcile is due: at once when the last reconcile started at
    least ``min_interval`` ago and finished (if ``done()`` was called) at least ``min_idle`` ago,
    else when both have passed; every trigger that arrived in between is served by that one
    reconcile. ``min_idle`` (default: ``min_interval``) is the rest the worker gets after a
    reconcile: with a smaller one, a change waits for at most ``min_interval`` after the start
    of the reconcile that missed it, not that reconcile's duration plus ``min_interval``. It
    returns False after ``shut_down()``. ``trigger(after=s)`` asks for a reconcile no sooner
    than ``s`` seconds from now (e.g. a retry back-off or a 5 s Programmed poll); an earlier
    plain trigger still wins. ``defer(s)`` is a hard gate: no reconcile starts sooner than ``s``
    seconds from now, whatever triggers arrive (the API server answered 429 with Retry-After),
    and one reconcile is requested for then. ``done(idle=True)`` reports a reconcile that found
    nothing to do (it did not render: a status echo, a probe poll with no news): its start does
    not count towards ``min_interval``, so a real change arriving just after it waits only for
    the ``min_idle`` rest, not for a whole window (reconciles that render stay ``min_interval``
    apart, start to start).
    """

    def __init__(self, min_interval: float = 0.5, *, clock: Clock = REAL_CLOCK, name: str = "reconcile",
                 metrics: WorkqueueMetricsProvider | None = None, min_idle: float | None = None) -> None:
        if min_interval < 0:
            raise ValueError("min_interval must be >= 0")
        if min_idle is not None and min_idle < 0:
            raise ValueError("min_idle must be >= 0")
        self.min_interval = min_interval
        self.min_idle = min_interval if min_idle is None else min_idle
        self.name = name
        self._clock = clock
        self._metrics = _KeyMetrics(name, metrics or NoopWorkqueueMetrics(), clock)
        self._cond = threading.Condition()
        self._due: float | None = None  # earliest clock time a requested reconcile may run
        self._last_start: float | None = None
        self._spaced_start: float | None = None  # start of the last reconcile that was not idle
        self._last_end: float | None = None
        self._not_before: float | None = None  # defer(): no reconcile starts before this clock time
        self._running = False
        self._shutdown = False
        self.triggers = 0
        self.runs = 0

    def trigger(self, after: float = 0.0) -> None:
        with self._cond:
            if self._shutdown:
                return
            self.triggers += 1
            at = self._clock.now() + max(0.0, after)
            if self._due is None:
                self._metrics.add()
            else:
                self._metrics.adds.inc()  # merged into the pending reconcile: counted, not queued
            if self._due is None or at < self._due:
                self._due = at
                self._cond.notify_all()

    def defer(self, seconds: float) -> None:
        """No reconcile starts within ``seconds`` from now (a later gate already set stays); one
        reconcile is requested for when the gate opens."""
        with self._cond:
            if self._shutdown:
                return
            at = self._clock.now() + max(0.0, seconds)
            if self._not_before is None or at > self._not_before:
                self._not_before = at
            if self._due is None:
                self._metrics.add()
                self._due = at
            self._cond.notify_all()

    def deferred_until(self) -> float | None:
        """Clock time the ``defer()`` gate opens (None when it is open)."""
        with self._cond:
            nb = self._not_before
            return nb if nb is not None and nb > self._clock.now() else None

    def pending(self) -> bool:
        with self._cond:
            return self._due is not None

    def _earliest_locked(self) -> float:
        assert self._due is not None
        t = self._due
        if self._last_start is not None:
            t = max(t, self._last_start + self.min_interval)
        if self._last_end is not None:
            t = max(t, self._last_end + self.min_idle)
        if self._not_before is not None:
            t = max(t, self._not_before)
        return t

    def next_run_at(self) -> float | None:
        """Clock time of the next reconcile, None when none is requested."""
        with self._cond:
            return None if self._due is None else self._earliest_locked()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until a reconcile is due (True) or shut-down / ``timeout`` clock seconds (False)."""
        with self._cond:
            end = None if timeout is None else self._clock.now() + timeout
            while not self._shutdown:
                now = self._clock.now()
                if self._due is not None:
                    at = self._earliest_locked()
                    if now >= at:
                        self._due = None
                        self._metrics.get()
                        self._spaced_start = self._last_start
                        self._last_start = now
                        self._last_end = None
                        self._running = True
                        self.runs += 1
                        return True
                else:
                    at = None
                if end is not None:
                    if now >= end:
                        return False
                    at = end if at is None else min(at, end)
                self._clock.wait(self._cond, None if at is None else at - now)
            return False

    def done(self, idle: bool = False) -> None:
        """The reconcile started by the last ``wait()`` finished (``min_idle`` counts from here);
        ``idle``: it found nothing to do, and the next start is spaced from the one before it."""
        with self._cond:
            if self._running:
                self._running = False
                self._last_end = self._clock.now()
                if idle:
                    self._last_start = self._spaced_start
                self._metrics.done()
                self._cond.notify_all()

    def retry(self, after: float) -> None:
        """Ask for a reconcile after a failure, ``after`` seconds from now (counts a retry)."""
        with self._cond:
            if not self._shutdown:
                self._metrics.retries.inc()
        self.trigger(after=after)

    def update_unfinished_work(self) -> None:
        """Refresh workqueue_unfinished_work_seconds / longest_running_processor_seconds now."""
        with self._cond:
            self._metrics.update_unfinished()

    def shut_down(self) -> None:
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()
