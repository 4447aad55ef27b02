from __future__ import annotations

import threading
import time

import pytest

from titanium_gateway.kube.clock import FakeClock
from titanium_gateway.kube.workqueue import CoalescingTrigger
from titanium_gateway.metrics import PrometheusWorkqueueMetrics, Registry


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
    tr.update_unfinished_work()  # the running reconcile's age
    assert reg.value("workqueue_unfinished_work_seconds", name="reconcile") == pytest.approx(0.3)
    assert reg.value("workqueue_longest_running_processor_seconds", name="reconcile") == pytest.approx(0.3)
    tr.done()
    tr.update_unfinished_work()
    assert reg.value("workqueue_unfinished_work_seconds", name="reconcile") == 0
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


def test_trigger_idle_run_does_not_push_the_next_run_a_window_later() -> None:
    clock = FakeClock()
    tr = CoalescingTrigger(0.5, clock=clock, min_idle=0.1)
    tr.trigger()
    assert tr.wait(0)  # a reconcile that renders, at t=0
    clock.step(0.2)
    tr.done()
    clock.step(0.4)  # t=0.6: a probe poll finds nothing to do
    tr.trigger()
    assert tr.wait(0)
    clock.step(0.01)
    tr.done(idle=True)
    tr.trigger()  # a real change just after it: only the rest, not 500 ms after the idle start
    assert tr.next_run_at() == pytest.approx(clock.now() + 0.1)
    clock.step(0.1)
    assert tr.wait(0) is True  # t=0.71
    clock.step(0.05)
    tr.done()
    tr.trigger()  # reconciles that render stay 500 ms apart, start to start
    assert tr.next_run_at() == pytest.approx(clock.now() - 0.05 + 0.5)


def test_trigger_idle_runs_in_a_row_space_from_the_last_run_that_rendered() -> None:
    clock = FakeClock()
    tr = CoalescingTrigger(0.5, clock=clock, min_idle=0.1)
    tr.trigger()
    assert tr.wait(0)  # renders
    clock.step(0.05)
    tr.done()
    tr.trigger()
    clock.step(0.3)
    assert tr.wait(0) is False  # an idle pass too waits for the window: not known idle in advance
    clock.step(0.2)
    assert tr.wait(0) is True  # past 0.5 s after the start of the one that rendered
    tr.done(idle=True)
    for _ in range(2):  # two more idle passes, each after its rest only
        clock.step(0.1)
        tr.trigger()
        assert tr.wait(0) is True
        tr.done(idle=True)
    clock.step(0.1)
    tr.trigger()  # a change: at once, however many idle passes ran in the window
    assert tr.wait(0) is True
    tr.done()
    tr.trigger()
    assert tr.next_run_at() == pytest.approx(clock.now() + 0.5)
