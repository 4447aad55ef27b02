"""LIST (selectors, pagination, resourceVersion semantics) and WATCH (replay, 410, bookmarks,
timeouts, cut streams) through the official client."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import requests
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from tests.support.apiserver import FakeApiServer
from tests.support_tests.conftest import condition, status_of

GW = "gateway.networking.k8s.io"


def _cms(core: client.CoreV1Api, n: int, ns: str = "default", **labels: str) -> None:
    for i in range(n):
        core.create_namespaced_config_map(ns, {"metadata": {"name": f"cm-{i:03d}", "labels": dict(labels, i=str(i))}})


def test_label_selectors(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "a", "labels": {"env": "prod", "tier": "web"}}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "b", "labels": {"env": "dev"}}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})

    def names(sel: str) -> list[str]:
        return [i.metadata.name for i in core.list_namespaced_config_map("default", label_selector=sel).items]

    assert names("env=prod") == ["a"]
    assert names("env==dev") == ["b"]
    assert names("env!=prod") == ["b", "c"]
    assert names("env in (prod, dev)") == ["a", "b"]
    assert names("env notin (prod)") == ["b", "c"]
    assert names("tier") == ["a"]
    assert names("!tier") == ["b", "c"]
    assert names("env=prod,tier=web") == ["a"]
    with pytest.raises(ApiException) as e:
        names("env in prod")
    assert e.value.status == 400


def test_field_selectors(core: client.CoreV1Api) -> None:
    core.create_namespaced_secret("default", {"metadata": {"name": "tls"}, "type": "kubernetes.io/tls",
                                              "data": {"tls.crt": "eA==", "tls.key": "eA=="}})
    core.create_namespaced_secret("default", {"metadata": {"name": "opaque"}, "data": {}})
    core.create_namespace({"metadata": {"name": "other"}})
    core.create_namespaced_secret("other", {"metadata": {"name": "tls"}, "type": "kubernetes.io/tls",
                                            "data": {"tls.crt": "eA==", "tls.key": "eA=="}})
    tls = core.list_secret_for_all_namespaces(field_selector="type=kubernetes.io/tls").items
    assert sorted((s.metadata.namespace, s.metadata.name) for s in tls) == [("default", "tls"), ("other", "tls")]
    one = core.list_secret_for_all_namespaces(field_selector="metadata.namespace=other,metadata.name=tls").items
    assert [s.metadata.namespace for s in one] == ["other"]
    assert [s.metadata.name for s in core.list_namespaced_secret("default", field_selector="metadata.name!=tls").items] == ["opaque"]
    with pytest.raises(ApiException) as e:
        core.list_namespaced_secret("default", field_selector="data.x=1")
    assert e.value.status == 400


def test_pagination_is_a_consistent_snapshot(core: client.CoreV1Api) -> None:
    _cms(core, 25)
    page1 = core.list_namespaced_config_map("default", limit=10)
    assert len(page1.items) == 10 and page1.metadata._continue and page1.metadata.remaining_item_count == 15
    core.delete_namespaced_config_map("cm-015", "default")
    core.patch_namespaced_config_map("cm-016", "default", {"data": {"new": "x"}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm-100"}})
    page2 = core.list_namespaced_config_map("default", limit=10, _continue=page1.metadata._continue)
    page3 = core.list_namespaced_config_map("default", limit=10, _continue=page2.metadata._continue)
    assert page2.metadata.resource_version == page1.metadata.resource_version
    names = [i.metadata.name for i in page1.items + page2.items + page3.items]
    assert names == [f"cm-{i:03d}" for i in range(25)]  # as of the first page: no cm-100, cm-015 still there
    assert page2.items[6].data is None  # cm-016 without the later change
    assert not page3.metadata._continue
    fresh = core.list_namespaced_config_map("default")
    assert len(fresh.items) == 25 and int(fresh.metadata.resource_version) > int(page1.metadata.resource_version)


def test_too_old_continue_is_410(server: FakeApiServer, core: client.CoreV1Api) -> None:
    _cms(core, 5)
    page1 = core.list_namespaced_config_map("default", limit=2)
    core.create_namespaced_config_map("default", {"metadata": {"name": "later"}})
    server.compact()
    with pytest.raises(ApiException) as e:
        core.list_namespaced_config_map("default", limit=2, _continue=page1.metadata._continue)
    st = status_of(e.value)
    assert e.value.status == 410 and st["reason"] == "Expired" and st["metadata"]["continue"]
    # the inconsistent token from the Status continues on the current state
    rest = core.list_namespaced_config_map("default", _continue=st["metadata"]["continue"])
    assert [i.metadata.name for i in rest.items] == ["cm-002", "cm-003", "cm-004", "later"]


def test_list_resource_version_semantics(server: FakeApiServer, core: client.CoreV1Api) -> None:
    _cms(core, 3)
    rv = int(core.list_namespaced_config_map("default").metadata.resource_version)
    core.delete_namespaced_config_map("cm-000", "default")
    exact = core.list_namespaced_config_map("default", resource_version=str(rv), resource_version_match="Exact")
    assert [i.metadata.name for i in exact.items] == ["cm-000", "cm-001", "cm-002"]
    assert exact.metadata.resource_version == str(rv)
    newer = core.list_namespaced_config_map("default", resource_version=str(rv), resource_version_match="NotOlderThan")
    assert len(newer.items) == 2
    any_rv = core.list_namespaced_config_map("default", resource_version="0", limit=1)
    assert len(any_rv.items) == 2 and not any_rv.metadata._continue  # rv=0 is served whole (watch cache)
    with pytest.raises(ApiException) as e:
        core.list_namespaced_config_map("default", resource_version=str(rv + 1000))
    assert e.value.status == 504 and e.value.headers["Retry-After"] == "1"
    server.compact()
    with pytest.raises(ApiException) as e:
        core.list_namespaced_config_map("default", resource_version=str(rv), resource_version_match="Exact")
    assert e.value.status == 410


def _collect(stream: Any, out: list[tuple[str, str, str]], stop_after: int | None = None) -> None:
    for ev in stream:
        o = ev["raw_object"]
        out.append((ev["type"], o.get("metadata", {}).get("name", ""), o["metadata"]["resourceVersion"]))
        if stop_after is not None and len(out) >= stop_after:
            return


def test_watch_from_list_resource_version(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "before"}})
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})  # replayed from history
    events: list[tuple[str, str, str]] = []
    w = watch.Watch()

    def writer() -> None:
        time.sleep(0.2)
        core.patch_namespaced_config_map("a", "default", {"data": {"k": "v"}})
        core.delete_namespaced_config_map("a", "default")

    t = threading.Thread(target=writer)
    t.start()
    _collect(w.stream(core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=5), events, 3)
    w.stop()
    t.join()
    assert [(e[0], e[1]) for e in events] == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    rvs = [int(e[2]) for e in events]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3  # the DELETED event carries the deletion's RV


def test_watch_without_rv_starts_with_synthetic_adds(core: client.CoreV1Api) -> None:
    _cms(core, 3)
    events: list[tuple[str, str, str]] = []
    _collect(watch.Watch().stream(core.list_namespaced_config_map, "default", timeout_seconds=1), events)
    assert [e[:2] for e in events] == [("ADDED", "cm-000"), ("ADDED", "cm-001"), ("ADDED", "cm-002")]


def test_watch_label_selector_transitions(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "a", "labels": {"x": "1"}}})
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.patch_namespaced_config_map("a", "default", {"metadata": {"labels": {"x": "2"}}})
    core.patch_namespaced_config_map("a", "default", {"metadata": {"labels": {"x": "1"}}})
    events: list[tuple[str, str, str]] = []
    _collect(watch.Watch().stream(core.list_namespaced_config_map, "default", label_selector="x=1",
                                  resource_version=rv, timeout_seconds=1), events)
    assert [e[0] for e in events] == ["DELETED", "ADDED"]


def test_watch_too_old_resource_version_gets_410_error_event(server: FakeApiServer, core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", {"metadata": {"name": "b"}})
    server.compact()
    r = requests.get(f"{server.url}/api/v1/namespaces/default/configmaps",
                     params={"watch": "1", "resourceVersion": rv}, stream=True, timeout=5)
    assert r.status_code == 200 and r.headers["Transfer-Encoding"] == "chunked"
    lines = [ln for ln in r.iter_lines() if ln]
    import json

    ev = json.loads(lines[0])
    assert ev["type"] == "ERROR" and ev["object"]["code"] == 410 and ev["object"]["reason"] == "Expired"
    with pytest.raises(ApiException) as e:  # the client raises it when it may not retry (timeout given)
        list(watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=2))
    assert e.value.status == 410


def test_bookmarks_and_timeout(server: FakeApiServer, custom: client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(GW, "v1", "default", "httproutes", {
        "apiVersion": f"{GW}/v1", "kind": "HTTPRoute", "metadata": {"name": "r"}, "spec": {}})
    rv = custom.list_namespaced_custom_object(GW, "v1", "default", "httproutes")["metadata"]["resourceVersion"]
    server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unrelated"}})
    w = watch.Watch()
    t0 = time.monotonic()
    events = list(w.stream(custom.list_namespaced_custom_object, GW, "v1", "default", "httproutes",
                           resource_version=rv, allow_watch_bookmarks=True, timeout_seconds=1))
    elapsed = time.monotonic() - t0
    assert 0.9 <= elapsed < 3
    assert events and all(e["type"] == "BOOKMARK" for e in events)
    bm = events[-1]["raw_object"]
    assert bm["kind"] == "HTTPRoute" and set(bm["metadata"]) == {"resourceVersion"}
    assert int(bm["metadata"]["resourceVersion"]) > int(rv)  # progress notify past the unrelated write
    assert w.resource_version == bm["metadata"]["resourceVersion"]


def test_send_initial_events_ends_with_annotated_bookmark(server: FakeApiServer) -> None:
    server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    import json

    r = requests.get(f"{server.url}/api/v1/namespaces/default/configmaps", stream=True, timeout=5, params={
        "watch": "true", "sendInitialEvents": "true", "allowWatchBookmarks": "true",
        "resourceVersionMatch": "NotOlderThan", "timeoutSeconds": "1"})
    evs = [json.loads(x) for x in r.iter_lines() if x]
    assert evs[0]["type"] == "ADDED"
    assert evs[1]["type"] == "BOOKMARK" and evs[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


@pytest.mark.parametrize("abrupt", [False, True])
def test_close_watches_cuts_streams(server: FakeApiServer, core: client.CoreV1Api, abrupt: bool) -> None:
    seen: list[str] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            for ev in watch.Watch().stream(core.list_namespaced_config_map, "default", timeout_seconds=30):
                seen.append(ev["type"])
        except Exception as e:  # an abrupt cut surfaces as a protocol error in urllib3
            errors.append(e)

    t = threading.Thread(target=run)
    t.start()
    deadline = time.monotonic() + 5
    while server.watch_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    while not seen and time.monotonic() < deadline:
        time.sleep(0.01)
    t0 = time.monotonic()
    assert server.close_watches(abrupt=abrupt) == 1
    t.join(timeout=5)
    assert not t.is_alive() and time.monotonic() - t0 < 3
    assert seen == ["ADDED"]
    assert bool(errors) == abrupt
    assert server.watch_count() == 0


def test_watch_single_object_and_namespaced_scope(server: FakeApiServer, core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "other"}})
    server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "other"}})
    server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}})
    events: list[tuple[str, str, str]] = []
    _collect(watch.Watch().stream(core.list_namespaced_config_map, "default", field_selector="metadata.name=a",
                                  timeout_seconds=1), events)
    assert [e[:2] for e in events] == [("ADDED", "a")]
    events = []
    _collect(watch.Watch().stream(core.list_config_map_for_all_namespaces, timeout_seconds=1), events)
    assert sorted(e[1] for e in events) == ["a", "a", "b"]


def test_expired_watch_mid_stream(server: FakeApiServer) -> None:
    import json

    r = requests.get(f"{server.url}/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={server.resource_version}",
                     stream=True, timeout=5)
    deadline = time.monotonic() + 5
    while server.watch_count("configmaps") == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.close_watches(expire=True) == 1
    evs = [json.loads(x) for x in r.iter_lines() if x]
    assert [e["type"] for e in evs] == ["ERROR"] and evs[0]["object"]["code"] == 410


def test_answers_and_watch_events_are_the_object_in_each_watchers_version(server: FakeApiServer) -> None:
    """A write's answer and its watch events share one encoding per stored object and version:
    each watcher still gets the object in its own version (v1 / v1beta1) and form (core
    Event / events.k8s.io Event), as compact JSON lines."""
    import json

    rv = server.resource_version
    base = f"{server.url}/apis/{GW}"
    urls = {"v1": f"{base}/v1/httproutes", "v1beta1": f"{base}/v1beta1/httproutes",
            "core": f"{server.url}/api/v1/events", "events": f"{server.url}/apis/events.k8s.io/v1/events"}
    streams = {k: requests.get(u, params={"watch": "1", "resourceVersion": str(rv), "timeoutSeconds": "2"},
                               stream=True, timeout=5) for k, u in urls.items()}
    route: dict[str, Any] = {"apiVersion": f"{GW}/v1", "kind": "HTTPRoute", "metadata": {"name": "r"},
             "spec": {"parentRefs": [{"name": "gw"}]}}
    created = requests.post(f"{base}/v1/namespaces/default/httproutes", json=route, timeout=5)
    status: dict[str, Any] = {"parents": [{"parentRef": {"name": "gw"}, "controllerName": "x.io/c",
                                           "conditions": [condition("Accepted")]}]}
    patched = requests.patch(f"{base}/v1beta1/namespaces/default/httproutes/r/status", json={"status": status},
                             headers={"Content-Type": "application/merge-patch+json"}, timeout=5)
    event: dict[str, Any] = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
             "reason": "Started", "message": "hello", "type": "Normal"}
    posted = requests.post(f"{server.url}/api/v1/namespaces/default/events", json=event, timeout=5)
    assert (created.status_code, patched.status_code, posted.status_code) == (201, 200, 201)
    lines = {k: [x for x in r.iter_lines() if x] for k, r in streams.items()}

    def compact(o: Any) -> bytes:
        return json.dumps(o, separators=(",", ":")).encode()

    assert created.content == compact(created.json()) and patched.content == compact(patched.json())
    v1 = [json.loads(x) for x in lines["v1"]]
    beta = [json.loads(x) for x in lines["v1beta1"]]
    assert [e["type"] for e in v1] == [e["type"] for e in beta] == ["ADDED", "MODIFIED"]
    assert lines["v1"] == [compact(e) for e in v1] and lines["v1beta1"] == [compact(e) for e in beta]
    assert v1[0]["object"] == created.json()
    assert beta[1]["object"] == patched.json() and patched.json()["apiVersion"] == f"{GW}/v1beta1"
    assert v1[1]["object"] == dict(patched.json(), apiVersion=f"{GW}/v1")
    assert beta[0]["object"] == dict(created.json(), apiVersion=f"{GW}/v1beta1")
    core_ev, = (json.loads(x)["object"] for x in lines["core"])
    new_ev, = (json.loads(x)["object"] for x in lines["events"])
    assert core_ev == posted.json() and core_ev["involvedObject"]["name"] == "p" and "regarding" not in core_ev
    assert new_ev["regarding"] == core_ev["involvedObject"] and new_ev["note"] == "hello" and "involvedObject" not in new_ev
    assert new_ev["apiVersion"] == "events.k8s.io/v1"


def test_each_watch_event_is_one_chunk_however_fast_they_come(server: FakeApiServer) -> None:
    """Events queued behind each other go out together, still one JSON line per chunk, in order."""
    import json
    import socket

    rv = server.resource_version
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.sendall(f"GET /api/v1/namespaces/default/configmaps?watch=1&resourceVersion={rv}&timeoutSeconds=2 "
                 f"HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    deadline = time.monotonic() + 5
    while server.watch_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    for i in range(300):
        server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i:03d}"}})
    raw = b""
    while True:
        data = sock.recv(65536)
        if not data:
            break
        raw += data
    sock.close()
    head, body = raw.split(b"\r\n\r\n", 1)
    assert b"Transfer-Encoding: chunked" in head
    events = []
    while True:
        size_line, body = body.split(b"\r\n", 1)
        size = int(size_line, 16)
        if size == 0:
            assert body == b"\r\n"
            break
        chunk, body = body[:size], body[size:]
        assert body.startswith(b"\r\n") and chunk.endswith(b"\n") and chunk.count(b"\n") == 1
        body = body[2:]
        events.append(json.loads(chunk))
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", f"cm-{i:03d}") for i in range(300)]
