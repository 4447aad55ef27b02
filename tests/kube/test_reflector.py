from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

import pytest

from titanium_gateway.kube.api import SECRETS, SERVICES, ApiError
from titanium_gateway.kube.clock import FakeClock
from titanium_gateway.kube.reflector import Backoff, Reflector
from titanium_gateway.kube.store import Store

from .fakeapi import FakeKubeApi


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def on_add(self, obj: dict) -> None:
        self.events.append(("add", obj["metadata"]["name"]))

    def on_update(self, old: dict, new: dict) -> None:
        self.events.append(("update", new["metadata"]["name"]))

    def on_delete(self, obj: dict) -> None:
        self.events.append(("delete", obj["metadata"]["name"]))


def svc(name: str, ns: str = "default", **labels: str) -> dict:
    return {"metadata": {"name": name, "namespace": ns, "labels": labels}, "spec": {}}


def wait_until(pred: Callable[[], bool], timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.002)
    return pred()


@pytest.fixture
def api() -> FakeKubeApi:
    a = FakeKubeApi()
    a.end_watch_after_replay = True
    return a


def make(api: FakeKubeApi, **kw: object) -> tuple[Reflector, Store, Recorder]:
    store, rec = Store(), Recorder()
    kw.setdefault("clock", FakeClock())
    kw.setdefault("min_watch_duration", 0.0)  # synchronous tests: fake time does not move by itself
    r = Reflector(api, SERVICES, store, rec, **kw)  # type: ignore[arg-type]
    return r, store, rec


def test_paginated_list_fills_store_without_managed_fields(api: FakeKubeApi) -> None:
    for i in range(5):
        api.put(SERVICES, svc(f"s{i}"))
    r, store, rec = make(api, page_size=2)
    r.list()
    assert api.count("list") == 3
    assert [c["continue_token"] for c in api.calls_of("list")] == [None, "2", "4"]
    assert len(store) == 5 and r.has_synced()
    assert r.last_sync_resource_version == str(api.rv)
    o = store.get("default/s0")
    assert o is not None and "managedFields" not in o["metadata"]
    assert o["kind"] == "Service" and o["apiVersion"] == "v1"  # filled in for list items
    assert rec.events == [("add", f"s{i}") for i in range(5)]


def test_expired_continue_token_falls_back_to_full_list(api: FakeKubeApi) -> None:
    for i in range(3):
        api.put(SERVICES, svc(f"s{i}"))
    r, store, _ = make(api, page_size=1)
    orig = api.list
    calls = {"n": 0}

    def flaky_list(*a: object, **kw: object) -> dict:
        calls["n"] += 1
        if calls["n"] == 2:
            raise ApiError(410, "Expired", "continue token expired")
        return orig(*a, **kw)  # type: ignore[arg-type]

    api.list = flaky_list  # type: ignore[method-assign]
    r.list()
    assert len(store) == 3
    assert api.calls_of("list")[-1]["limit"] is None


def test_watch_applies_events_from_list_rv_and_restarts_from_last_rv(api: FakeKubeApi) -> None:
    api.put(SERVICES, svc("a"))
    r, store, rec = make(api)
    r.list()
    list_rv = r.last_sync_resource_version
    api.put(SERVICES, svc("b"))
    api.put(SERVICES, svc("a", app="x"))
    api.remove(SERVICES, "default", "b")
    api.watch_scripts.append([{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "999"}}}])
    r.watch_once()
    assert api.calls_of("watch")[0]["resource_version"] == list_rv
    assert api.calls_of("watch")[0]["allow_bookmarks"] is True
    assert rec.events == [("add", "a"), ("add", "b"), ("update", "a"), ("delete", "b")]
    assert store.keys() == ["default/a"]
    assert store.get("default/a")["metadata"]["labels"] == {"app": "x"}  # type: ignore[index]
    assert r.last_sync_resource_version == "999"  # bookmark moved it
    r.run_once()  # stream ended normally: a new watch from the bookmark, no relist
    assert api.count("list") == 1
    assert api.calls_of("watch")[1]["resource_version"] == "999"


def test_http_410_relists_and_reports_missed_deletes(api: FakeKubeApi) -> None:
    api.put(SERVICES, svc("a"))
    api.put(SERVICES, svc("b"))
    clock = FakeClock()
    r, store, rec = make(api, clock=clock)
    r.list()
    api.remove(SERVICES, "default", "a")  # missed: history is compacted below
    api.put(SERVICES, svc("c"))
    api.compact()
    clock.step(5)
    r.watch_once()  # 410 as the HTTP answer
    assert api.count("list") == 1
    r.run_once()  # relist at once, then watch
    assert api.count("list") == 2
    assert sorted(store.keys()) == ["default/b", "default/c"]
    assert ("delete", "a") in rec.events and ("add", "c") in rec.events
    assert ("update", "b") not in rec.events  # unchanged objects are not re-reported


def test_error_event_410_relists(api: FakeKubeApi) -> None:
    api.put(SERVICES, svc("a"))
    clock = FakeClock()
    r, store, _ = make(api, clock=clock)
    r.list()
    api.watch_scripts.append([{"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}])
    clock.step(5)
    r.run_once()  # watch -> ERROR 410
    api.put(SERVICES, svc("z"))
    r.run_once()  # relist
    assert api.count("list") == 2
    assert "default/z" in store


def test_error_event_other_than_410_raises(api: FakeKubeApi) -> None:
    r, _, _ = make(api)
    r.list()
    api.watch_scripts.append([{"type": "ERROR", "object": {"kind": "Status", "code": 500, "reason": "Internal"}}])
    with pytest.raises(ApiError) as ei:
        r.watch_once()
    assert ei.value.status == 500


def test_backoff_bounds_jitter_cap_and_retry_after() -> None:
    b = Backoff(initial=1, factor=2, cap=10, jitter=1.0, rng=random.Random(1))
    delays = [b.next() for _ in range(8)]
    for i, d in enumerate(delays):
        base = min(10, 2 ** i)
        assert base <= d <= min(10, 2 * base)
    assert delays[-1] <= 10
    assert b.next(retry_after=42) == 42
    b.reset()
    assert 1 <= b.next() <= 2


def test_run_backs_off_honouring_retry_after_then_recovers(api: FakeKubeApi) -> None:
    api.end_watch_after_replay = False
    api.put(SERVICES, svc("a"))
    api.fail("list", ApiError(429, "TooManyRequests", "slow down", retry_after=7))
    clock = FakeClock()
    r, store, _ = make(api, clock=clock, backoff=Backoff(initial=0.1, cap=1, rng=random.Random(0)))
    t = threading.Thread(target=r.run, daemon=True)
    t.start()
    try:
        assert wait_until(lambda: r.sleeping_until is not None)
        assert r.errors == 1
        clock.step(6.9)
        time.sleep(0.02)
        assert api.count("list") == 1  # still waiting for Retry-After
        clock.step(0.2)
        assert wait_until(lambda: r.has_synced() and api.count("watch") == 1)
        assert "default/a" in store
    finally:
        r.stop()
        api.end_watches()
        t.join(5)
    assert not t.is_alive()


def test_watch_errors_back_off_and_resume_without_relist(api: FakeKubeApi) -> None:
    api.end_watch_after_replay = False
    clock = FakeClock()
    r, _, _ = make(api, clock=clock, backoff=Backoff(initial=1, cap=1, jitter=0))
    api.fail("watch", ConnectionResetError("reset"), ConnectionResetError("reset"))
    t = threading.Thread(target=r.run, daemon=True)
    t.start()
    try:
        assert wait_until(lambda: r.sleeping_until is not None and r.errors == 1)
        clock.step(1)
        assert wait_until(lambda: r.sleeping_until is not None and r.errors == 2)
        clock.step(1)
        assert wait_until(lambda: len(api.watchers) == 1)
        assert api.count("list") == 1
        api.put(SERVICES, svc("late"))
        assert wait_until(lambda: "default/late" in r.store)
    finally:
        r.stop()
        api.end_watches()
        t.join(5)


def test_empty_stream_ending_at_once_does_not_spin(api: FakeKubeApi) -> None:
    clock = FakeClock()
    r, _, _ = make(api, clock=clock, backoff=Backoff(initial=2, cap=2, jitter=0), min_watch_duration=1.0)
    t = threading.Thread(target=r.run, daemon=True)
    t.start()
    try:
        assert wait_until(lambda: api.count("watch") == 1 and r.sleeping_until is not None)
        time.sleep(0.02)
        assert api.count("watch") == 1  # sleeping 2 s of fake time
        clock.step(2)
        assert wait_until(lambda: api.count("watch") == 2)
    finally:
        r.stop()
        t.join(5)
    assert not t.is_alive()


def test_selectors_and_namespace_are_passed(api: FakeKubeApi) -> None:
    api.put(SECRETS, {"metadata": {"name": "tls", "namespace": "n1"}, "type": "kubernetes.io/tls"})
    api.put(SECRETS, {"metadata": {"name": "op", "namespace": "n1"}, "type": "Opaque"})
    api.put(SECRETS, {"metadata": {"name": "tls2", "namespace": "n2"}, "type": "kubernetes.io/tls"})
    store = Store()
    r = Reflector(api, SECRETS, store, namespace="n1", field_selector="type=kubernetes.io/tls",
                  label_selector=None, clock=FakeClock(), min_watch_duration=0)
    r.list()
    r.watch_once()
    assert store.keys() == ["n1/tls"]
    assert api.calls_of("watch")[0]["field_selector"] == "type=kubernetes.io/tls"
    assert api.calls_of("watch")[0]["namespace"] == "n1"


def test_resync_reports_every_object_as_update(api: FakeKubeApi) -> None:
    api.put(SERVICES, svc("a"))
    clock = FakeClock()
    r, _, rec = make(api, clock=clock, resync_period=30)
    r.list()
    clock.step(31)
    r.watch_once()
    assert rec.events == [("add", "a"), ("update", "a")]
    assert api.calls_of("watch")[0]["timeout_seconds"] <= 60


def test_handler_exception_does_not_break_cache(api: FakeKubeApi) -> None:
    class Boom(Recorder):
        def on_add(self, obj: dict) -> None:
            raise RuntimeError("bug")

    api.put(SERVICES, svc("a"))
    store = Store()
    r = Reflector(api, SERVICES, store, Boom(), clock=FakeClock())
    r.list()
    assert "default/a" in store and r.has_synced()


MALFORMED_EVENTS: list = [
    "not an event",
    {"type": "ADDED"},  # no object
    {"type": "ADDED", "object": ["a", "list"]},
    {"type": "ADDED", "object": {"kind": "Service"}},  # no metadata
    {"type": "MODIFIED", "object": {"metadata": "x"}},
    {"type": "ADDED", "object": {"metadata": {"namespace": "default", "resourceVersion": "900"}}},  # no name
    {"type": "ADDED", "object": {"metadata": {"name": "", "namespace": "default"}}},
    {"type": "DELETED", "object": {"metadata": {"namespace": "default", "resourceVersion": "901"}}},
    {"type": "ADDED", "object": {"metadata": {"name": 7, "namespace": "default"}}},
]


def test_malformed_watch_events_are_skipped_counted_and_the_watch_goes_on(api: FakeKubeApi) -> None:
    from titanium_gateway.metrics import Registry

    reg = Registry()
    r, store, rec = make(api, registry=reg)
    r.list()
    good = {"type": "ADDED", "object": {**svc("good"), "metadata": {**svc("good")["metadata"],
                                                                     "resourceVersion": "902"}}}
    api.watch_scripts.append([*MALFORMED_EVENTS, good])
    r.watch_once()  # returns normally: nothing raised, nothing cached from the bad events
    assert store.keys() == ["default/good"] and rec.events == [("add", "good")]
    assert r.malformed == len(MALFORMED_EVENTS)
    assert reg.value("titanium_reflector_malformed_objects_total", reflector=r.name) == len(MALFORMED_EVENTS)
    assert r.last_sync_resource_version == "902"
    assert api.count("list") == 1  # no relist


def test_malformed_watch_events_never_make_run_spin(api: FakeKubeApi) -> None:
    """The same bad events replayed on every watch: the reflector keeps serving later events
    and never loops on errors (the loop used to retry the same event forever)."""
    api.end_watch_after_replay = False
    r, store, _ = make(api, clock=FakeClock())
    api.watch_scripts.append(list(MALFORMED_EVENTS))
    t = threading.Thread(target=r.run, daemon=True)
    t.start()
    try:
        assert wait_until(lambda: r.malformed == len(MALFORMED_EVENTS))
        api.put(SERVICES, svc("later"))
        assert wait_until(lambda: "default/later" in store)
        assert r.errors == 0 and api.count("list") == 1
    finally:
        r.stop()
        api.end_watches()
        t.join(5)


def test_malformed_list_items_are_skipped(api: FakeKubeApi) -> None:
    api.put(SERVICES, svc("a"))
    r, store, rec = make(api)
    orig = api.list

    def with_junk(*a: object, **kw: object) -> dict:
        page = orig(*a, **kw)  # type: ignore[arg-type]
        page["items"] = [*page["items"], None, 3, {"metadata": {}}, {"spec": {}}]
        return page

    api.list = with_junk  # type: ignore[method-assign]
    r.list()
    assert store.keys() == ["default/a"] and rec.events == [("add", "a")]
    assert r.malformed == 4 and r.has_synced()


def test_a_transform_with_previous_gets_the_stored_object_of_the_same_key(api: FakeKubeApi) -> None:
    seen: list[tuple[str, str | None]] = []

    def transform(obj: dict) -> dict:
        seen.append((obj["metadata"]["name"], None))
        return obj

    def with_previous(obj: dict, previous: dict) -> dict:
        assert previous["metadata"]["name"] == obj["metadata"]["name"]
        seen.append((obj["metadata"]["name"], previous["metadata"]["resourceVersion"]))
        return obj

    transform.with_previous = with_previous  # type: ignore[attr-defined]
    api.put(SERVICES, svc("a"))
    r, store, _ = make(api, transform=transform)
    r.list()
    first_rv = store.get("default/a")["metadata"]["resourceVersion"]  # type: ignore[index]
    api.put(SERVICES, svc("a", app="x"))  # MODIFIED: the stored version is handed over
    api.put(SERVICES, svc("b"))  # ADDED: nothing stored yet
    r.watch_once()
    assert seen == [("a", None), ("a", first_rv), ("b", None)]
    seen.clear()
    r.list()  # a relist: each listed item with the stored one
    assert sorted(seen) == sorted([("a", store.get("default/a")["metadata"]["resourceVersion"]),  # type: ignore[index]
                                   ("b", store.get("default/b")["metadata"]["resourceVersion"])])  # type: ignore[index]


def test_a_streaming_list_fills_the_store_and_the_watch_goes_on_from_its_bookmark(api: FakeKubeApi) -> None:
    for i in range(3):
        api.put(SERVICES, svc(f"s{i}"))
    r, store, rec = make(api, watch_list=True)
    r.list()
    assert api.count("list") == 0 and api.calls_of("watch")[0]["send_initial_events"] is True
    assert store.keys() == ["default/s0", "default/s1", "default/s2"] and r.has_synced() and r.lists == 1
    assert store.get("default/s0")["kind"] == "Service"  # type: ignore[index]
    assert r.last_sync_resource_version == str(api.rv) and rec.events == [("add", f"s{i}") for i in range(3)]
    api.put(SERVICES, svc("s3"))
    r.watch_once()
    assert api.calls_of("watch")[1]["send_initial_events"] is False
    assert api.calls_of("watch")[1]["resource_version"] == str(api.rv - 1)
    assert rec.events[-1] == ("add", "s3") and len(store) == 4


def test_a_server_without_streaming_lists_is_listed_with_pages_and_not_asked_again(api: FakeKubeApi) -> None:
    api.put(SERVICES, svc("a"))
    api.fail("watch", ApiError(422, "Invalid", "sendInitialEvents is forbidden for watch unless the WatchList "
                                               "feature gate is enabled"))
    r, store, _ = make(api, watch_list=True)
    r.list()
    assert store.keys() == ["default/a"] and api.count("list") == 1 and r.watch_list is False
    r.list()  # a relist (after a 410): pages straight away
    assert api.count("list") == 2 and api.count("watch") == 1


def test_a_streaming_list_that_ends_before_its_bookmark_is_listed_with_pages(api: FakeKubeApi) -> None:
    api.put(SERVICES, svc("a"))
    r, store, _ = make(api, watch_list=True)
    real_watch = api.watch

    def no_bookmark(*a: object, **kw: object):  # type: ignore[no-untyped-def]
        return iter([e for e in real_watch(*a, **kw) if e["type"] != "BOOKMARK"])  # type: ignore[arg-type]

    api.watch = no_bookmark  # type: ignore[method-assign]
    r.list()
    assert store.keys() == ["default/a"] and api.count("list") == 1 and r.watch_list is False


def test_an_error_in_a_streaming_list_is_raised_and_the_next_attempt_streams_again(api: FakeKubeApi) -> None:
    api.put(SERVICES, svc("a"))
    r, store, _ = make(api, watch_list=True)
    api.fail("watch", ApiError(500, "InternalError", "etcd"))
    with pytest.raises(ApiError):
        r.list()
    assert not r.has_synced() and r.watch_list is True
    r.list()
    assert store.keys() == ["default/a"] and api.count("list") == 0
