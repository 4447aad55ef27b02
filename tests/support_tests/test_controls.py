"""Test controls of the fake: RBAC-like denials, fault injection, latency, request log, scale."""

from __future__ import annotations

import time

import pytest
import requests
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.support.apiserver import FakeApiServer
from tests.support_tests.conftest import status_of

GW = "gateway.networking.k8s.io"


def test_forbid_create_but_allow_update_by_name(server: FakeApiServer, core: client.CoreV1Api) -> None:
    server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "titanium"}})
    server.forbid("create", "configmaps")
    server.forbid(["update", "patch"], "configmaps", except_names=["titanium"])
    with pytest.raises(ApiException) as e:
        core.create_namespaced_config_map("default", {"metadata": {"name": "titanium-part-9"}})
    st = status_of(e.value)
    assert e.value.status == 403 and st["reason"] == "Forbidden" and "cannot create resource" in st["message"]
    core.patch_namespaced_config_map("titanium", "default", {"data": {"twp.yaml": "x"}})
    with pytest.raises(ApiException) as e:
        core.patch_namespaced_config_map("other", "default", {"data": {}})
    assert e.value.status == 403
    assert server.get_object("ConfigMap", "default", "titanium-part-9") is None
    server.allow_all()
    core.create_namespaced_config_map("default", {"metadata": {"name": "now-ok"}})


def test_forbid_status_subresource_only(server: FakeApiServer, custom: client.CustomObjectsApi) -> None:
    server.put_object({"apiVersion": f"{GW}/v1", "kind": "Gateway", "metadata": {"name": "g"}, "spec": {
        "gatewayClassName": "t", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}})
    server.forbid("patch", "gateways/status")
    custom.patch_namespaced_custom_object(GW, "v1", "default", "gateways", "g", {"metadata": {"labels": {"a": "b"}}})
    with pytest.raises(ApiException) as e:
        custom.patch_namespaced_custom_object_status(GW, "v1", "default", "gateways", "g", {"status": {}})
    assert e.value.status == 403


def test_inject_errors_retry_after_and_times(server: FakeApiServer, core: client.CoreV1Api) -> None:
    inj = server.inject("create", "configmaps", status=429, retry_after=1, times=2)
    for _ in range(2):
        with pytest.raises(ApiException) as e:
            core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
        assert e.value.status == 429 and e.value.headers["Retry-After"] == "1"
        assert status_of(e.value)["details"]["retryAfterSeconds"] == 1
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    assert inj.hits == 2 and not inj.active
    server.inject("*", "*", status=500, times=None)
    with pytest.raises(ApiException) as e:
        core.read_namespace("default")
    assert e.value.status == 500 and status_of(e.value)["reason"] == "InternalError"
    server.clear_injections()
    core.read_namespace("default")


def test_client_transparently_retries_get_on_429_with_retry_after(server: FakeApiServer,
                                                                   core: client.CoreV1Api) -> None:
    """urllib3 (under the official client) retries idempotent requests answered 429 + Retry-After."""
    server.inject("list", "configmaps", status=429, retry_after=0, times=1)
    core.list_namespaced_config_map("default")
    assert [r.status for r in server.requests("list", "configmaps")] == [429, 200]


def test_inject_latency_and_drop(server: FakeApiServer) -> None:
    server.inject("get", "namespaces", status=None, latency=0.3)
    t0 = time.monotonic()
    assert requests.get(f"{server.url}/api/v1/namespaces/default", timeout=5).status_code == 200
    assert time.monotonic() - t0 >= 0.3
    server.inject("get", "namespaces", drop=True)
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{server.url}/api/v1/namespaces/default", timeout=5)
    assert requests.get(f"{server.url}/api/v1/namespaces/default", timeout=5).status_code == 200


def test_inject_on_watch(server: FakeApiServer, core: client.CoreV1Api) -> None:
    server.inject("watch", "configmaps", status=503)
    r = requests.get(f"{server.url}/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1", timeout=5)
    assert r.status_code == 503 and r.json()["reason"] == "ServiceUnavailable"


def test_request_log(server: FakeApiServer, core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "v"}})
    core.list_namespaced_config_map("default", label_selector="x=y")
    recs = server.requests(resource="configmaps")
    assert [(r.method, r.verb, r.status) for r in recs] == [("POST", "create", 201), ("PATCH", "patch", 200),
                                                          ("GET", "list", 200)]
    assert recs[1].content_type.startswith("application/") and recs[1].body == {"data": {"k": "v"}}
    assert recs[2].query["labelSelector"] == "x=y" and recs[2].path == "/api/v1/namespaces/default/configmaps"
    assert "OpenAPI-Generator" in recs[0].user_agent and recs[0].name == "" and recs[1].name == "a"
    server.clear_log()
    assert server.requests() == []


def test_bearer_token_required_when_configured() -> None:
    with FakeApiServer(token="s3cret") as server:
        assert requests.get(f"{server.url}/api/v1/namespaces", timeout=5).status_code == 401
        core = client.CoreV1Api(server.api_client())
        assert any(n.metadata.name == "default" for n in core.list_namespace().items)


def test_ten_thousand_routes_list_quickly(server: FakeApiServer, custom: client.CustomObjectsApi) -> None:
    for i in range(10_000):
        server.put_object({"apiVersion": f"{GW}/v1", "kind": "HTTPRoute",
                           "metadata": {"name": f"r-{i:05d}", "namespace": "default", "labels": {"shard": str(i % 10)}},
                           "spec": {"hostnames": [f"h{i}.example.com"], "rules": [{"backendRefs": [{"name": "s", "port": 80}]}]}})
    t0 = time.monotonic()
    lst = custom.list_cluster_custom_object(GW, "v1", "httproutes")
    assert len(lst["items"]) == 10_000
    sel = custom.list_namespaced_custom_object(GW, "v1", "default", "httproutes", label_selector="shard=3", limit=500)
    assert len(sel["items"]) == 500 and sel["metadata"]["continue"]
    assert time.monotonic() - t0 < 5


def test_stop_cuts_pooled_connections_and_restart_keeps_state(server: FakeApiServer,
                                                              core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    port = server.port
    server.stop()
    with pytest.raises(Exception):  # noqa: B017 - urllib3 raises MaxRetryError / ProtocolError
        core.list_namespaced_config_map("default", _request_timeout=2)
    server.start()
    assert server.port == port
    server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}})
    assert [c.metadata.name for c in core.list_namespaced_config_map("default").items] == ["a", "b"]
    r = requests.get(f"{server.url}/api/v1/namespaces/default/configmaps",
                     params={"watch": "1", "resourceVersion": rv, "timeoutSeconds": "1"}, timeout=5)
    assert [ln for ln in r.text.splitlines() if ln][0].startswith('{"type":"ADDED"')
    server.restart()
    assert server.get_object("ConfigMap", "default", "b") is not None


def test_kubeconfig_loads_with_the_official_loader(tmp_path: object) -> None:
    from pathlib import Path

    from kubernetes import config

    with FakeApiServer(token="t0k") as server:
        path = server.write_kubeconfig(Path(str(tmp_path)) / "kubeconfig")
        cfg = client.Configuration()
        config.load_kube_config(config_file=path, client_configuration=cfg)
        assert cfg.host == server.url
        names = [n.metadata.name for n in client.CoreV1Api(client.ApiClient(cfg)).list_namespace().items]
        assert "default" in names


def test_large_answers_are_gzipped_for_clients_that_accept_it(server: FakeApiServer, core: client.CoreV1Api) -> None:
    for i in range(300):
        server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i:03d}"},
                           "data": {"k": "v" * 500}})
    r = requests.get(f"{server.url}/api/v1/namespaces/default/configmaps", timeout=5)  # requests sends gzip
    assert r.headers.get("Content-Encoding") == "gzip" and len(r.json()["items"]) == 300
    assert len(core.list_namespaced_config_map("default").items) == 300
