"""Informer transforms drop only what nothing reads: the render output is the same with and
without them, on every golden input and on inputs carrying every dropped field."""

from __future__ import annotations

import copy
import sys
from typing import Any

import pytest

from tests.render.conftest import case_names, case_objects, case_options
from titanium_gateway.controller import transform as tf
from titanium_gateway.offline.snapshot import build_snapshot
from titanium_gateway.render import render
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.result import RenderResult

NOW = "2026-01-02T03:04:05Z"


def _apply(objects: list[dict[str, Any]], options: RenderOptions) -> list[dict[str, Any]]:
    out = []
    for obj in objects:
        before = copy.deepcopy(obj)
        t = tf.transform_for(str(obj.get("kind")), options.data_plane_service)(obj)
        assert obj == before  # never modifies its input
        out.append(t)
    return out


def _decorated(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every object with each field the transforms drop (as a real cluster has them)."""
    out = []
    for obj in copy.deepcopy(objects):
        md = obj.setdefault("metadata", {})
        md["managedFields"] = [{"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:spec": {}}}]
        md.setdefault("annotations", {})[tf.LAST_APPLIED] = '{"apiVersion":"v1","kind":"X","spec":{}}'
        kind = obj.get("kind")
        if kind == "EndpointSlice":
            for i, ep in enumerate(obj.get("endpoints") or []):
                if isinstance(ep, dict):
                    ep.update({"targetRef": {"kind": "Pod", "name": f"pod-{i}"}, "nodeName": "node-1",
                               "zone": "z1", "hints": {"forZones": [{"name": "z1"}]}})
        elif kind == "Service":
            obj.setdefault("status", {"loadBalancer": {}})
        out.append(obj)
    return out


def _same(a: RenderResult, b: RenderResult) -> None:
    assert a.config == b.config and a.config_hash == b.config_hash
    assert a.parts == b.parts
    assert dict(a.tls_files) == dict(b.tls_files)
    assert a.statuses == b.statuses and a.events == b.events
    assert a.listeners == b.listeners and a.delivery_error == b.delivery_error


def _render(case: str, objects: list[dict[str, Any]]) -> RenderResult:
    options, snap_kwargs = case_options(case)
    snap_kwargs = {**snap_kwargs, "now": NOW}
    if snap_kwargs.get("confirmed_config_hash") == "rendered":
        snap_kwargs["confirmed_config_hash"] = None
    return render(build_snapshot(objects, **snap_kwargs), options)


@pytest.mark.parametrize("case", case_names())
def test_render_is_identical_with_and_without_the_transforms(case: str) -> None:
    options, _ = case_options(case)
    objects = case_objects(case)
    plain = _render(case, objects)
    _same(plain, _render(case, _apply(objects, options)))
    _same(plain, _render(case, _apply(_decorated(objects), options)))


def test_what_is_dropped_and_kept() -> None:
    dp = ("gw", "tp")
    meta = {"name": "s", "namespace": "apps", "managedFields": [{}],
            "annotations": {tf.LAST_APPLIED: "{}", "titanium.io/timeout": "5s"}}
    ing = tf.transform_for("Ingress", dp)({"kind": "Ingress", "metadata": meta, "spec": {"rules": []}})
    assert ing["metadata"] == {"name": "s", "namespace": "apps", "annotations": {"titanium.io/timeout": "5s"}}
    ep = {"addresses": ["10.0.0.1"], "conditions": {"ready": True}, "targetRef": {"name": "p"},
          "nodeName": "n", "zone": "z", "hints": {}}
    sl = tf.transform_for("EndpointSlice", dp)({"kind": "EndpointSlice", "ports": [{"port": 80}],
                                                "metadata": {"name": "a", "namespace": "apps"}, "endpoints": [ep]})
    assert sl["endpoints"] == [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}]
    assert sl["ports"] == [{"port": 80}]
    own = {"kind": "EndpointSlice", "endpoints": [ep], "metadata": {
        "name": "tp-x", "namespace": "gw", "labels": {tf.SERVICE_NAME_LABEL: "tp"}}}
    assert tf.transform_for("EndpointSlice", dp)(own)["endpoints"] == [ep]  # the prober names pods
    svc = {"kind": "Service", "metadata": {"name": "x", "namespace": "apps"}, "spec": {}, "status": {"a": 1}}
    assert "status" not in tf.transform_for("Service", dp)(svc)
    dps = {**svc, "metadata": {"name": "tp", "namespace": "gw"}}
    assert tf.transform_for("Service", dp)(dps)["status"] == {"a": 1}
    opaque = {"kind": "Secret", "type": "Opaque", "metadata": {"name": "o"}, "data": {"k": "dg=="}}
    assert "data" not in tf.transform_for("Secret", dp)(opaque)
    tls = {"kind": "Secret", "type": "kubernetes.io/tls", "metadata": {"name": "t"}, "data": {"tls.crt": "eA=="}}
    assert tf.secret_transform(tls) is tls
    assert tf.transform_for("Secret", dp)(tls) == tls
    # any Pod of the data-plane namespace: a few metadata fields and the addresses
    poke = {"gateway.titaniumproxy.com/config-poke": "h"}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "gw", "uid": "u", "resourceVersion": "7", "labels": {"app": "x"},
                        "annotations": {"a": "b", **poke}, "generateName": "p-", "ownerReferences": [{"kind": "RS"}],
                        "creationTimestamp": "2026-01-01T00:00:00Z"},
           "spec": {"containers": []}, "status": {"phase": "Running", "podIP": "10.0.0.9",
                                                  "podIPs": [{"ip": "10.0.0.9"}], "conditions": []}}
    assert tf.transform_for("Pod", dp)(pod) == {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "gw", "uid": "u", "resourceVersion": "7", "labels": {"app": "x"},
                     "annotations": poke},
        "status": {"podIP": "10.0.0.9", "podIPs": [{"ip": "10.0.0.9"}]}}
    bare = {"metadata": {"name": "p", "annotations": {"a": "b"}}}
    assert tf.pod_transform(bare) == {"metadata": {"name": "p"}}  # no annotation of ours: none kept
    kept = tf.pod_transform(pod)
    assert tf.pod_transform(kept) is kept  # nothing more to drop: no copy


def test_the_pod_transform_keeps_every_field_the_prober_and_pod_writers_read() -> None:
    from titanium_gateway.prober.prober import POD_FIELDS_USED

    pod = {"apiVersion": "v1", "kind": "Pod", "spec": {"nodeName": "n"},
           "metadata": {"name": "p", "namespace": "gw", "uid": "u", "deletionTimestamp": "t", "resourceVersion": "9",
                        "labels": {"app.kubernetes.io/name": "custom"},
                        "annotations": {"gateway.titaniumproxy.com/config-poke": "h",
                                        "gateway.titaniumproxy.com/listeners": "8080"}},
           "status": {"podIP": "10.0.0.9", "podIPs": [{"ip": "10.0.0.9"}], "phase": "Running"}}
    out = tf.pod_transform(pod)
    for path in POD_FIELDS_USED:
        head, _, rest = path.partition(".")
        if "[" in rest and rest.endswith("]") and not rest.endswith("[]"):
            field, key = rest[:-1].split("[", 1)
            assert out[head][field][key] == pod[head][field][key], path
        else:
            field = rest.split("[")[0]
            assert out[head][field] == pod[head][field], path
    plain = {"kind": "HTTPRoute", "metadata": {"name": "r"}, "spec": {}, "status": {}}
    assert tf.strip_metadata(plain) is plain  # nothing to drop: no copy
    assert tf.transform_for("HTTPRoute", ("gw", "tp"))(plain) == plain  # compacted: an equal copy


def test_compaction_shares_keys_and_short_strings_and_keeps_values() -> None:
    import json

    dp = ("gw", "tp")
    text = json.dumps({"kind": "HTTPRoute", "metadata": {"name": "r", "namespace": "apps"},
                       "spec": {"rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}]}],
                                "note": "x" * 100}})
    a = tf.transform_for("HTTPRoute", dp)(json.loads(text))
    b = tf.transform_for("HTTPRoute", dp)(json.loads(text))
    assert a == b == json.loads(text)
    ka, kb = next(iter(a["metadata"])), next(iter(b["metadata"]))
    assert ka is kb  # one "name" for every object
    pa = a["spec"]["rules"][0]["matches"][0]["path"]["type"]
    assert pa is b["spec"]["rules"][0]["matches"][0]["path"]["type"]
    assert a["spec"]["note"] is not sys.intern("x" * 100)  # long strings are not interned
    assert a["spec"] is b["spec"]  # equal values below metadata are one object
    assert a["metadata"] is not b["metadata"] and a is not b  # the object and its metadata: never


def test_shared_values_are_strictly_equal_and_pruned_when_unused() -> None:
    shared = tf.SharedValues()

    def obj(name: str, spec: Any) -> dict[str, Any]:
        return shared.object({"kind": "X", "metadata": {"name": name, "labels": {"a": "b"}}, "spec": spec})

    a = obj("a", {"x": [1, True, None, 0.0, "s", {"k": "v"}], "y": {"z": 1}})
    b = obj("b", {"x": [1, True, None, 0.0, "s", {"k": "v"}], "y": {"z": 1}})
    assert a["spec"] is b["spec"] and a["metadata"]["labels"] is b["metadata"]["labels"]
    # equal in Python but not the same JSON value: never shared
    c = obj("c", {"x": [True, 1, None, -0.0, "s", {"k": "v"}], "y": {"z": True}})
    assert c["spec"]["x"] is not a["spec"]["x"] and c["spec"]["y"] is not a["spec"]["y"]
    assert c["spec"]["x"][0] is True and c["spec"]["x"][1] == 1 and type(c["spec"]["x"][1]) is int
    assert str(c["spec"]["x"][3]) == "-0.0" and c["spec"]["y"]["z"] is True
    assert c["spec"]["x"][5] is a["spec"]["x"][5]  # {"k": "v"} is
    d = obj("d", {"y": {"z": 1}, "x": [1, True, None, 0.0, "s", {"k": "v"}]})  # other key order
    assert d["spec"] is not a["spec"] and list(d["spec"]) == ["y", "x"] and d["spec"]["y"] is a["spec"]["y"]
    assert a["spec"] == {"x": [1, True, None, 0.0, "s", {"k": "v"}], "y": {"z": 1}}
    held = len(shared)
    del a, b, c, d
    assert shared.prune() == held and len(shared) == 0  # nothing holds them any more
    e = obj("e", {"y": {"z": 1}})
    assert shared.prune() == 0 and e["spec"]["y"] == {"z": 1}  # still held by e


def test_a_hash_collision_never_shares_a_value_that_is_not_strictly_equal() -> None:
    # the table is keyed by the hash of a value's flat key: values that meet under one key are
    # compared, strictly (key order, True vs 1, -0.0 vs 0.0), before one stands for the other
    shared = tf.SharedValues()
    key = ("same", "key")
    first = shared._share({"a": "x", "b": None}, key, True)
    assert shared._share({"b": None, "a": "x"}, key, True) is not first  # other key order
    assert shared._share({"a": "x", "b": None}, key, True) is first
    assert shared._share(["x", None], key, True) is not first
    ints = shared._share({"n": 1}, ("ints",), False)
    assert shared._share({"n": True}, ("ints",), False) is not ints
    assert shared._share({"n": 1.0}, ("ints",), False) is not ints
    assert shared._share({"n": 1}, ("ints",), False) is ints
    zero = shared._share([0.0], ("floats",), False)
    assert shared._share([-0.0], ("floats",), False) is not zero


def test_shared_values_prune_as_the_table_grows() -> None:
    shared = tf.SharedValues()
    for i in range(3 * shared.MIN_PRUNE):
        shared.object({"kind": "X", "metadata": {"name": "n"}, "spec": {"i": i}})  # dropped at once
    assert len(shared) <= shared.MIN_PRUNE


def test_compaction_survives_a_deeply_nested_object() -> None:
    deep: dict[str, Any] = {}
    cur = deep
    for _ in range(5000):
        cur["a"] = {}
        cur = cur["a"]
    obj = {"kind": "HTTPRoute", "metadata": {"name": "r"}, "spec": deep}
    assert tf.transform_for("HTTPRoute", ("gw", "tp"))(obj)["spec"] is deep


def test_compaction_with_the_previous_version_reuses_its_strictly_equal_parts() -> None:
    import json

    transform = tf.transform_for("HTTPRoute", ("gw", "tp"))
    spec = {"parentRefs": [{"name": "gw", "port": 80}], "rules": [{"backendRefs": [{"name": "s", "weight": 1}]}]}
    raw = {"kind": "HTTPRoute", "metadata": {"name": "r", "namespace": "a", "resourceVersion": "1",
                                             "labels": {"app": "x"}}, "spec": spec}
    old = transform(json.loads(json.dumps(raw)))
    # a status write: new resourceVersion and status, the rest unchanged
    echo = json.loads(json.dumps({**raw, "metadata": {**raw["metadata"], "resourceVersion": "2"},
                                  "status": {"parents": []}}))
    new = transform.with_previous(echo, old)  # type: ignore[attr-defined]
    assert new == echo and list(new) == list(echo)
    assert new["spec"] is old["spec"] and new["metadata"]["labels"] is old["metadata"]["labels"]
    assert new["metadata"] is not old["metadata"] and new["metadata"]["resourceVersion"] == "2"
    assert new == transform(json.loads(json.dumps(echo)))  # the same value as without the previous version
    # equal in Python, but not the same JSON value: compacted anew, never reused
    for changed in ({"parentRefs": [{"name": "gw", "port": 80.0}], "rules": spec["rules"]},
                    {"parentRefs": [{"name": "gw", "port": 80}], "rules": [{"backendRefs": [{"name": "s", "weight": True}]}]},
                    {"rules": spec["rules"], "parentRefs": spec["parentRefs"]},  # other key order
                    {**spec, "rules": []}):
        other = json.loads(json.dumps({**raw, "spec": changed}))
        got = transform.with_previous(other, old)  # type: ignore[attr-defined]
        assert got["spec"] is not old["spec"] and json.dumps(got) == json.dumps(other)
    # a previous version that is not a mapping is ignored
    assert tf.compact(json.loads(json.dumps(raw)), previous=None) == raw
    assert tf.SharedValues().object(json.loads(json.dumps(raw)), ["not", "an", "object"]) == raw  # type: ignore[arg-type]


def test_strictly_equal_tells_json_values_apart() -> None:
    assert tf.strictly_equal({"a": [1, "x", None]}, {"a": [1, "x", None]})
    assert not tf.strictly_equal({"a": 1}, {"a": True})
    assert not tf.strictly_equal({"a": 1}, {"a": 1.0})
    assert not tf.strictly_equal([0.0], [-0.0])
    assert not tf.strictly_equal({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert not tf.strictly_equal([float("nan")], [float("nan")])
    nested: dict[str, Any] = {}
    cur = nested
    for _ in range(5000):
        cur["a"] = {}
        cur = cur["a"]
    assert tf.strictly_equal(nested, nested) is False  # too deep to tell: never raises, never reused


def test_fields_of_newer_gateway_api_releases_survive_the_transforms_and_are_not_ignored() -> None:
    """A rule's ``retry``/``sessionPersistence`` and a Gateway's ``tls.frontend`` (newer CRDs
    than the render's v1.2.1) reach the render through the informer transforms (a first
    compaction and one against the cached version): the rule answers 500 naming the field and
    the HTTPS listener is not accepted."""
    from tests.render.core_fixtures import (
        endpoints,
        gateway,
        gatewayclass,
        listener,
        route,
        service,
        tls_secret,
    )
    from titanium_gateway.contract import Request, decide, load_config

    backend = [{"name": "api", "port": 8080}]
    rules = [{"matches": [{"path": {"type": "PathPrefix", "value": "/r"}}], "backendRefs": backend,
              "retry": {"attempts": 3, "codes": [503]}},
             {"matches": [{"path": {"type": "PathPrefix", "value": "/s"}}], "backendRefs": backend,
              "sessionPersistence": {"type": "Cookie", "sessionName": "s"}}]
    https = listener("https", 443, "HTTPS", tls={"certificateRefs": [{"name": "shop-tls"}]})
    gw = gateway(listeners=[listener(), https],
                 tls={"frontend": {"default": {"validation": {"caCertificateRefs": [{"name": "ca"}]}}}})
    objects = [gatewayclass(), gw, service(), endpoints(), route(rules=rules), tls_secret()]
    options = RenderOptions(assume_programmed=True)
    first = _apply(objects, options)
    again = [tf.transform_for(str(o["kind"]), options.data_plane_service).with_previous(  # type: ignore[attr-defined]
        copy.deepcopy(o), prev) for o, prev in zip(objects, first, strict=True)]
    for objs in (first, again):
        kept = {o["kind"]: o for o in objs}
        assert kept["HTTPRoute"]["spec"]["rules"][0]["retry"] == {"attempts": 3, "codes": [503]}
        assert "sessionPersistence" in kept["HTTPRoute"]["spec"]["rules"][1]
        assert kept["Gateway"]["spec"]["tls"] == gw["spec"]["tls"]
        result = render(build_snapshot(objs, now=NOW), options)
        cfg = load_config(result.config, dict(result.parts))
        route_status = next(s.status for s in result.statuses if s.key[0] == "HTTPRoute")
        accepted = next(c for c in route_status["parents"][0]["conditions"] if c["type"] == "Accepted")
        for path, field in (("/r", "spec.rules[0].retry"), ("/s", "spec.rules[1].sessionPersistence")):
            out = decide(cfg, Request(host="shop.example.com", path=path)).outcome
            assert (getattr(out, "status", None), getattr(out, "body", None)) == (500, "UnsupportedValue")
            assert f"{field} is not supported" in accepted["message"]  # the why is in status
        gw_status = next(s.status for s in result.statuses if s.key[0] == "Gateway")
        https_accepted = next(c for ls in gw_status["listeners"] if ls["name"] == "https"
                              for c in ls["conditions"] if c["type"] == "Accepted")
        assert (https_accepted["status"], https_accepted["reason"]) == ("False", "UnsupportedValue")
