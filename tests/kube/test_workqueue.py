from __future__ import annotations

import threading
import time

import pytest

from titanium_gateway.kube.clock import FakeClock
from titanium_gateway.kube.ratelimit import ItemExponentialFailureRateLimiter
from titanium_gateway.kube.workqueue import CoalescingTrigger, DelayingQueue, Queue, RateLimitingQueue
from titanium_gateway.metrics import PrometheusWorkqueueMetrics, Registry


def test_duplicate_adds_merge_and_fifo() -> None:
    q: Queue[str] = Queue("t", clock=FakeClock())
    for k in ("a", "b", "a", "c", "b"):
        q.add(k)
    assert len(q) == 3
    assert [q.get(0)[0] for _ in range(3)] == ["a", "b", "c"]
    assert q.get(0) == (None, False)


def test_item_never_processed_twice_and_requeued_on_done() -> None:
    q: Queue[str] = Queue("t", clock=FakeClock())
    q.add("a")
    item, _ = q.get(0)
    assert item == "a" and q.is_processing("a")
    q.add("a")  # dirty while processing: not handed out again
    q.add("a")
    assert len(q) == 0
    assert q.get(0) == (None, False)
    q.done("a")
    assert len(q) == 1
    assert q.get(0) == ("a", False)
    q.done("a")
    assert q.get(0) == (None, False)


def test_shutdown_drains_then_reports() -> None:
    q: Queue[str] = Queue("t", clock=FakeClock())
    q.add("a")
    q.shut_down()
    q.add("b")  # ignored
    assert q.get() == ("a", False)
    assert q.get() == (None, True)


def test_blocked_get_wakes_on_add_and_shutdown() -> None:
    q: Queue[str] = Queue("t")
    got: list[tuple[str | None, bool]] = []

    def worker() -> None:
        while True:
            item, stop = q.get()
            got.append((item, stop))
            if stop:
                return
            q.done(item)  # type: ignore[arg-type]

    t = threading.Thread(target=worker)
    t.start()
    q.add("x")
    deadline = time.monotonic() + 5
    while not got and time.monotonic() < deadline:
        time.sleep(0.001)
    q.shut_down()
    t.join(5)
    assert got == [("x", False), (None, True)]


def test_add_after_with_fake_clock_earliest_wins() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue("t", clock=clock)
    q.add_after("a", 10)
    q.add_after("a", 5)  # earlier wins
    q.add_after("a", 20)  # later ignored
    q.add_after("b", 0)  # at once
    assert q.get(0) == ("b", False)
    assert q.get(0) == (None, False)
    clock.step(4.9)
    assert q.get(0) == (None, False)
    clock.step(0.1)
    assert q.get(0) == ("a", False)
    clock.step(100)
    assert q.get(0) == (None, False)  # superseded entries are not delivered
    assert q.waiting() == 0


def test_blocked_get_wakes_when_fake_time_passes() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue("t", clock=clock)
    q.add_after("a", 1)
    out: list[object] = []
    t = threading.Thread(target=lambda: out.append(q.get()))
    t.start()
    time.sleep(0.01)
    assert out == []
    clock.step(1)
    t.join(5)
    assert out == [("a", False)]


def test_rate_limited_requeue_and_forget_with_metrics() -> None:
    clock = FakeClock()
    reg = Registry()
    q: RateLimitingQueue[str] = RateLimitingQueue(
        "reconcile", rate_limiter=ItemExponentialFailureRateLimiter(1, 100), clock=clock,
        metrics=PrometheusWorkqueueMetrics(reg), unfinished_work_update_period=0)
    q.add("k")
    item, _ = q.get(0)
    clock.step(3)
    q.update_unfinished_work()
    assert reg.value("workqueue_unfinished_work_seconds", name="reconcile") == 3
    assert reg.value("workqueue_longest_running_processor_seconds", name="reconcile") == 3
    q.add_rate_limited("k")
    q.done("k")
    assert q.num_requeues("k") == 1
    assert q.get(0) == (None, False)
    clock.step(1)
    assert q.get(0) == ("k", False)
    q.add_rate_limited("k")  # second failure: 2 s
    q.done("k")
    clock.step(1.5)
    assert q.get(0) == (None, False)
    clock.step(0.5)
    assert q.get(0) == ("k", False)
    q.forget("k")
    q.done("k")
    assert q.num_requeues("k") == 0
    assert reg.value("workqueue_adds_total", name="reconcile") == 3
    assert reg.value("workqueue_retries_total", name="reconcile") == 2
    assert reg.value("workqueue_depth", name="reconcile") == 0
    assert reg.value("workqueue_work_duration_seconds_count", name="reconcile") == 3
    assert reg.value("workqueue_queue_duration_seconds_count", name="reconcile") == 3


def test_trigger_first_change_runs_at_once() -> None:
    clock = FakeClock()
    tr = CoalescingTrigger(0.5, clock=clock)
    assert tr.wait(timeout=0) is False
    tr.trigger()
    assert tr.wait(timeout=0) is True


def test_trigger_coalesces_burst_and_spaces_runs() -> None:
    clock = FakeClock()
    tr = CoalescingTrigger(0.5, clock=clock)
    tr.trigger()
    assert tr.wait(0)
    clock.step(0.1)
    tr.done()
    for _ in range(100):  # a burst during/after the reconcile
        tr.trigger()
    assert tr.next_run_at() == clock.now() + 0.5  # gap counts from the end of the run
    clock.step(0.49)
    assert tr.wait(0) is False
    clock.step(0.01)
    assert tr.wait(0) is True  # one reconcile for the whole burst
    tr.done()
    assert tr.runs == 2
    assert tr.wait(0) is False


def test_trigger_spaces_starts_by_min_interval_and_rests_min_idle_after_each_run() -> None:
    clock = FakeClock()
    tr = CoalescingTrigger(0.5, clock=clock, min_idle=0.1)
    tr.trigger()
    assert tr.wait(0)
    clock.step(0.3)  # a reconcile of 0.3 s; changes arrive meanwhile
    tr.trigger()
    tr.done()
    assert tr.next_run_at() == clock.now() + 0.2  # 0.5 s after the previous start
    clock.step(0.2)
    assert tr.wait(0) is True
    clock.step(0.7)  # a long reconcile of 0.7 s
    tr.trigger()
    tr.done()
    assert tr.next_run_at() == clock.now() + 0.1  # the rest after it, not back to back
    clock.step(0.09)
    assert tr.wait(0) is False
    clock.step(0.01)
    assert tr.wait(0) is True
    with pytest.raises(ValueError):
        CoalescingTrigger(0.5, min_idle=-1)


def test_trigger_after_quiet_period_is_immediate() -> None:
    clock = FakeClock()
    tr = CoalescingTrigger(0.5, clock=clock)
    tr.trigger()
    assert tr.wait(0)
    tr.done()
    clock.step(10)
    tr.trigger()
    assert tr.wait(0) is True  # not 500 ms later


def test_trigger_after_delay_and_plain_trigger_wins() -> None:
    clock = FakeClock()
    tr = CoalescingTrigger(0.5, clock=clock)
    tr.trigger(after=5)
    clock.step(1)
    assert tr.wait(0) is False
    tr.trigger()
    assert tr.wait(0) is True


def test_trigger_blocking_wait_and_shutdown() -> None:
    clock = FakeClock()
    tr = CoalescingTrigger(0.5, clock=clock)
    results: list[bool] = []

    def worker() -> None:
        results.append(tr.wait())
        results.append(tr.wait())

    t = threading.Thread(target=worker, daemon=True)
    t.start()
    tr.trigger()
    deadline = time.monotonic() + 5
    while not results and time.monotonic() < deadline:
        time.sleep(0.001)
    assert results == [True]
    tr.shut_down()
    t.join(5)
    assert results == [True, False]


def test_concurrent_workers_never_process_one_key_twice_at_once() -> None:
    q: Queue[int] = Queue("t")
    lock = threading.Lock()
    in_progress: set[int] = set()
    violations: list[int] = []
    processed: list[int] = []

    def worker() -> None:
        while True:
            item, stop = q.get()
            if stop:
                return
            assert item is not None
            with lock:
                if item in in_progress:
                    violations.append(item)
                in_progress.add(item)
            time.sleep(0.0005)
            with lock:
                in_progress.discard(item)
                processed.append(item)
            q.done(item)

    workers = [threading.Thread(target=worker, daemon=True) for _ in range(4)]
    for w in workers:
        w.start()
    for i in range(400):
        q.add(i % 3)
    deadline = time.monotonic() + 5
    while (len(q) or any(q.is_processing(k) for k in range(3))) and time.monotonic() < deadline:
        time.sleep(0.002)
    q.shut_down()
    for w in workers:
        w.join(5)
    assert violations == []
    assert set(processed) == {0, 1, 2}
    assert len(processed) < 400  # duplicate adds merged


def test_metrics_thread_never_steals_a_workers_wakeup() -> None:
    reg = Registry()
    # the metrics thread starts waiting first: a notify() on a shared condition would wake it,
    # not the worker
    q: Queue[str] = Queue("m", metrics=PrometheusWorkqueueMetrics(reg), unfinished_work_update_period=10)
    time.sleep(0.05)
    got: list[str | None] = []
    t = threading.Thread(target=lambda: got.append(q.get()[0]), daemon=True)
    t.start()
    time.sleep(0.02)
    q.add("x")
    t.join(2)
    finished = not t.is_alive()
    q.shut_down()
    assert finished and got == ["x"]


def test_coalescing_trigger_reports_client_go_workqueue_metrics() -> None:
    clock = FakeClock()
    reg = Registry()
    tr = CoalescingTrigger(0.5, clock=clock, name="reconcile", metrics=PrometheusWorkqueueMetrics(reg))
    for _ in range(5):  # five changes merge into one pending reconcile
        tr.trigger()
    assert reg.value("workqueue_adds_total", name="reconcile") == 5
    assert reg.value("workqueue_depth", name="reconcile") == 1
    clock.step(0.2)
    assert tr.wait(timeout=0)
    assert reg.value("workqueue_depth", name="reconcile") == 0
    assert reg.value("workqueue_queue_duration_seconds_count", name="reconcile") == 1
    assert reg.value("workqueue_queue_duration_seconds_sum", name="reconcile") == pytest.approx(0.2)
    clock.step(0.3)
    tr.done()
    tr.retry(after=1.0)
    assert reg.value("workqueue_work_duration_seconds_count", name="reconcile") == 1
    assert reg.value("workqueue_retries_total", name="reconcile") == 1
    assert reg.value("workqueue_depth", name="reconcile") == 1


def test_trigger_defer_is_a_hard_gate_that_plain_triggers_do_not_bypass() -> None:
    """429 Retry-After: no reconcile before the gate opens, however many changes arrive."""
    clock = FakeClock()
    tr = CoalescingTrigger(0.1, clock=clock)
    tr.defer(3.0)
    assert tr.deferred_until() == clock.now() + 3.0
    tr.trigger()
    clock.step(2.9)
    tr.trigger()
    assert tr.wait(0) is False
    clock.step(0.1)
    assert tr.deferred_until() is None
    assert tr.wait(0) is True  # the deferred reconcile runs once the gate opens
    tr.done()
    tr.defer(1.0)
    tr.defer(0.5)  # a shorter gate does not shorten the longer one
    clock.step(0.6)
    assert tr.wait(0) is False
    clock.step(0.4)
    assert tr.wait(0) is True
