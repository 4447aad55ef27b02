"""Work queues with client-go ``util/workqueue`` semantics, and the reconcile ``CoalescingTrigger``.

``Queue``: a FIFO with a *dirty* set (items waiting to be processed) and a *processing* set
(items handed out by ``get`` and not yet ``done``):

- adding an item that is already dirty does nothing (duplicate adds merge);
- an item is never handed to two workers at once;
- an item added while it is being processed is queued again when ``done`` is called;
- after ``shut_down`` adds are ignored, ``get`` drains what is queued, then returns
  ``(None, True)``.

``DelayingQueue`` adds ``add_after`` (the earliest pending time wins for one item);
``RateLimitingQueue`` adds ``add_rate_limited``/``forget``/``num_requeues`` over a ``RateLimiter``.

``CoalescingTrigger`` is the controller's rule for its single "reconcile the world" key: at most
one reconcile every ``min_interval`` however many changes arrive, and a change after a quiet
period is reconciled at once.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from titanium_gateway.kube.clock import REAL_CLOCK, Clock
from titanium_gateway.kube.ratelimit import RateLimiter, default_controller_rate_limiter
from titanium_gateway.metrics import NoopWorkqueueMetrics, WorkqueueMetricsProvider

T = TypeVar("T", bound=Hashable)


class _QueueMetrics(Generic[T]):
    def __init__(self, name: str, provider: WorkqueueMetricsProvider, clock: Clock) -> None:
        self.clock = clock
        self.depth = provider.new_depth_metric(name)
        self.adds = provider.new_adds_metric(name)
        self.latency = provider.new_latency_metric(name)
        self.work_duration = provider.new_work_duration_metric(name)
        self.unfinished = provider.new_unfinished_work_seconds_metric(name)
        self.longest = provider.new_longest_running_processor_seconds_metric(name)
        self.retries = provider.new_retries_metric(name)
        self.add_times: dict[T, float] = {}
        self.processing_starts: dict[T, float] = {}

    # all called with the queue's lock held
    def add(self, item: T) -> None:
        self.adds.inc()
        self.depth.inc()
        self.add_times.setdefault(item, self.clock.now())

    def get(self, item: T) -> None:
        now = self.clock.now()
        self.depth.dec()
        self.processing_starts[item] = now
        start = self.add_times.pop(item, None)
        if start is not None:
            self.latency.observe(max(0.0, now - start))

    def done(self, item: T) -> None:
        start = self.processing_starts.pop(item, None)
        if start is not None:
            self.work_duration.observe(max(0.0, self.clock.now() - start))

    def update_unfinished(self) -> None:
        now = self.clock.now()
        ages = [now - s for s in self.processing_starts.values()]
        self.unfinished.set(sum(ages))
        self.longest.set(max(ages, default=0.0))


class Queue(Generic[T]):
    def __init__(self, name: str = "", *, clock: Clock = REAL_CLOCK,
                 metrics: WorkqueueMetricsProvider | None = None,
                 unfinished_work_update_period: float = 0.5) -> None:
        self.name = name
        self._clock = clock
        self._cond = threading.Condition()
        self._metrics_cond = threading.Condition()
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._shutting_down = False
        self._metrics: _QueueMetrics[T] = _QueueMetrics(name, metrics or NoopWorkqueueMetrics(), clock)
        if metrics is not None and unfinished_work_update_period > 0:
            t = threading.Thread(target=self._unfinished_loop, args=(unfinished_work_update_period,),
                                 name=f"workqueue-metrics-{name}", daemon=True)
            t.start()

    def _unfinished_loop(self, period: float) -> None:
        # its own condition: a notify() meant for a worker blocked in get() must never wake this
        # thread instead (the worker would then miss the item)
        while True:
            with self._cond:
                if self._shutting_down:
                    return
                self._metrics.update_unfinished()
            deadline = self._clock.now() + period
            with self._metrics_cond:
                while not self._shutting_down and self._clock.now() < deadline:
                    self._clock.wait(self._metrics_cond, deadline - self._clock.now())

    def update_unfinished_work(self) -> None:
        """Refresh workqueue_unfinished_work_seconds / longest_running_processor_seconds now."""
        with self._cond:
            self._metrics.update_unfinished()

    def add(self, item: T) -> None:
        with self._cond:
            self._add_locked(item)

    def _add_locked(self, item: T) -> None:
        if self._shutting_down or item in self._dirty:
            return
        self._metrics.add(item)
        self._dirty.add(item)
        if item in self._processing:
            return
        self._queue.append(item)
        self._cond.notify()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)

    def _next_deadline_locked(self) -> float | None:
        """Subclasses: clock time at which a delayed item becomes ready (None: nothing delayed)."""
        return None

    def _promote_ready_locked(self) -> None:
        """Subclasses: move delayed items whose time has come into the queue."""

    def get(self, timeout: float | None = None) -> tuple[T | None, bool]:
        """Block until an item is available: ``(item, False)``; ``(None, True)`` after shut-down
        once the queue is drained; ``(None, False)`` when ``timeout`` (clock seconds) passed."""
        with self._cond:
            end = None if timeout is None else self._clock.now() + timeout
            while True:
                self._promote_ready_locked()
                if self._queue or self._shutting_down:
                    break
                now = self._clock.now()
                if end is not None and now >= end:
                    return None, False
                wait_until = self._next_deadline_locked()
                if end is not None:
                    wait_until = end if wait_until is None else min(wait_until, end)
                self._clock.wait(self._cond, None if wait_until is None else max(0.0, wait_until - now))
            if not self._queue:
                return None, True
            item = self._queue.popleft()
            self._metrics.get(item)
            self._processing.add(item)
            self._dirty.discard(item)
            return item, False

    def done(self, item: T) -> None:
        """Mark ``item`` processed; if it was added meanwhile it goes back into the queue."""
        with self._cond:
            self._metrics.done(item)
            self._processing.discard(item)
            if item in self._dirty:
                self._queue.append(item)
                self._cond.notify()

    def shut_down(self) -> None:
        with self._cond:
            self._shutting_down = True
            self._cond.notify_all()
        with self._metrics_cond:
            self._metrics_cond.notify_all()

    def shutting_down(self) -> bool:
        with self._cond:
            return self._shutting_down

    def is_processing(self, item: T) -> bool:
        with self._cond:
            return item in self._processing


class DelayingQueue(Queue[T]):
    def __init__(self, name: str = "", *, clock: Clock = REAL_CLOCK,
                 metrics: WorkqueueMetricsProvider | None = None,
                 unfinished_work_update_period: float = 0.5) -> None:
        super().__init__(name, clock=clock, metrics=metrics,
                         unfinished_work_update_period=unfinished_work_update_period)
        self._heap: list[tuple[float, int, T]] = []
        self._waiting: dict[T, float] = {}
        self._seq = itertools.count()

    def add_after(self, item: T, delay: float) -> None:
        """Add ``item`` after ``delay`` clock seconds (at once when ``delay <= 0``)."""
        with self._cond:
            if self._shutting_down:
                return
            if delay <= 0:
                self._add_locked(item)
                return
            ready = self._clock.now() + delay
            prev = self._waiting.get(item)
            if prev is not None and prev <= ready:
                return
            self._waiting[item] = ready
            heapq.heappush(self._heap, (ready, next(self._seq), item))
            self._cond.notify_all()

    def _promote_ready_locked(self) -> None:
        now = self._clock.now()
        while self._heap and self._heap[0][0] <= now:
            ready, _, item = heapq.heappop(self._heap)
            if self._waiting.get(item) != ready:
                continue  # superseded by an earlier add_after
            del self._waiting[item]
            self._add_locked(item)

    def _next_deadline_locked(self) -> float | None:
        while self._heap and self._waiting.get(self._heap[0][2]) != self._heap[0][0]:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def waiting(self) -> int:
        """Items scheduled by ``add_after`` and not yet due."""
        with self._cond:
            return len(self._waiting)


class RateLimitingQueue(DelayingQueue[T]):
    def __init__(self, name: str = "", *, rate_limiter: RateLimiter | None = None, clock: Clock = REAL_CLOCK,
                 metrics: WorkqueueMetricsProvider | None = None,
                 unfinished_work_update_period: float = 0.5) -> None:
        super().__init__(name, clock=clock, metrics=metrics,
                         unfinished_work_update_period=unfinished_work_update_period)
        self.rate_limiter: RateLimiter = rate_limiter or default_controller_rate_limiter(clock)

    def add_rate_limited(self, item: T) -> None:
        """Re-add ``item`` after the rate limiter's delay (counts a retry)."""
        delay = self.rate_limiter.when(item)
        with self._cond:
            if self._shutting_down:
                return
            self._metrics.retries.inc()
        self.add_after(item, delay)

    def forget(self, item: T) -> None:
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)


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
    and one reconcile is requested for then.
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
        # The trigger is a queue of one key ("the world changed"): it reports through the same
        # client-go workqueue metrics as ``Queue`` (depth 0 or 1, adds, queue and work duration,
        # retries, unfinished work).
        self._metrics: _QueueMetrics[str] = _QueueMetrics(name, metrics or NoopWorkqueueMetrics(), clock)
        self._cond = threading.Condition()
        self._due: float | None = None  # earliest clock time a requested reconcile may run
        self._last_start: float | None = None
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
                self._metrics.add(self.name)
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
                self._metrics.add(self.name)
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
                        self._metrics.get(self.name)
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

    def done(self) -> None:
        """The reconcile started by the last ``wait()`` finished (``min_idle`` counts from here)."""
        with self._cond:
            if self._running:
                self._running = False
                self._last_end = self._clock.now()
                self._metrics.done(self.name)
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
