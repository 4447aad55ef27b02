from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from titanium_gateway.kube.api import SECRETS, SERVICES
from titanium_gateway.kube.informer import EventHandler, InformerSet, SharedInformer
from titanium_gateway.kube.reflector import Backoff
from titanium_gateway.kube.store import namespace_index
from titanium_gateway.kube.workqueue import CoalescingTrigger

from .fakeapi import FakeKubeApi


def wait_until(pred: Callable[[], bool], timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.002)
    return pred()


def fast() -> Backoff:
    return Backoff(initial=0.005, cap=0.02)


def svc(name: str, ns: str = "default") -> dict:
    return {"metadata": {"name": name, "namespace": ns}, "spec": {}}


def test_informer_syncs_and_calls_handlers_with_raw_dicts() -> None:
    api = FakeKubeApi()
    api.put(SERVICES, svc("a"))
    inf = SharedInformer(api, SERVICES, indexers={"namespace": namespace_index})
    trigger = CoalescingTrigger(0)
    seen: list[tuple[str, str]] = []
    inf.add_event_handler(on_add=lambda o: (seen.append(("add", o["metadata"]["name"])), trigger.trigger()),
                          on_update=lambda o, n: seen.append(("update", n["metadata"]["name"])),
                          on_delete=lambda o: seen.append(("delete", o["metadata"]["name"])))
    assert not inf.has_synced()
    inf.start()
    inf.start()  # idempotent
    try:
        assert inf.wait_for_sync(5)
        assert inf.get("default", "a") is not None
        api.put(SERVICES, svc("b"))
        api.put(SERVICES, svc("b") | {"spec": {"x": 1}})
        api.remove(SERVICES, "default", "a")
        assert wait_until(lambda: len(seen) == 4)
        assert seen == [("add", "a"), ("add", "b"), ("update", "b"), ("delete", "a")]
        assert [o["metadata"]["name"] for o in inf.store.by_index("namespace", "default")] == ["b"]
        assert trigger.triggers == 2 and trigger.wait(timeout=0)  # many changes, one reconcile
        assert not trigger.pending()
    finally:
        inf.stop()
        api.end_watches()
        inf.stop(join_timeout=5)
    assert all(not t.is_alive() for t in inf._threads)


def test_late_handler_gets_current_state_as_adds() -> None:
    api = FakeKubeApi()
    api.put(SERVICES, svc("a"))
    inf = SharedInformer(api, SERVICES)
    inf.start()
    try:
        assert inf.wait_for_sync(5)
        got: list[str] = []
        inf.add_event_handler(EventHandler(on_add=lambda o: got.append(o["metadata"]["name"])))
        assert got == ["a"]
    finally:
        inf.stop()
        api.end_watches()


def test_one_reflector_per_namespace_into_one_store() -> None:
    api = FakeKubeApi()
    for ns in ("n1", "n2", "n3"):
        api.put(SECRETS, {"metadata": {"name": "tls", "namespace": ns}, "type": "kubernetes.io/tls"})
        api.put(SECRETS, {"metadata": {"name": "opaque", "namespace": ns}, "type": "Opaque"})
    inf = SharedInformer(api, SECRETS, namespaces=["n1", "n2"], field_selector="type=kubernetes.io/tls",
                         backoff_factory=fast)
    assert len(inf.reflectors) == 2
    inf.start()
    try:
        assert inf.wait_for_sync(5)
        assert sorted(inf.store.keys()) == ["n1/tls", "n2/tls"]
        # a relist of one namespace leaves the other namespace's objects alone
        api.remove(SECRETS, "n1", "tls")
        api.compact()
        api.end_watches()  # reconnect -> 410 -> relist n1 and n2
        assert wait_until(lambda: sorted(inf.store.keys()) == ["n2/tls"])
    finally:
        inf.stop()
        api.end_watches()
    with pytest.raises(ValueError):
        SharedInformer(api, SECRETS, "n1", namespaces=["n2"])


def test_informer_set_waits_for_all_and_snapshots() -> None:
    api = FakeKubeApi()
    api.put(SERVICES, svc("a"))
    api.fail("list", ConnectionError("down"))  # secrets' first list fails, then recovers after back-off
    infs = InformerSet()
    infs.add("services", SharedInformer(api, SERVICES))
    infs.add("secrets", SharedInformer(api, SECRETS, backoff_factory=fast))
    with pytest.raises(ValueError):
        infs.add("services", SharedInformer(api, SERVICES))
    assert infs.unsynced() == ["secrets", "services"]
    infs.start()
    try:
        assert infs.wait_for_sync(10)
        assert infs.has_synced() and infs.unsynced() == []
        snap = infs.snapshot()
        assert list(snap["services"]) == ["default/a"] and dict(snap["secrets"]) == {}
    finally:
        infs.stop()
        api.end_watches()


def test_informer_set_sync_timeout() -> None:
    api = FakeKubeApi()
    for _ in range(100):
        api.fail("list", ConnectionError("down"))
    infs = InformerSet({"services": SharedInformer(api, SERVICES)})
    infs.start()
    try:
        assert infs.wait_for_sync(0.05) is False
    finally:
        infs.stop()


def test_transform_applies_to_listed_and_watched_objects_before_store_and_handlers() -> None:
    api = FakeKubeApi()
    api.put(SERVICES, svc("a") | {"status": {"big": "x" * 100}})

    def drop_status(obj: dict) -> dict:
        return {k: v for k, v in obj.items() if k != "status"}

    inf = SharedInformer(api, SERVICES, transform=drop_status)
    seen: list[dict] = []
    inf.add_event_handler(on_add=seen.append, on_update=lambda o, n: seen.append(n))
    inf.start()
    try:
        assert inf.wait_for_sync(5)
        api.put(SERVICES, svc("b") | {"status": {"big": "y"}})
        assert wait_until(lambda: len(seen) == 2)
        assert all("status" not in o for o in seen)
        assert "status" not in inf.get("default", "a") and "status" not in inf.get("default", "b")
        assert inf.get("default", "b")["kind"] == "Service"  # typed before the transform
        assert "status" in api.get(SERVICES, "default", "a")  # the API's object is untouched
    finally:
        inf.stop()
        api.end_watches()
        inf.stop(join_timeout=5)


def test_a_cache_is_stale_soon_on_403_or_404_and_after_a_longer_grace_on_other_failures() -> None:
    from titanium_gateway.kube.api import ApiError
    from titanium_gateway.kube.clock import FakeClock

    clock = FakeClock()
    api = FakeKubeApi()
    api.put(SERVICES, svc("a"))
    api.fail("list", *[ApiError(500, "InternalError", "boom")] * 1000)
    inf = SharedInformer(api, SERVICES, backoff_factory=lambda: Backoff(0.01, cap=0.01, jitter=0), clock=clock)
    inf.start()
    try:
        assert wait_until(lambda: inf.failure() is not None)
        assert inf.stale(60) == ""  # a passing outage keeps the cache in force
        clock.step(61)
        assert inf.stale(60) == "500 InternalError: boom"
        with api.lock:
            api.errors["list"].clear()
        assert wait_until(lambda: (clock.step(0.02), inf.has_synced())[1])
        assert inf.failure() is None and inf.stale(60) == ""
    finally:
        inf.stop(2)
    denied = FakeKubeApi()
    denied.fail("list", *[ApiError(403, "Forbidden", "no")] * 1000)
    inf = SharedInformer(denied, SECRETS, backoff_factory=lambda: Backoff(0.01, cap=0.01, jitter=0), clock=clock)
    inf.start()
    try:
        assert wait_until(lambda: inf.failure() is not None)
        assert inf.stale(60) == ""  # (a CRD's storage being re-created answers 404 for a moment)
        clock.step(5)
        assert inf.stale(60) == "403 Forbidden: no" and not inf.has_synced()
    finally:
        inf.stop(2)


def test_an_informer_set_swaps_and_removes_informers_under_its_readers() -> None:
    api = FakeKubeApi()
    a, b = SharedInformer(api, SERVICES), SharedInformer(api, SERVICES)
    infs = InformerSet({"Service": a})
    view = infs.snapshot()  # a reader's view is whole whatever happens next
    assert infs.replace("Service", b) is a and infs["Service"] is b
    assert infs.replace("Secret", SharedInformer(api, SECRETS)) is None
    assert infs.remove("Secret") is not None and infs.get("Secret") is None and infs.remove("Secret") is None
    assert list(view) == ["Service"] and list(infs) == ["Service"]
