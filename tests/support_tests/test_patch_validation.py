"""Patch types, 415 on strategic merge for CRDs, MicroTime strictness, events.k8s.io rules."""

from __future__ import annotations

import datetime as dt

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.support.apiserver import FakeApiServer
from tests.support_tests.conftest import status_of

GW = "gateway.networking.k8s.io"


def _route(custom: client.CustomObjectsApi) -> dict:
    return custom.create_namespaced_custom_object(GW, "v1", "default", "httproutes", {
        "apiVersion": f"{GW}/v1", "kind": "HTTPRoute", "metadata": {"name": "r", "annotations": {"a": "1"}},
        "spec": {"hostnames": ["a.example.com", "b.example.com"]}})


def test_merge_and_json_patch_on_crd(custom: client.CustomObjectsApi) -> None:
    _route(custom)
    r = custom.patch_namespaced_custom_object(GW, "v1", "default", "httproutes", "r",
                                              {"metadata": {"annotations": {"a": None, "b": "2"}}})
    assert r["metadata"]["annotations"] == {"b": "2"}
    r = custom.patch_namespaced_custom_object(GW, "v1", "default", "httproutes", "r", [
        {"op": "test", "path": "/spec/hostnames/0", "value": "a.example.com"},
        {"op": "remove", "path": "/spec/hostnames/0"},
        {"op": "add", "path": "/metadata/annotations/x~1y", "value": "z"}],
        _content_type="application/json-patch+json")
    assert r["spec"]["hostnames"] == ["b.example.com"] and r["metadata"]["annotations"]["x/y"] == "z"
    with pytest.raises(ApiException) as e:
        custom.patch_namespaced_custom_object(GW, "v1", "default", "httproutes", "r", [
            {"op": "test", "path": "/spec/hostnames/0", "value": "nope"}], _content_type="application/json-patch+json")
    assert e.value.status == 422


def test_strategic_merge_is_415_on_crds_and_merges_by_key_on_builtins(server: FakeApiServer, api: client.ApiClient,
                                                                      custom: client.CustomObjectsApi) -> None:
    _route(custom)
    with pytest.raises(ApiException) as e:
        custom.patch_namespaced_custom_object(GW, "v1", "default", "httproutes", "r", {"spec": {}},
                                              _content_type="application/strategic-merge-patch+json")
    st = status_of(e.value)
    assert e.value.status == 415 and st["reason"] == "UnsupportedMediaType"

    core = client.CoreV1Api(api)
    core.create_namespaced_pod("default", {"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}})
    p = core.patch_namespaced_pod("p", "default", {"metadata": {"annotations": {"poke": "h1"}},
                                                    "spec": {"containers": [{"name": "b", "image": "z"}]}},
                                  _content_type="application/strategic-merge-patch+json")
    assert [(c.name, c.image) for c in p.spec.containers] == [("a", "x"), ("b", "z")]
    assert p.metadata.annotations == {"poke": "h1"}
    rec = server.requests("patch", "pods")[-1]
    assert rec.content_type.startswith("application/strategic-merge-patch+json")


def test_patch_with_stale_resource_version_conflicts(core: client.CoreV1Api) -> None:
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": "a"}, "data": {"k": "1"}})
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "2"}})
    with pytest.raises(ApiException) as e:
        core.patch_namespaced_config_map("a", "default", {"metadata": {"resourceVersion": cm.metadata.resource_version},
                                                          "data": {"k": "3"}})
    assert e.value.status == 409 and status_of(e.value)["reason"] == "Conflict"
    with pytest.raises(ApiException) as e:
        core.patch_namespaced_config_map("missing", "default", {"data": {"k": "3"}})
    assert e.value.status == 404


def test_lease_microtime_must_have_six_fraction_digits(api: client.ApiClient) -> None:
    coord = client.CoordinationV1Api(api)
    body = {"metadata": {"name": "l"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
                                                 "renewTime": "2026-01-01T00:00:00Z"}}
    with pytest.raises(ApiException) as e:
        coord.create_namespaced_lease("default", body)
    assert e.value.status == 400 and "cannot be handled as a Lease" in status_of(e.value)["message"]
    # kubernetes 37's typed models re-serialize datetimes with isoformat(): microsecond 0 loses the
    # fraction, which a real server rejects, so even this string is refused...
    body["spec"]["renewTime"] = "2026-01-01T00:00:00.000000Z"
    with pytest.raises(ApiException) as e:
        coord.create_namespaced_lease("default", body)
    assert e.value.status == 400
    # ...while a non-zero microsecond survives the round trip
    body["spec"]["renewTime"] = "2026-01-01T00:00:00.000001Z"
    lease = coord.create_namespaced_lease("default", body)
    assert lease.spec.renew_time == dt.datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=dt.timezone.utc)
    with pytest.raises(ApiException) as e:  # a patch decodes the result: 422 Invalid
        coord.patch_namespaced_lease("l", "default", {"spec": {"acquireTime": "2026-01-01T00:00:00.123Z"}})
    assert e.value.status == 422 and status_of(e.value)["reason"] == "Invalid"
    # the python client's datetime serialization drops the fraction when microsecond == 0
    with pytest.raises(ApiException):
        coord.patch_namespaced_lease("l", "default", {"spec": {"renewTime": dt.datetime(2026, 1, 2, tzinfo=dt.timezone.utc)}})
    ok = coord.patch_namespaced_lease("l", "default", {"spec": {"renewTime": "2026-01-02T00:00:00.000001Z"}})
    assert ok.spec.renew_time.microsecond == 1


def test_events_v1_validation_and_shared_storage(api: client.ApiClient, core: client.CoreV1Api) -> None:
    ev = client.EventsV1Api(api)
    body = {"metadata": {"name": "e1"}, "eventTime": "2026-01-01T00:00:00Z", "reportingController": "c",
            "reportingInstance": "i", "action": "Reconcile", "reason": "R", "type": "Normal", "note": "n",
            "regarding": {"kind": "Gateway", "name": "web", "namespace": "default"}}
    with pytest.raises(ApiException) as e:
        ev.create_namespaced_event("default", body)
    assert e.value.status == 400
    body["eventTime"] = "2026-01-01T00:00:00.000001Z"
    body.pop("action")
    with pytest.raises(ApiException) as e:
        ev.create_namespaced_event("default", body)
    assert e.value.status == 422 and status_of(e.value)["details"]["causes"][0]["field"] == "action"
    body["action"] = "Reconcile"
    ev.create_namespaced_event("default", body)
    legacy = core.read_namespaced_event("e1", "default")
    assert legacy.involved_object.name == "web" and legacy.message == "n" and legacy.reporting_component == "c"
    ev.patch_namespaced_event("e1", "default", {"series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z"}})
    with pytest.raises(ApiException) as e:
        ev.patch_namespaced_event("e1", "default", {"note": "changed"})
    assert e.value.status == 422


def test_apply_patch_needs_field_manager(server: FakeApiServer, core: client.CoreV1Api) -> None:
    import requests

    url = f"{server.url}/api/v1/namespaces/default/configmaps/a"
    hdr = {"Content-Type": "application/apply-patch+yaml"}
    assert requests.patch(url, data="apiVersion: v1\nkind: ConfigMap\n", headers=hdr, timeout=5).status_code == 400
    r = requests.patch(url + "?fieldManager=t", data="apiVersion: v1\nkind: ConfigMap\ndata: {k: v}\n", headers=hdr, timeout=5)
    assert r.status_code == 201 and r.json()["data"] == {"k": "v"}
    bad = requests.patch(url, data="{}", headers={"Content-Type": "text/plain"}, timeout=5)
    assert bad.status_code == 415 and bad.json()["reason"] == "UnsupportedMediaType"


def test_crd_schema_defaults_are_applied(custom: client.CustomObjectsApi, server: FakeApiServer) -> None:
    r = custom.create_namespaced_custom_object(GW, "v1", "default", "httproutes", {
        "apiVersion": f"{GW}/v1", "kind": "HTTPRoute", "metadata": {"name": "d"},
        "spec": {"parentRefs": [{"name": "web"}], "rules": [{"backendRefs": [{"name": "svc", "port": 8080}]}]}})
    assert r["spec"]["parentRefs"] == [{"group": GW, "kind": "Gateway", "name": "web"}]
    rule = r["spec"]["rules"][0]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/"}}]
    assert rule["backendRefs"] == [{"group": "", "kind": "Service", "name": "svc", "port": 8080, "weight": 1}]
    seeded = server.put_object({"apiVersion": f"{GW}/v1", "kind": "HTTPRoute", "metadata": {"name": "e"},
                                "spec": {"rules": [{}]}})
    assert seeded["spec"]["rules"][0]["matches"][0]["path"]["type"] == "PathPrefix"


def test_crd_schema_validation(custom: client.CustomObjectsApi) -> None:
    with pytest.raises(ApiException) as e:
        custom.create_namespaced_custom_object(GW, "v1", "default", "httproutes", {
            "apiVersion": f"{GW}/v1", "kind": "HTTPRoute", "metadata": {"name": "bad"},
            "spec": {"rules": [{"backendRefs": [{"name": "svc", "port": "http"}],
                                "matches": [{"path": {"type": "Glob", "value": "/"}}]}]}})
    st = status_of(e.value)
    fields = {c["field"] for c in st["details"]["causes"]}
    assert e.value.status == 422
    assert {"spec.rules[0].backendRefs[0].port", "spec.rules[0].matches[0].path.type"} <= fields
    _route(custom)
    with pytest.raises(ApiException) as e:  # a condition without lastTransitionTime/reason/message
        custom.patch_namespaced_custom_object_status(GW, "v1", "default", "httproutes", "r", {"status": {"parents": [
            {"parentRef": {"name": "web"}, "controllerName": "titaniumproxy.com/gateway-controller",
             "conditions": [{"type": "Accepted", "status": "True"}]}]}})
    assert e.value.status == 422
    assert "status.parents[0].conditions[0].lastTransitionTime" in {c["field"] for c in status_of(e.value)["details"]["causes"]}


def test_crd_validation_ratchets_unchanged_invalid_fields(server: FakeApiServer, custom: client.CustomObjectsApi) -> None:
    server.put_object({"apiVersion": f"{GW}/v1", "kind": "Gateway", "metadata": {"name": "old"},
                       "spec": {"gatewayClassName": "t", "listeners": []}})  # seeded below minItems 1
    custom.patch_namespaced_custom_object(GW, "v1", "default", "gateways", "old", {"metadata": {"labels": {"a": "b"}}})
    with pytest.raises(ApiException) as e:
        custom.patch_namespaced_custom_object(GW, "v1", "default", "gateways", "old", {"spec": {"gatewayClassName": ""}})
    assert e.value.status == 422


def test_patch_resource_version_precondition_is_optional(server: FakeApiServer) -> None:
    import requests

    server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    url = f"{server.url}/api/v1/namespaces/default/configmaps/a"
    hdr = {"Content-Type": "application/merge-patch+json"}
    r = requests.patch(url, json={"metadata": {"resourceVersion": None}, "data": {"k": "1"}}, headers=hdr, timeout=5)
    assert r.status_code == 200 and r.json()["data"] == {"k": "1"}
    r = requests.patch(url, json={"metadata": {"resourceVersion": "1"}, "data": {"k": "2"}}, headers=hdr, timeout=5)
    assert r.status_code == 409
    jp = [{"op": "test", "path": "/metadata/resourceVersion", "value": r.json()["details"]["name"]}]
    r = requests.patch(url, json=jp, headers={"Content-Type": "application/json-patch+json"}, timeout=5)
    assert r.status_code == 422


def test_merge_patches_never_modify_the_previous_stored_object(server: FakeApiServer,
                                                               custom: client.CustomObjectsApi) -> None:
    """The merge-patch path copies only what it edits (the rest is copied once, when the new
    object is prepared): the previous version (which watch events and the history still
    reference) stays exactly as it was, through the main resource and /status."""
    import copy

    _route(custom)
    rt = server.resolve("httproutes")
    cond = {"type": "Accepted", "status": "True", "reason": "Accepted", "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}
    parents = [{"parentRef": {"name": "gw"}, "controllerName": "x.io/c", "conditions": [cond]}]
    for sub, body in ((None, {"metadata": {"labels": {"l": "1"}, "annotations": {"a": None}},
                              "spec": {"hostnames": ["c.example.com"]}}),
                      ("status", {"status": {"parents": parents}}),
                      ("status", {"metadata": {"labels": {"ignored": "on-status"}}, "status": {"parents": parents}}),
                      ("status", {"status": {"parents": []}})):
        prev = server._get(rt, "default", "r")
        frozen = copy.deepcopy(prev)
        if sub == "status":
            custom.patch_namespaced_custom_object_status(GW, "v1", "default", "httproutes", "r", body)
        else:
            custom.patch_namespaced_custom_object(GW, "v1", "default", "httproutes", "r", body)
        assert prev == frozen
        if sub == "status" and body["status"]["parents"]:
            # schema defaults filled in on the new object only
            ref = server._get(rt, "default", "r")["status"]["parents"][0]["parentRef"]
            assert ref["group"] == GW and ref["kind"] == "Gateway"
            assert "group" not in parents[0]["parentRef"]
    got = server.get_object("HTTPRoute", "default", "r")
    assert got["metadata"]["labels"] == {"l": "1"} and not got["metadata"].get("annotations")
    assert got["spec"]["hostnames"] == ["c.example.com"] and not (got.get("status") or {}).get("parents")


def test_stripped_copy_is_strip_nulls_of_a_deep_copy() -> None:
    import copy
    from collections import OrderedDict

    from tests.support.k8sutil import strip_nulls, strip_nulls_in_place, stripped_copy

    value = {"a": None, "b": [1, None, {"c": None, "d": 2.5, "e": True}], "f": OrderedDict(g=None, h="x"),
             "i": ({"j": None},), "k": {"l": [[], {}]}}
    out = stripped_copy(value)
    assert out == strip_nulls(copy.deepcopy(value))
    assert out["b"][2] is not value["b"][2] and out["k"]["l"][0] is not value["k"]["l"][0]
    assert out["i"][0] is not value["i"][0]  # unusual containers are deep-copied too
    fresh = stripped_copy(value) | {"m": [{"n": None, "o": [None, {"p": None}]}], "q": None}
    expect = strip_nulls(fresh)
    assert strip_nulls_in_place(fresh) is fresh and fresh == expect


def test_merge_patch_copies_the_patch_values_unless_told_not_to() -> None:
    import copy

    from tests.support.k8sutil import merge_patch

    target = {"a": {"b": [1], "c": {"d": 1}}, "e": 1}
    patch = {"a": {"b": [2, {"x": None}], "c": None}, "f": {"g": [3]}}
    frozen_target, frozen_patch = copy.deepcopy(target), copy.deepcopy(patch)
    want = {"a": {"b": [2, {"x": None}]}, "e": 1, "f": {"g": [3]}}
    copied = merge_patch(target, patch)
    shared = merge_patch(target, patch, copy_values=False)
    assert copied == shared == want
    assert target == frozen_target and patch == frozen_patch
    assert copied["a"]["b"] is not patch["a"]["b"] and copied["f"]["g"] is not patch["f"]["g"]
    assert shared["a"]["b"] is patch["a"]["b"] and shared["f"]["g"] is patch["f"]["g"]
    assert shared["f"] is not patch["f"]  # dicts of the patch are merged into new ones


def test_rfc3339_formats_each_second_as_strftime_does() -> None:
    import random
    from datetime import datetime, timedelta, timezone

    from tests.support.k8sutil import rfc3339

    rng = random.Random(7)
    base = datetime(2026, 1, 1, tzinfo=timezone.utc)
    zones = [timezone.utc, timezone(timedelta(hours=2)), timezone(timedelta(hours=-7, minutes=-30))]
    for _ in range(2000):
        dt = (base + timedelta(seconds=rng.randint(-5, 5), microseconds=rng.randint(0, 999999))).astimezone(
            rng.choice(zones))
        assert rfc3339(dt) == dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
