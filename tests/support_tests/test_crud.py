"""CRUD, metadata bookkeeping, status subresources and Status errors, through the official client."""

from __future__ import annotations

import re

import pytest
import requests
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.support.apiserver import FakeApiServer
from tests.support.gatewayapi_crds import serving, v1_2_1_standard
from tests.support_tests.conftest import condition, status_of

GW = "gateway.networking.k8s.io"


def _gateway(name: str = "web", ns: str = "default") -> dict:
    return {"apiVersion": f"{GW}/v1", "kind": "Gateway", "metadata": {"name": name, "namespace": ns},
            "spec": {"gatewayClassName": "titanium", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}}


def test_create_get_conflicts_and_delete(core: client.CoreV1Api) -> None:
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": "a"}, "data": {"k": "v"}})
    assert cm.metadata.uid and int(cm.metadata.resource_version) > 1
    assert cm.metadata.managed_fields and cm.metadata.managed_fields[0].manager
    assert cm.metadata.generation is None  # ConfigMaps have no generation
    got = core.read_namespaced_config_map("a", "default")
    assert got.data == {"k": "v"} and got.metadata.resource_version == cm.metadata.resource_version

    with pytest.raises(ApiException) as e:
        core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    st = status_of(e.value)
    assert e.value.status == 409 and st["reason"] == "AlreadyExists" and st["details"]["name"] == "a"

    with pytest.raises(ApiException) as e:
        core.create_namespaced_config_map("default", {"metadata": {}, "data": {}})
    st = status_of(e.value)
    assert e.value.status == 422 and st["reason"] == "Invalid"
    assert st["details"]["causes"][0]["field"] == "metadata.name"

    stale = core.read_namespaced_config_map("a", "default")
    core.replace_namespaced_config_map("a", "default", {"metadata": {"name": "a", "resourceVersion":
                                                                      stale.metadata.resource_version},
                                                        "data": {"k": "v2"}})
    with pytest.raises(ApiException) as e:
        core.replace_namespaced_config_map("a", "default", {"metadata": {"name": "a", "resourceVersion":
                                                                          stale.metadata.resource_version},
                                                            "data": {"k": "v3"}})
    assert e.value.status == 409 and status_of(e.value)["reason"] == "Conflict"

    st = core.delete_namespaced_config_map("a", "default")
    st = st if isinstance(st, dict) else st.to_dict()
    assert st["kind"] == "Status" and st["status"] == "Success" and st["details"]["name"] == "a"
    with pytest.raises(ApiException) as e:
        core.read_namespaced_config_map("a", "default")
    assert e.value.status == 404 and status_of(e.value)["message"] == 'configmaps "a" not found'


def test_generate_name_and_missing_namespace(core: client.CoreV1Api) -> None:
    cm = core.create_namespaced_config_map("default", {"metadata": {"generateName": "x-"}})
    assert re.fullmatch(r"x-[a-z0-9]{5}", cm.metadata.name)
    with pytest.raises(ApiException) as e:
        core.create_namespaced_config_map("nope", {"metadata": {"name": "a"}})
    assert e.value.status == 404 and status_of(e.value)["details"]["kind"] == "namespaces"


def test_namespace_gets_name_label_and_cascades(core: client.CoreV1Api) -> None:
    ns = core.create_namespace({"metadata": {"name": "apps"}})
    assert ns.metadata.labels["kubernetes.io/metadata.name"] == "apps" and ns.status.phase == "Active"
    core.create_namespaced_config_map("apps", {"metadata": {"name": "c"}})
    core.delete_namespace("apps")
    assert core.list_namespaced_config_map("apps").items == []


def test_resource_version_is_global_and_noop_writes_keep_it(core: client.CoreV1Api,
                                                            custom: client.CustomObjectsApi) -> None:
    a = core.create_namespaced_config_map("default", {"metadata": {"name": "a"}, "data": {"k": "v"}})
    g = custom.create_namespaced_custom_object(GW, "v1", "default", "gateways", _gateway())
    assert int(g["metadata"]["resourceVersion"]) == int(a.metadata.resource_version) + 1
    same = core.patch_namespaced_config_map("a", "default", {"data": {"k": "v"}})
    assert same.metadata.resource_version == a.metadata.resource_version
    changed = core.patch_namespaced_config_map("a", "default", {"data": {"k": "w"}})
    assert int(changed.metadata.resource_version) > int(g["metadata"]["resourceVersion"])


def test_generation_and_timestamps(custom: client.CustomObjectsApi) -> None:
    g = custom.create_namespaced_custom_object(GW, "v1", "default", "gateways", _gateway())
    assert g["metadata"]["generation"] == 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", g["metadata"]["creationTimestamp"])
    g = custom.patch_namespaced_custom_object(GW, "v1", "default", "gateways", "web",
                                              {"metadata": {"labels": {"a": "b"}}})
    assert g["metadata"]["generation"] == 1
    g = custom.patch_namespaced_custom_object(GW, "v1", "default", "gateways", "web",
                                              {"spec": {"gatewayClassName": "other"}})
    assert g["metadata"]["generation"] == 2
    g = custom.patch_namespaced_custom_object_status(GW, "v1", "default", "gateways", "web",
                                                     {"status": {"conditions": [condition("Accepted")]}})
    assert g["metadata"]["generation"] == 2
    mf = g["metadata"]["managedFields"]
    assert any(e.get("subresource") == "status" for e in mf)


def test_status_subresource_isolation(custom: client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(GW, "v1", "default", "gateways",
                                           dict(_gateway(), status={"conditions": [{"type": "Bogus"}]}))
    g = custom.get_namespaced_custom_object(GW, "v1", "default", "gateways", "web")
    assert "status" not in g  # status is dropped on create
    g["status"] = {"conditions": [condition("Accepted")]}
    g["spec"]["gatewayClassName"] = "changed"
    g = custom.replace_namespaced_custom_object(GW, "v1", "default", "gateways", "web", g)
    assert g["spec"]["gatewayClassName"] == "changed" and "status" not in g  # PUT main ignores status
    g["status"] = {"conditions": [condition("Accepted")]}
    g["spec"]["gatewayClassName"] = "ignored"
    g = custom.replace_namespaced_custom_object_status(GW, "v1", "default", "gateways", "web", g)
    assert g["spec"]["gatewayClassName"] == "changed" and g["status"]["conditions"][0]["type"] == "Accepted"
    g = custom.patch_namespaced_custom_object_status(GW, "v1", "default", "gateways", "web",
                                                     {"spec": {"gatewayClassName": "nope"},
                                                      "status": {"conditions": [condition("Programmed")]}})
    assert g["spec"]["gatewayClassName"] == "changed" and g["status"]["conditions"][0]["type"] == "Programmed"


def test_no_status_subresource_for_configmaps_and_leases(server: FakeApiServer, core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    r = requests.get(f"{server.url}/api/v1/namespaces/default/configmaps/a/status", timeout=5)
    assert r.status_code == 404 and r.json()["kind"] == "Status"
    r = requests.get(f"{server.url}/apis/coordination.k8s.io/v1/namespaces/default/leases/a/status", timeout=5)
    assert r.status_code == 404


def test_versions_share_storage_and_echo_api_version(custom: client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(GW, "v1beta1", "default", "httproutes", {
        "apiVersion": f"{GW}/v1beta1", "kind": "HTTPRoute", "metadata": {"name": "r"}, "spec": {}})
    v1 = custom.get_namespaced_custom_object(GW, "v1", "default", "httproutes", "r")
    assert v1["apiVersion"] == f"{GW}/v1" and v1["kind"] == "HTTPRoute"
    lst = custom.list_namespaced_custom_object(GW, "v1", "default", "httproutes")
    assert lst["kind"] == "HTTPRouteList" and lst["items"][0]["apiVersion"] == f"{GW}/v1"
    assert custom.list_namespaced_custom_object(GW, "v1", "default", "referencegrants")["items"] == []
    assert custom.list_namespaced_custom_object(GW, "v1beta1", "default", "referencegrants")["items"] == []


def test_a_gateway_api_version_is_served_only_while_its_crd_serves_it() -> None:
    """The served CustomResourceDefinitions decide, like a real server (v1.2.1: no ReferenceGrant v1)."""
    with FakeApiServer(crds=v1_2_1_standard()) as server:
        custom = client.CustomObjectsApi(server.api_client())
        with pytest.raises(ApiException) as e:
            custom.list_namespaced_custom_object(GW, "v1", "default", "referencegrants")
        assert e.value.status == 404
        with pytest.raises(ApiException) as e:
            custom.list_namespaced_custom_object(GW, "v1", "default", "listenersets")
        assert e.value.status == 404
        assert custom.list_namespaced_custom_object(GW, "v1beta1", "default", "referencegrants")["items"] == []
        versions = requests.get(f"{server.url}/apis/{GW}", timeout=5).json()["versions"]
        assert [v["version"] for v in versions] == ["v1", "v1beta1"]
        # a version that stops being served: its open watches end, its requests answer 404
        stream = requests.get(f"{server.url}/apis/{GW}/v1beta1/referencegrants?watch=true", stream=True, timeout=5)
        assert server.watch_count("referencegrants") == 1
        crd = server.get_object("CustomResourceDefinition", None, f"referencegrants.{GW}")
        server.put_object(serving(crd, v1beta1=False))
        assert stream.raw.read() == b""  # ended
        assert server.watch_count("referencegrants") == 0
        with pytest.raises(ApiException) as e:
            custom.list_namespaced_custom_object(GW, "v1beta1", "default", "referencegrants")
        assert e.value.status == 404


def test_builtin_list_items_have_no_kind(server: FakeApiServer, core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    raw = requests.get(f"{server.url}/api/v1/namespaces/default/configmaps", timeout=5).json()
    assert raw["kind"] == "ConfigMapList" and raw["apiVersion"] == "v1"
    assert "kind" not in raw["items"][0] and "apiVersion" not in raw["items"][0]
    one = requests.get(f"{server.url}/api/v1/namespaces/default/configmaps/a", timeout=5).json()
    assert one["kind"] == "ConfigMap" and one["apiVersion"] == "v1"


def test_secrets_string_data_type_and_tls_validation(core: client.CoreV1Api) -> None:
    s = core.create_namespaced_secret("default", {"metadata": {"name": "s"}, "stringData": {"a": "hi"}})
    assert s.type == "Opaque" and s.data == {"a": "aGk="}
    with pytest.raises(ApiException) as e:
        core.create_namespaced_secret("default", {"metadata": {"name": "t"}, "type": "kubernetes.io/tls",
                                                  "data": {"tls.crt": "eA=="}})
    assert e.value.status == 422
    with pytest.raises(ApiException) as e:
        core.patch_namespaced_secret("s", "default", {"type": "kubernetes.io/dockercfg"})
    assert e.value.status == 422


def test_configmap_size_limit(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as e:
        core.create_namespaced_config_map("default", {"metadata": {"name": "big"},
                                                      "data": {"twp.yaml": "x" * (1024 * 1024 + 1)}})
    assert e.value.status == 422 and "Too long" in status_of(e.value)["message"]


def test_finalizers_delay_deletion(custom: client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(GW, "v1", "default", "gateways",
                                           dict(_gateway(), metadata={"name": "web", "finalizers": ["x/y"]}))
    custom.delete_namespaced_custom_object(GW, "v1", "default", "gateways", "web")
    g = custom.get_namespaced_custom_object(GW, "v1", "default", "gateways", "web")
    assert g["metadata"]["deletionTimestamp"]
    custom.patch_namespaced_custom_object(GW, "v1", "default", "gateways", "web", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as e:
        custom.get_namespaced_custom_object(GW, "v1", "default", "gateways", "web")
    assert e.value.status == 404


def test_direct_helpers_emit_like_writes(server: FakeApiServer) -> None:
    o = server.put_object(dict(_gateway(), status={"conditions": [condition("Accepted")]}))
    assert o["status"]["conditions"][0]["type"] == "Accepted" and o["metadata"]["generation"] == 1
    assert server.get_object("Gateway", "default", "web")["metadata"]["uid"] == o["metadata"]["uid"]
    o2 = server.update_object("gateways", "default", "web", lambda g: g["spec"].update(gatewayClassName="x"))
    assert o2["metadata"]["generation"] == 2
    assert [g["metadata"]["name"] for g in server.list_objects("Gateway")] == ["web"]
    assert server.delete_object("Gateway", "default", "web") is True
    assert server.get_object("Gateway", "default", "web") is None


def test_discovery(api: client.ApiClient) -> None:
    assert client.VersionApi(api).get_code().major == "1"
    assert client.CoreApi(api).get_api_versions().versions == ["v1"]
    groups = {g.name for g in client.ApisApi(api).get_api_versions().groups}
    assert {GW, "coordination.k8s.io", "discovery.k8s.io", "events.k8s.io", "apps", "networking.k8s.io"} <= groups
    res = client.CoreV1Api(api).get_api_resources()
    assert {"configmaps", "pods/status", "secrets"} <= {r.name for r in res.resources}


def test_unknown_fields_are_dropped_with_a_warning_or_rejected_when_strict(server: FakeApiServer) -> None:
    url = f"{server.url}/api/v1/namespaces/default/configmaps"
    r = requests.post(url, json={"metadata": {"name": "a", "bogus": 1}, "datas": {"k": "v"}}, timeout=5)
    assert r.status_code == 201 and "datas" not in r.json() and "bogus" not in r.json()["metadata"]
    assert 'unknown field \\"datas\\"' in r.headers["Warning"]
    r = requests.post(url + "?fieldValidation=Strict", json={"metadata": {"name": "b"}, "datas": {}}, timeout=5)
    assert r.status_code == 400 and "strict decoding error" in r.json()["message"]
    r = requests.post(f"{server.url}/apis/{GW}/v1/namespaces/default/gateways",
                      json=dict(_gateway("g"), extra=1, spec=dict(_gateway()["spec"], bogus=True)), timeout=5)
    assert r.status_code == 201 and "extra" not in r.json() and r.json()["kind"] == "Gateway"
    assert "bogus" not in r.json()["spec"] and 'unknown field \\"spec.bogus\\"' in r.headers["Warning"]


def test_create_with_resource_version_is_refused(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as e:
        core.create_namespaced_config_map("default", {"metadata": {"name": "a", "resourceVersion": "5"}})
    assert e.value.status == 500


def test_reactors_and_deployment_controller(server: FakeApiServer, api: client.ApiClient) -> None:
    seen: list[tuple[str, str]] = []
    server.react("ConfigMap", lambda t, o: seen.append((t, o["metadata"]["name"])))
    server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    server.delete_object("ConfigMap", "default", "x")
    assert seen == [("ADDED", "x"), ("DELETED", "x")]
    server.emulate_deployment_controller()
    apps = client.AppsV1Api(api)
    apps.create_namespaced_deployment("default", {"metadata": {"name": "d"}, "spec": {
        "replicas": 2, "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    d = apps.patch_namespaced_deployment("d", "default", {"spec": {"template": {"metadata": {"annotations": {
        "gateway.titaniumproxy.com/listeners": "8080/http"}}}}})
    assert d.metadata.generation == 2
    d = apps.read_namespaced_deployment("d", "default")
    assert d.status.observed_generation == 2 and d.status.updated_replicas == 2


def test_strict_unknown_field_in_a_patch_is_422(server: FakeApiServer) -> None:
    server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    r = requests.patch(f"{server.url}/api/v1/namespaces/default/configmaps/a?fieldValidation=Strict",
                       json={"datas": {}}, headers={"Content-Type": "application/merge-patch+json"}, timeout=5)
    assert r.status_code == 422 and r.json()["reason"] == "Invalid"


def test_immutable_fields_of_builtins(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "image": "x"}]}})
    core.patch_namespaced_pod("p", "default", {"spec": {"containers": [{"name": "a", "image": "y"}]}})
    with pytest.raises(ApiException) as e:
        core.patch_namespaced_pod("p", "default", {"spec": {"hostname": "h"}})
    assert e.value.status == 422
    svc = core.create_namespaced_service("default", {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}})
    assert svc.spec.cluster_ip and svc.spec.ports[0].target_port == 80
    with pytest.raises(ApiException) as e:
        core.patch_namespaced_service("s", "default", {"spec": {"clusterIP": "10.0.0.1"}})
    assert e.value.status == 422


def test_request_body_limit(server: FakeApiServer) -> None:
    r = requests.post(f"{server.url}/api/v1/namespaces/default/configmaps",
                      json={"metadata": {"name": "huge"}, "data": {"k": "x" * (3 * 1024 * 1024)}}, timeout=10)
    assert r.status_code == 413 and r.json()["reason"] == "RequestEntityTooLarge"


def test_namespace_deletion_goes_terminating_then_empties(server: FakeApiServer, core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "gone"}})
    core.create_namespaced_config_map("gone", {"metadata": {"name": "c"}})
    rv = core.list_namespace().metadata.resource_version
    core.delete_namespace("gone")
    r = requests.get(f"{server.url}/api/v1/configmaps", params={"watch": "1", "resourceVersion": rv,
                                                                 "timeoutSeconds": "1"}, timeout=5)
    assert [ln.split('"')[3] for ln in r.text.splitlines() if ln] == ["DELETED"]
    r = requests.get(f"{server.url}/api/v1/namespaces", params={"watch": "1", "resourceVersion": rv,
                                                                 "timeoutSeconds": "1", "fieldSelector": "metadata.name=gone"},
                     timeout=5)
    import json

    evs = [json.loads(ln) for ln in r.text.splitlines() if ln]
    assert [e["type"] for e in evs] == ["MODIFIED", "DELETED"]
    assert evs[0]["object"]["status"]["phase"] == "Terminating"


def test_dry_run_changes_nothing(server: FakeApiServer, core: client.CoreV1Api) -> None:
    rv = server.resource_version
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": "dry"}}, dry_run="All")
    assert cm.metadata.name == "dry" and server.get_object("ConfigMap", "default", "dry") is None
    server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "real"}, "data": {"k": "1"}})
    core.patch_namespaced_config_map("real", "default", {"data": {"k": "2"}}, dry_run="All")
    core.delete_namespaced_config_map("real", "default", dry_run="All")
    assert server.get_object("ConfigMap", "default", "real")["data"] == {"k": "1"}
    assert server.resource_version == rv + 1
