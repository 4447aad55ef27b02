from __future__ import annotations

import re

from titanium_gateway.kube.api import EVENTS
from titanium_gateway.kube.clock import FakeClock
from titanium_gateway.render.result import EventRecord
from titanium_gateway.writers.base import LeaderGuard
from titanium_gateway.writers.events import REPEAT_INTERVAL, EventPolicy, EventWriter

from .fakes import RecordingApi

A = EventRecord("Ingress", "apps", "shop", "Warning", "InvalidPath", "path x is not absolute", uid="u1",
                api_version="networking.k8s.io/v1")
B = EventRecord("Ingress", "apps", "cart", "Warning", "UnknownAnnotation", "titanium.io/foo")


def apply(policy: EventPolicy, current: list[EventRecord]) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    for d in policy.decide(current):
        policy.record(d, f"ev-{d.record.name}", d.record.namespace)
        out.append((d.action, d.record.name, d.count))
    return out


def test_post_once_then_bump_every_30_minutes() -> None:
    clock = FakeClock()
    p = EventPolicy(clock=clock)
    assert apply(p, [A]) == [("post", "shop", 1)]
    for _ in range(5):
        clock.step(60)
        assert apply(p, [A]) == []
    clock.step(REPEAT_INTERVAL - 300)
    assert apply(p, [A]) == [("bump", "shop", 2)]
    clock.step(REPEAT_INTERVAL - 1)
    assert apply(p, [A]) == []
    clock.step(1)
    assert apply(p, [A]) == [("bump", "shop", 3)]


def test_gone_then_back_posts_again_at_once() -> None:
    clock = FakeClock()
    p = EventPolicy(clock=clock)
    apply(p, [A, B])
    clock.step(1)
    assert apply(p, [B]) == []  # A fixed: forgotten
    clock.step(1)
    assert apply(p, [A, B]) == [("post", "shop", 1)]


def test_failed_write_is_retried() -> None:
    p = EventPolicy(clock=FakeClock())
    assert [d.action for d in p.decide([A])] == ["post"]  # not recorded: the post failed
    assert [d.action for d in p.decide([A])] == ["post"]


def test_memory_is_bounded() -> None:
    p = EventPolicy(clock=FakeClock(), max_tracked=100)
    recs = [EventRecord("Ingress", "apps", f"i{i}", "Warning", "R", "m") for i in range(1000)]
    apply(p, recs)
    assert len(p) == 100


def test_writer_posts_events_k8s_io_and_bumps_series() -> None:
    api = RecordingApi()
    clock = FakeClock()
    w = EventWriter(api, controller_name="titaniumproxy.com/gateway-controller", identity="pod-0",
                    guard=LeaderGuard(), clock=clock)
    assert w.write([A]) == 1
    (create,) = [c for c in api.calls if c["verb"] == "create"]
    body = create["body"]
    assert create["plural"] == "events" and body["apiVersion"] == "events.k8s.io/v1"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", body["eventTime"])
    assert (body["reportingController"], body["reportingInstance"], body["action"]) == (
        "titaniumproxy.com/gateway-controller", "pod-0", "Reconcile")
    assert body["regarding"] == {"kind": "Ingress", "namespace": "apps", "name": "shop", "uid": "u1",
                                 "apiVersion": "networking.k8s.io/v1"}
    assert (body["reason"], body["note"], body["type"]) == ("InvalidPath", "path x is not absolute", "Warning")
    assert w.write([A]) == 0
    clock.step(REPEAT_INTERVAL)
    assert w.write([A]) == 1
    (patch,) = [c for c in api.calls if c["verb"] == "patch"]
    assert patch["plural"] == "events" and patch["name"] == body["metadata"]["name"]
    assert patch["body"]["series"]["count"] == 2
    assert api.obj(EVENTS, "apps", body["metadata"]["name"])["series"]["count"] == 2


def test_expired_event_is_posted_again_on_bump() -> None:
    api = RecordingApi()
    clock = FakeClock()
    w = EventWriter(api, controller_name="c", identity="i", guard=LeaderGuard(), clock=clock)
    w.write([A])
    api.objects.clear()  # the Event's TTL passed
    clock.step(REPEAT_INTERVAL)
    assert w.write([A]) == 1
    assert len([c for c in api.calls if c["verb"] == "create"]) == 2


def test_new_leader_adopts_the_event_of_its_predecessor() -> None:
    api = RecordingApi()
    clock = FakeClock()
    old = EventWriter(api, controller_name="c", identity="old", guard=LeaderGuard(), clock=clock)
    assert old.write([A]) == 1
    clock.step(60)
    new = EventWriter(api, controller_name="c", identity="new", guard=LeaderGuard(), clock=clock)
    new.write([A])  # 409 AlreadyExists -> adopted, not a second Event
    assert len([o for (p, _, _), o in api.objects.items() if p == "events"]) == 1
    assert not any(c["verb"] == "patch" and c["body"] for c in api.calls)  # not due: no bump yet
    clock.step(REPEAT_INTERVAL - 60)
    assert new.write([A]) == 1  # due 30 min after the ORIGINAL post
    (ev,) = [o for (p, _, _), o in api.objects.items() if p == "events"]
    assert ev["series"]["count"] == 2


def test_adopting_an_overdue_event_bumps_it_at_once() -> None:
    api = RecordingApi()
    clock = FakeClock()
    EventWriter(api, controller_name="c", identity="old", guard=LeaderGuard(), clock=clock).write([A])
    clock.step(REPEAT_INTERVAL + 5)
    new = EventWriter(api, controller_name="c", identity="new", guard=LeaderGuard(), clock=clock)
    assert new.write([A]) == 2  # read + bump
    (ev,) = [o for (p, _, _), o in api.objects.items() if p == "events"]
    assert ev["series"]["count"] == 2


def test_problem_returning_in_the_same_term_gets_a_new_event() -> None:
    api = RecordingApi()
    clock = FakeClock()
    w = EventWriter(api, controller_name="c", identity="i", guard=LeaderGuard(), clock=clock)
    w.write([A])
    w.write([])
    assert w.write([A]) == 1
    assert len([o for (p, _, _), o in api.objects.items() if p == "events"]) == 2


def test_429_pauses_event_writes_until_retry_after() -> None:
    from titanium_gateway.kube.api import ApiError

    api = RecordingApi()
    clock = FakeClock()
    w = EventWriter(api, controller_name="c", identity="i", guard=LeaderGuard(), clock=clock)
    api.fail_next("create", "events", ApiError(429, "TooManyRequests", "slow down", retry_after=5.0))
    assert w.write([A, B]) == 0
    assert len(api.writes("events")) == 1, "the second Event was sent after the server asked to wait"
    assert w.paused_for() == 5.0
    clock.step(4.9)
    assert w.write([A, B]) == 0 and len(api.writes("events")) == 1
    clock.step(0.1)
    assert w.paused_for() == 0.0
    assert w.write([A, B]) == 2  # both posted, once each
    assert len([o for (p, _, _), o in api.objects.items() if p == "events"]) == 2


def _events(api: RecordingApi) -> dict[str, dict]:
    return {k[2]: o for k, o in api.objects.items() if k[0] == "events"}


def test_problem_fixed_then_returning_across_a_leader_change_posts_a_new_event() -> None:
    """Seed: an Event is posted "again at once if it returns after being fixed", also when a
    new leader sees the return: the predecessor's Event was no longer kept alive (bumped), so
    it is not adopted."""
    from titanium_gateway.writers.events import STALE_GRACE

    api = RecordingApi()
    clock = FakeClock()
    old = EventWriter(api, controller_name="c", identity="old", guard=LeaderGuard(), clock=clock)
    assert old.write([A]) == 1
    old.write([])  # fixed
    clock.step(REPEAT_INTERVAL + STALE_GRACE + 1)
    new = EventWriter(api, controller_name="c", identity="new", guard=LeaderGuard(), clock=clock)
    assert new.write([A]) == 1  # returned: a NEW Event at once
    evs = _events(api)
    assert len(evs) == 2
    fresh = [e for e in evs.values() if e["reportingInstance"] == "new"]
    assert len(fresh) == 1 and fresh[0]["metadata"]["name"].endswith(".2")
    creates = len([c for c in api.calls if c["verb"] == "create"])
    new.write([A])  # and once only
    assert len([c for c in api.calls if c["verb"] == "create"]) == creates


def test_new_leader_adopts_the_latest_occurrence_while_it_is_live() -> None:
    api = RecordingApi()
    clock = FakeClock()
    old = EventWriter(api, controller_name="c", identity="old", guard=LeaderGuard(), clock=clock)
    old.write([A])
    old.write([])
    clock.step(60)
    old.write([A])  # returned in the same term: occurrence 2
    clock.step(60)
    new = EventWriter(api, controller_name="c", identity="new", guard=LeaderGuard(), clock=clock)
    new.write([A])  # the problem remains: adopted, nothing posted
    assert len(_events(api)) == 2 and all(e["reportingInstance"] == "old" for e in _events(api).values())
    clock.step(REPEAT_INTERVAL - 60)
    assert new.write([A]) == 1  # bumps occurrence 2 (30 min after it was posted), not occurrence 1
    evs = _events(api)
    bumped = [n for n, e in evs.items() if (e.get("series") or {}).get("count") == 2]
    assert len(bumped) == 1 and bumped[0].endswith(".2")


def test_continuing_problem_kept_alive_by_bumps_is_adopted_after_a_long_time() -> None:
    api = RecordingApi()
    clock = FakeClock()
    old = EventWriter(api, controller_name="c", identity="old", guard=LeaderGuard(), clock=clock)
    old.write([A])
    for _ in range(3):  # the leader bumps every 30 minutes while the problem remains
        clock.step(REPEAT_INTERVAL)
        assert old.write([A]) == 1
    clock.step(60)
    new = EventWriter(api, controller_name="c", identity="new", guard=LeaderGuard(), clock=clock)
    new.write([A])
    assert len(_events(api)) == 1 and not (api.writes("events")[-1]["body"] or {}).get("series")


def test_policy_next_due_is_the_earliest_bump() -> None:
    clock = FakeClock()
    p = EventPolicy(clock=clock)
    assert p.next_due() is None
    apply(p, [A])
    clock.step(10)
    apply(p, [A, B])
    assert p.next_due() == clock.now() - 10 + REPEAT_INTERVAL
