"""``StopSignal``: the clock sleep a ``stop()`` ends (reflector back-off, leader elector retries)."""

from __future__ import annotations

import threading

from tests.kube.test_informer import wait_until
from titanium_gateway.kube.clock import FakeClock, StopSignal


def _sleep_in_thread(signal: StopSignal, seconds: float) -> tuple[threading.Thread, list[bool]]:
    results: list[bool] = []
    t = threading.Thread(target=lambda: results.append(signal.sleep(seconds)), daemon=True)
    t.start()
    return t, results


def test_sleep_lasts_clock_seconds_and_reports_not_stopped() -> None:
    clock = FakeClock()
    signal = StopSignal(clock)
    t, results = _sleep_in_thread(signal, 5)
    assert wait_until(lambda: signal.sleeping_until == clock.now() + 5)
    clock.step(4.9)
    t.join(0.2)
    assert t.is_alive() and results == []
    clock.step(0.1)
    t.join(5)
    assert results == [True] and signal.sleeping_until is None and not signal.stopped


def test_stop_ends_a_sleep_at_once_and_every_later_one() -> None:
    clock = FakeClock()
    signal = StopSignal(clock)
    t, results = _sleep_in_thread(signal, 3600)
    assert wait_until(lambda: signal.sleeping_until is not None)
    signal.stop()
    t.join(5)
    assert results == [False] and signal.stopped and signal.sleeping_until is None
    assert signal.sleep(3600) is False  # no clock step needed
