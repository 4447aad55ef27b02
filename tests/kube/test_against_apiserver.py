"""RestApi + Reflector/Informer + LeaderElector over real HTTP against the in-process API server."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from tests.support.apiserver import FakeApiServer
from titanium_gateway.kinds import GATEWAYS
from titanium_gateway.kube.api import CONFIG_MAPS, LEASES, SECRETS, SERVICES, ApiError
from titanium_gateway.kube.clock import FakeClock
from titanium_gateway.kube.informer import SharedInformer
from titanium_gateway.kube.leaderelection import LeaderElectionConfig, LeaderElector, LeaseLock
from titanium_gateway.kube.reflector import Backoff, Reflector
from titanium_gateway.kube.rest import RestApi, StrategicPatchNotSupported
from titanium_gateway.kube.store import Store
from titanium_gateway.metrics import Registry


def wait_until(pred: Callable[[], bool], timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.005)
    return pred()


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer(bookmark_interval=0.2) as s:
        yield s


@pytest.fixture
def registry() -> Registry:
    return Registry()


@pytest.fixture
def api(server: FakeApiServer, registry: Registry) -> Iterator[RestApi]:
    a = RestApi(server.client_configuration(), qps=1000, burst=1000, request_timeout=5, registry=registry)
    yield a
    a.close()


def cm(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": data}


def fast() -> Backoff:
    return Backoff(initial=0.01, cap=0.1)


# --- RestApi ------------------------------------------------------------------------------------

def test_crud_patch_types_and_errors(api: RestApi, server: FakeApiServer, registry: Registry) -> None:
    created = api.create(CONFIG_MAPS, "default", cm("x", a="1"))
    assert created["metadata"]["resourceVersion"]
    assert api.patch(CONFIG_MAPS, "default", "x", {"data": {"b": "2"}})["data"] == {"a": "1", "b": "2"}
    assert api.patch(CONFIG_MAPS, "default", "x", [{"op": "add", "path": "/data/c", "value": "3"}],
                     patch_type="json")["data"]["c"] == "3"
    assert api.patch(CONFIG_MAPS, "default", "x", {"data": {"d": "4"}}, patch_type="strategic")["data"]["d"] == "4"
    got = api.get(CONFIG_MAPS, "default", "x")
    content_types = [r.content_type.split(";")[0] for r in server.requests(method="PATCH")]
    assert content_types == ["application/merge-patch+json", "application/json-patch+json",
                             "application/strategic-merge-patch+json"]
    stale = dict(got, metadata=dict(got["metadata"], resourceVersion=created["metadata"]["resourceVersion"]))
    with pytest.raises(ApiError) as conflict:
        api.replace(CONFIG_MAPS, "default", "x", stale)
    assert conflict.value.is_conflict and conflict.value.reason == "Conflict"
    api.delete(CONFIG_MAPS, "default", "x")
    with pytest.raises(ApiError) as nf:
        api.get(CONFIG_MAPS, "default", "x")
    assert nf.value.is_not_found and nf.value.reason == "NotFound" and '"x"' in nf.value.message
    assert registry.value("rest_client_requests_total", code="404", method="GET") >= 1
    assert registry.value("rest_client_requests_total", code="201", method="POST") >= 1
    assert 'host="127.0.0.1:' in registry.render_text()


def test_retry_after_is_reported_not_slept(api: RestApi, server: FakeApiServer) -> None:
    server.inject("get", "configmaps", 429, retry_after=30)
    t0 = time.monotonic()
    with pytest.raises(ApiError) as e:
        api.get(CONFIG_MAPS, "default", "x")
    assert time.monotonic() - t0 < 5
    assert e.value.status == 429 and e.value.retry_after == 30


def test_strategic_patch_on_gateway_api_resource_is_refused_before_sending(api: RestApi,
                                                                          server: FakeApiServer) -> None:
    server.clear_log()
    with pytest.raises(StrategicPatchNotSupported):
        api.patch(GATEWAYS, "default", "gw", {"spec": {}}, patch_type="strategic")
    assert server.requests() == []


def test_paginated_list_and_field_selector(api: RestApi, server: FakeApiServer) -> None:
    for i in range(5):
        server.put_object(cm(f"c{i}"))
    page = api.list(CONFIG_MAPS, "default", limit=2)
    assert len(page["items"]) == 2 and page["metadata"].get("continue")
    rest = api.list(CONFIG_MAPS, "default", limit=10, continue_token=page["metadata"]["continue"])
    assert len(rest["items"]) == 3
    server.put_object({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                       "metadata": {"name": "t", "namespace": "default"},
                       "data": {"tls.crt": "", "tls.key": ""}})
    server.put_object({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                       "metadata": {"name": "o", "namespace": "default"}})
    tls = api.list(SECRETS, None, field_selector="type=kubernetes.io/tls")
    assert [s["metadata"]["name"] for s in tls["items"]] == ["t"]


def test_watch_stream_events_and_server_timeout(api: RestApi, server: FakeApiServer) -> None:
    rv = api.list(CONFIG_MAPS, "default")["metadata"]["resourceVersion"]
    server.put_object(cm("w"))
    t0 = time.monotonic()
    events = list(api.watch(CONFIG_MAPS, "default", resource_version=rv, timeout_seconds=1))
    assert time.monotonic() - t0 < 5  # ended by the server-side timeout
    assert events[0]["type"] == "ADDED" and events[0]["object"]["metadata"]["name"] == "w"
    assert all(e["type"] == "BOOKMARK" for e in events[1:])


# --- Informer over HTTP -------------------------------------------------------------------------

def start_informer(api: RestApi, **kw: object) -> tuple[SharedInformer, list[tuple[str, str]]]:
    seen: list[tuple[str, str]] = []
    inf = SharedInformer(api, CONFIG_MAPS, "default", watch_timeout=2, backoff_factory=fast, **kw)  # type: ignore[arg-type]
    inf.add_event_handler(on_add=lambda o: seen.append(("add", o["metadata"]["name"])),
                          on_update=lambda o, n: seen.append(("update", n["metadata"]["name"])),
                          on_delete=lambda o: seen.append(("delete", o["metadata"]["name"])))
    inf.start()
    assert inf.wait_for_sync(10)
    return inf, seen


def test_informer_follows_changes_and_drops_managed_fields(api: RestApi, server: FakeApiServer) -> None:
    server.put_object(cm("a", k="1"))
    inf, seen = start_informer(api)
    try:
        assert ("add", "a") in seen
        server.put_object(cm("b"))
        server.update_object("ConfigMap", "default", "a", lambda o: o["data"].update(k="2"))
        server.delete_object("ConfigMap", "default", "b")
        assert wait_until(lambda: seen[-3:] == [("add", "b"), ("update", "a"), ("delete", "b")])
        a = inf.get("default", "a")
        assert a is not None and a["data"]["k"] == "2" and "managedFields" not in a["metadata"]
        assert a["kind"] == "ConfigMap"
    finally:
        inf.stop()
        server.close_watches()


def test_relist_on_410_error_event(api: RestApi, server: FakeApiServer) -> None:
    server.put_object(cm("keep"))
    inf, _ = start_informer(api)
    r = inf.reflectors[0]
    try:
        assert wait_until(lambda: server.watch_count("configmaps") == 1)
        server.close_watches(expire=True)  # ERROR event with code 410, then the end of the stream
        assert wait_until(lambda: r.lists == 2)
        assert "default/keep" in inf.store
    finally:
        inf.stop()
        server.close_watches()


class Sink:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def on_add(self, o: dict) -> None:
        self.seen.append(("add", o["metadata"]["name"]))

    def on_update(self, o: dict, n: dict) -> None:
        self.seen.append(("update", n["metadata"]["name"]))

    def on_delete(self, o: dict) -> None:
        self.seen.append(("delete", o["metadata"]["name"]))


def test_relist_on_http_410_reports_missed_deletes(api: RestApi, server: FakeApiServer) -> None:
    server.put_object(cm("keep"))
    server.put_object(cm("doomed"))
    store, sink = Store(), Sink()
    r = Reflector(api, CONFIG_MAPS, store, sink, namespace="default", watch_timeout=1, backoff=fast(),
                  min_watch_duration=0)
    r.list()
    sink.seen.clear()
    server.delete_object("ConfigMap", "default", "doomed")  # missed: the history is compacted below
    server.put_object(cm("new"))
    server.compact()
    r.watch_once()  # HTTP 410 (or ERROR 410) from the compacted resourceVersion
    assert r.lists == 1 and sink.seen == []
    r.run_once()  # relist, then a 1 s watch
    assert r.lists == 2
    assert sorted(sink.seen) == [("add", "new"), ("delete", "doomed")]
    assert sorted(store.keys()) == ["default/keep", "default/new"]


def test_informer_survives_dropped_connections_and_restart(api: RestApi, server: FakeApiServer) -> None:
    inf, seen = start_informer(api)
    r = inf.reflectors[0]
    try:
        server.put_object(cm("one"))
        assert wait_until(lambda: ("add", "one") in seen)
        lists = r.lists
        server.drop_connections()
        server.put_object(cm("two"))
        assert wait_until(lambda: ("add", "two") in seen)
        server.restart(down_for=0.3)
        server.put_object(cm("three"))
        assert wait_until(lambda: ("add", "three") in seen)
        assert r.lists == lists  # resumed from the last resourceVersion, no relist needed
        assert seen.count(("add", "one")) == 1  # no duplicate notifications
    finally:
        inf.stop()
        server.close_watches()


def test_secret_informer_per_namespace_with_type_selector(api: RestApi, server: FakeApiServer) -> None:
    for ns in ("default", "kube-public", "kube-system"):
        server.put_object({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                           "metadata": {"name": "cert", "namespace": ns}, "data": {"tls.crt": "", "tls.key": ""}})
    inf = SharedInformer(api, SECRETS, namespaces=["default", "kube-public"],
                         field_selector="type=kubernetes.io/tls", backoff_factory=fast, watch_timeout=2)
    inf.start()
    try:
        assert inf.wait_for_sync(10)
        assert sorted(inf.store.keys()) == ["default/cert", "kube-public/cert"]
    finally:
        inf.stop()
        server.close_watches()


# --- Leader election over HTTP --------------------------------------------------------------------

def put_lease(server: FakeApiServer) -> None:
    server.put_object({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                       "metadata": {"name": "tg", "namespace": "default"}, "spec": {}})


def elector(api: RestApi, ident: str, clock: FakeClock, **kw: object) -> LeaderElector:
    return LeaderElector(api, LeaderElectionConfig("tg", "default", ident, **kw),  # type: ignore[arg-type]
                         clock=clock, registry=Registry())


def test_two_electors_compete_and_hand_over(api: RestApi, server: FakeApiServer) -> None:
    put_lease(server)
    clock = FakeClock()
    a, b = elector(api, "a", clock), elector(api, "b", clock)
    out: dict[str, bool] = {}
    ta = threading.Thread(target=lambda: out.__setitem__("a", a.run()), daemon=True)
    ta.start()
    assert wait_until(lambda: a.is_leader())
    spec = server.get_object("Lease", "default", "tg")["spec"]  # type: ignore[index]
    assert spec["holderIdentity"] == "a" and spec["renewTime"].endswith("Z") and "." in spec["renewTime"]
    tb = threading.Thread(target=lambda: out.__setitem__("b", b.run()), daemon=True)
    tb.start()
    assert wait_until(lambda: b.condition == "Following" and b.sleeping_until is not None)
    assert not b.is_leader() and b.leader() == "a"
    a.stop()
    ta.join(10)
    assert out["a"] is True
    assert server.get_object("Lease", "default", "tg")["spec"]["holderIdentity"] == ""  # type: ignore[index]
    clock.step(3)
    assert wait_until(lambda: b.is_leader())
    assert server.get_object("Lease", "default", "tg")["spec"]["leaseTransitions"] == 2  # type: ignore[index]
    b.stop()
    tb.join(10)


def test_simultaneous_update_one_wins_409(api: RestApi, server: FakeApiServer) -> None:
    put_lease(server)
    clock = FakeClock()
    a, b = elector(api, "a", clock), elector(api, "b", clock)
    a.lock.get()
    b.lock.get()
    from titanium_gateway.kube.leaderelection import LeaderElectionRecord

    now = clock.wall()
    a.lock.update(LeaderElectionRecord("a", 15, now, now, 1))
    with pytest.raises(ApiError) as e:
        b.lock.update(LeaderElectionRecord("b", 15, now, now, 1))
    assert e.value.is_conflict
    assert not b.try_acquire_or_renew()  # sees a's fresh lease


def test_missing_lease_is_reported_and_never_created(api: RestApi, server: FakeApiServer) -> None:
    server.forbid("create", "leases")
    clock = FakeClock()
    le = elector(api, "a", clock)
    assert le.try_acquire_or_renew() is False
    assert le.condition == "LeaseMissing" and "pre-creates" in (le.last_error or "")
    assert not server.requests(method="POST")
    put_lease(server)
    assert le.try_acquire_or_renew() is True
    assert server.get_object("Lease", "default", "tg")["spec"]["holderIdentity"] == "a"  # type: ignore[index]


def test_lease_lock_keeps_other_fields(api: RestApi, server: FakeApiServer) -> None:
    put_lease(server)
    server.update_object("Lease", "default", "tg", lambda o: o["metadata"].update(labels={"x": "y"}))
    lock = LeaseLock(api, "default", "tg")
    rec = lock.get()
    assert rec.holder_identity == ""
    le = elector(api, "a", FakeClock())
    assert le.try_acquire_or_renew()
    lease = api.get(LEASES, "default", "tg")
    assert lease["metadata"]["labels"] == {"x": "y"}


def test_services_informer_cluster_wide(api: RestApi, server: FakeApiServer) -> None:
    server.put_object({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "kube-system"},
                       "spec": {"ports": [{"port": 80}]}})
    inf = SharedInformer(api, SERVICES, backoff_factory=fast, watch_timeout=2)
    inf.start()
    try:
        assert inf.wait_for_sync(10)
        assert "kube-system/s" in inf.store
    finally:
        inf.stop()
        server.close_watches()


def test_stop_cuts_the_open_watch_at_once(api: RestApi, server: FakeApiServer) -> None:
    inf = SharedInformer(api, CONFIG_MAPS, "default", watch_timeout=600, backoff_factory=fast)
    inf.start()
    assert inf.wait_for_sync(10)
    assert wait_until(lambda: server.watch_count("configmaps") == 1)
    t0 = time.monotonic()
    inf.stop(join_timeout=5)
    assert time.monotonic() - t0 < 4  # not the 600 s watch timeout
    assert all(not t.is_alive() for t in inf._threads)
