from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import pytest

from titanium_gateway.kube.api import LEASES, ApiError
from titanium_gateway.kube.clock import FakeClock
from titanium_gateway.kube.leaderelection import (
    LeaderElectionConfig,
    LeaderElector,
    format_micro_time,
    parse_micro_time,
)
from titanium_gateway.metrics import Registry

from .fakeapi import FakeKubeApi

MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def lease(holder: str = "", **spec: object) -> dict:
    return {"metadata": {"name": "tg", "namespace": "sys"},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, **spec} if holder else {}}


def cfg(identity: str, **kw: object) -> LeaderElectionConfig:
    return LeaderElectionConfig("tg", "sys", identity, **kw)  # type: ignore[arg-type]


def wait_until(pred: Callable[[], bool], timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.002)
    return pred()


def test_micro_time_format_and_parse() -> None:
    dt = datetime(2026, 11, 30, 19, 4, 5, tzinfo=timezone.utc)
    assert format_micro_time(dt) == "2026-11-30T19:04:05.000000Z"
    assert format_micro_time(dt.replace(microsecond=42)) == "2026-11-30T19:04:05.000042Z"
    other_tz = dt.astimezone(timezone(timedelta(hours=2)))
    assert format_micro_time(other_tz) == "2026-11-30T19:04:05.000000Z"
    assert parse_micro_time("2026-11-30T19:04:05Z") == dt
    assert parse_micro_time("2026-11-30T19:04:05.123456789Z") == dt.replace(microsecond=123456)
    assert parse_micro_time("2026-11-30T19:04:05.5+00:00") == dt.replace(microsecond=500000)
    assert parse_micro_time("garbage") is None and parse_micro_time(None) is None


@pytest.mark.parametrize("kw", [
    {"lease_duration": 10, "renew_deadline": 10},
    {"renew_deadline": 2.4, "retry_period": 2},
    {"retry_period": 0},
])
def test_config_validation(kw: dict) -> None:
    with pytest.raises(ValueError):
        cfg("a", **kw).validate()
    with pytest.raises(ValueError):
        LeaderElectionConfig("tg", "sys", "").validate()
    cfg("a").validate()  # defaults 15/10/2 are valid


def test_acquire_free_lease_writes_microtimes_and_renews() -> None:
    api, clock, reg = FakeKubeApi(), FakeClock(), Registry()
    api.put(LEASES, lease())
    started: list[str] = []
    le = LeaderElector(api, cfg("a"), clock=clock, registry=reg, on_new_leader=started.append)
    assert le.try_acquire_or_renew() is True
    spec = api.get(LEASES, "sys", "tg")["spec"]
    assert spec["holderIdentity"] == "a" and spec["leaseDurationSeconds"] == 15
    assert MICRO.match(spec["acquireTime"]) and MICRO.match(spec["renewTime"])
    assert spec["leaseTransitions"] == 1
    assert started == ["a"]
    clock.step(2)
    assert le.try_acquire_or_renew() is True
    spec2 = api.get(LEASES, "sys", "tg")["spec"]
    assert spec2["acquireTime"] == spec["acquireTime"] and spec2["renewTime"] != spec["renewTime"]
    assert spec2["leaseTransitions"] == 1
    replace = api.calls_of("replace")[-1]
    assert replace["body"]["metadata"]["resourceVersion"]  # optimistic concurrency
    assert "managedFields" not in replace["body"]["metadata"]


def test_follower_waits_for_expiry_by_its_own_observation() -> None:
    api, clock = FakeKubeApi(), FakeClock()
    # renewTime far in the past: a skewed clock must not make us take over at once
    api.put(LEASES, lease("other", renewTime="2000-01-01T00:00:00.000000Z", leaseTransitions=3))
    leaders: list[str] = []
    le = LeaderElector(api, cfg("me"), clock=clock, on_new_leader=leaders.append)
    assert le.try_acquire_or_renew() is False
    assert le.condition == "Following" and le.leader() == "other" and leaders == ["other"]
    clock.step(14.9)
    assert le.try_acquire_or_renew() is False
    clock.step(0.2)
    assert le.try_acquire_or_renew() is True
    spec = api.get(LEASES, "sys", "tg")["spec"]
    assert spec["holderIdentity"] == "me" and spec["leaseTransitions"] == 4
    assert leaders == ["other", "me"]


def test_renewals_by_other_holder_reset_expiry() -> None:
    api, clock = FakeKubeApi(), FakeClock()
    api.put(LEASES, lease("other", renewTime="2026-11-30T19:00:00.000000Z"))
    le = LeaderElector(api, cfg("me"), clock=clock)
    assert not le.try_acquire_or_renew()
    clock.step(10)
    api.put(LEASES, lease("other", renewTime="2026-11-30T19:00:10.000000Z"))
    assert not le.try_acquire_or_renew()
    clock.step(10)  # 20 s after first observation but only 10 s after the renew
    assert not le.try_acquire_or_renew()


def test_conflict_409_means_lost_race() -> None:
    api, clock = FakeKubeApi(), FakeClock()
    api.put(LEASES, lease())
    le = LeaderElector(api, cfg("a"), clock=clock)
    api.fail("replace", ApiError(409, "Conflict", "modified"))
    assert le.try_acquire_or_renew() is False
    assert "409" in (le.last_error or "")
    assert not le.is_leader()


def test_missing_lease_is_a_clear_condition_and_never_created() -> None:
    api, clock = FakeKubeApi(), FakeClock()
    le = LeaderElector(api, cfg("a"), clock=clock)
    assert le.try_acquire_or_renew() is False
    assert le.condition == "LeaseMissing"
    assert "pre-creates" in (le.last_error or "") and "sys/tg" in (le.last_error or "")
    assert api.count("create") == 0
    # once the Lease exists (the chart created it) the elector takes it
    api.put(LEASES, lease())
    assert le.try_acquire_or_renew() is True
    assert api.get(LEASES, "sys", "tg")["spec"]["holderIdentity"] == "a"


def test_is_leader_turns_false_at_renew_deadline_before_lease_expiry() -> None:
    api, clock = FakeKubeApi(), FakeClock()
    api.put(LEASES, lease())
    le = LeaderElector(api, cfg("a"), clock=clock)
    le._leading = True  # as acquire() does
    assert le.try_acquire_or_renew()
    assert le.is_leader()
    clock.step(9.99)
    assert le.is_leader()
    clock.step(0.01)  # renew deadline (10 s) passed: well before the 15 s lease expiry
    assert not le.is_leader()


def run_in_thread(le: LeaderElector) -> tuple[threading.Thread, list[bool]]:
    out: list[bool] = []
    t = threading.Thread(target=lambda: out.append(le.run()), daemon=True)
    t.start()
    return t, out


def test_run_loses_leadership_when_renewals_fail_and_reports_false() -> None:
    api, clock, reg = FakeKubeApi(), FakeClock(), Registry()
    api.put(LEASES, lease())
    events: list[str] = []
    le = LeaderElector(api, cfg("a"), clock=clock, registry=reg, rng=random.Random(0),
                       on_started_leading=lambda: events.append("started"),
                       on_stopped_leading=lambda: events.append("stopped"))
    t, out = run_in_thread(le)
    assert wait_until(lambda: events == ["started"] and le.sleeping_until is not None)
    assert le.is_leader()
    assert reg.value("leader_election_master_status", name="tg") == 1
    for _ in range(20):  # the API server fails every renew from now on
        api.fail("get", ApiError(500, "InternalError", "etcd down"))
    t0 = clock.now()
    stepped: list[float] = []
    while t.is_alive() and clock.now() - t0 < 30:
        assert wait_until(lambda: le.sleeping_until not in (None, *stepped) or not t.is_alive())
        until = le.sleeping_until
        if not t.is_alive() or until is None:
            break
        stepped.append(until)
        clock.step(max(0.0, until - clock.now()))
    t.join(5)
    assert out == [False]
    assert events == ["started", "stopped"]
    assert not le.is_leader() and le.condition == "Lost"
    assert clock.now() - t0 <= 10.0 + 2.0  # gave up at the renew deadline, not the lease expiry
    assert reg.value("leader_election_master_status", name="tg") == 0


def test_run_stops_at_once_when_another_replica_holds_the_lease() -> None:
    api, clock = FakeKubeApi(), FakeClock()
    api.put(LEASES, lease())
    le = LeaderElector(api, cfg("a"), clock=clock)
    t, out = run_in_thread(le)
    assert wait_until(lambda: le.is_leader() and le.sleeping_until is not None)
    api.put(LEASES, lease("b"))  # e.g. an operator forced the holder
    clock.step(2)
    t.join(5)
    assert out == [False]


def test_stop_releases_the_lease_and_second_elector_takes_over_at_once() -> None:
    api, clock = FakeKubeApi(), FakeClock()
    api.put(LEASES, lease())
    a = LeaderElector(api, cfg("a"), clock=clock)
    b = LeaderElector(api, cfg("b"), clock=clock)
    ta, outa = run_in_thread(a)
    assert wait_until(lambda: a.is_leader())
    tb, _ = run_in_thread(b)
    assert wait_until(lambda: b.condition == "Following" and b.sleeping_until is not None)
    assert not b.is_leader()
    a.stop()
    ta.join(5)
    assert outa == [True]
    spec = api.get(LEASES, "sys", "tg")["spec"]
    assert spec["holderIdentity"] == "" and spec["leaseDurationSeconds"] == 1
    clock.step(2.5)  # b's next retry (<= 2.4 s jittered) sees a free lease
    assert wait_until(lambda: b.is_leader())
    assert api.get(LEASES, "sys", "tg")["spec"]["holderIdentity"] == "b"
    b.stop()
    tb.join(5)


def _unreachable() -> BaseException:
    """What urllib3 raises when nothing listens on the API server's port (RestApi sets retries=False)."""
    import urllib3

    return urllib3.exceptions.NewConnectionError(
        object(), "Failed to establish a new connection: [Errno 111] Connection refused")


@pytest.mark.parametrize("error", [_unreachable(), ConnectionResetError(104, "reset"), TimeoutError("timed out"),
                                   ValueError("Expecting value: line 1 column 1 (char 0)"),
                                   __import__("requests").ConnectionError("down")],
                         ids=["urllib3", "OSError", "timeout", "bad-json", "requests"])
def test_an_unreachable_api_server_is_a_failed_attempt_not_an_exception(error: BaseException) -> None:
    api, clock = FakeKubeApi(), FakeClock()
    api.put(LEASES, lease())
    le = LeaderElector(api, cfg("a"), clock=clock)
    api.fail("get", error)
    assert le.try_acquire_or_renew() is False
    assert le.condition == "Error" and le.failures == 1
    assert (le.last_error or "").startswith(f"get Lease sys/tg: {type(error).__name__}")
    assert " at 0x" not in (le.last_error or "")  # the same text at every retry: logged once
    api.fail("replace", error)
    assert le.try_acquire_or_renew() is False and le.failures == 2
    assert le.try_acquire_or_renew() is True and le.failures == 0 and le.last_error is None


def test_a_replica_started_during_an_api_outage_retries_with_back_off_and_leads(
        caplog: pytest.LogCaptureFixture) -> None:
    api, clock = FakeKubeApi(), FakeClock()
    api.put(LEASES, lease())
    le = LeaderElector(api, cfg("a"), clock=clock, rng=random.Random(0))
    api.fail("get", *[_unreachable() for _ in range(8)])  # the first 8 attempts: no API server
    t, out = run_in_thread(le)
    delays: list[float] = []
    while not le.is_leader():
        assert wait_until(lambda: le.sleeping_until is not None or le.is_leader()), "the elector thread died"
        until = le.sleeping_until
        if until is None:
            break
        delays.append(until - clock.now())
        clock.step(until - clock.now())
        assert wait_until(lambda u=until: le.sleeping_until != u)
    assert t.is_alive() and le.is_leader() and api.get(LEASES, "sys", "tg")["spec"]["holderIdentity"] == "a"
    # 2 s, then doubling per failure, capped at the lease duration (each x 1..1.2 jitter)
    assert len(delays) == 8
    for n, d in enumerate(delays):
        base = min(15.0, 2.0 * 2 ** max(0, n))
        assert base <= d <= base * 1.2 + 1e-9, (n, d)
    errors = [r for r in caplog.records if r.levelname == "ERROR" and "leader election" in r.getMessage()]
    assert len(errors) == 1 and "NewConnectionError" in errors[0].getMessage()  # once, not at every retry
    le.stop()
    clock.step(3)
    t.join(5)
    assert out == [True]


def test_a_bug_in_an_attempt_is_logged_and_retried(caplog: pytest.LogCaptureFixture) -> None:
    api, clock = FakeKubeApi(), FakeClock()
    api.put(LEASES, lease())
    le = LeaderElector(api, cfg("a"), clock=clock)
    real = le.try_acquire_or_renew
    calls = {"n": 0}

    def buggy() -> bool:
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyError("a bug")
        return real()

    le.try_acquire_or_renew = buggy  # type: ignore[method-assign]
    t, _ = run_in_thread(le)
    assert wait_until(lambda: le.sleeping_until is not None)
    clock.step(2.5)
    assert wait_until(le.is_leader) and t.is_alive()
    assert any(r.getMessage() == "leader election: attempt failed" and r.exc_info for r in caplog.records)
    le.stop()
    t.join(5)


def test_a_leader_that_loses_the_api_server_stops_at_the_renew_deadline() -> None:
    api, clock = FakeKubeApi(), FakeClock()
    api.put(LEASES, lease())
    le = LeaderElector(api, cfg("a"), clock=clock)
    t, out = run_in_thread(le)
    assert wait_until(lambda: le.is_leader() and le.sleeping_until is not None)
    api.fail("get", *[_unreachable() for _ in range(50)])
    t0 = clock.now()
    while t.is_alive() and clock.now() - t0 < 30:
        if not wait_until(lambda: le.sleeping_until is not None or not t.is_alive(), 2):
            break
        until = le.sleeping_until
        if until is None:
            break
        clock.step(max(0.0, until - clock.now()))
        wait_until(lambda u=until: le.sleeping_until != u or not t.is_alive())
    t.join(5)
    assert out == [False] and not le.is_leader() and le.condition == "Lost"  # the caller exits 1
    assert clock.now() - t0 <= 10.0 + 2.0


def test_release_without_an_api_server_does_not_raise() -> None:
    api, clock = FakeKubeApi(), FakeClock()
    api.put(LEASES, lease())
    le = LeaderElector(api, cfg("a"), clock=clock)
    assert le.try_acquire_or_renew()
    api.fail("get", _unreachable())
    assert le.release() is False
    api.fail("replace", _unreachable())
    assert le.release() is False
