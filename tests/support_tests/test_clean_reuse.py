"""A write takes the fields of the stored object it leaves alone (a status write's spec) as
they are when they were normalized and validated before, and checks them again otherwise
(objects seeded or edited with put_object / update_object, another API version): answers,
warnings, stored objects and watch events are the same as when everything is checked again."""

from __future__ import annotations

import json
import random
from datetime import datetime, timezone
from typing import Any

import pytest
import requests

from tests.support.apiserver import FakeApiServer
from tests.support_tests.conftest import condition

GW = "gateway.networking.k8s.io"
ROUTES = f"/apis/{GW}/v1/namespaces/default/httproutes"
MERGE = {"Content-Type": "application/merge-patch+json"}


def _status(message: str = "") -> dict[str, Any]:
    cond = dict(condition("Accepted"), message=message)
    return {"parents": [{"parentRef": {"name": "gw"}, "controllerName": "x.io/c", "conditions": [cond]}]}


def _route(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GW}/v1", "kind": "HTTPRoute", "metadata": {"name": "r", "namespace": "default"},
            "spec": {"parentRefs": [{"name": "gw"}], "rules": [{"backendRefs": [{"name": "s", "port": 80}]}], **spec}}


def _patch_status(server: FakeApiServer, body: dict[str, Any], version: str = "v1", **params: str) -> requests.Response:
    return requests.patch(f"{server.url}/apis/{GW}/{version}/namespaces/default/httproutes/r/status", json=body,
                          headers=MERGE, params=params, timeout=5)


def _stored(server: FakeApiServer) -> dict[str, Any]:
    o = server._get(server.resolve("httproutes"), "default", "r")
    assert o is not None
    return o


def _marked(server: FakeApiServer) -> frozenset[str]:
    st = server._store(server.resolve("httproutes"))
    mark = st.clean.get("default/r")
    return mark[2] if mark is not None and mark[0] is st.items.get("default/r") else frozenset()


def test_a_status_write_takes_the_checked_spec_as_it_is(server: FakeApiServer) -> None:
    assert requests.post(f"{server.url}{ROUTES}", json=_route(), timeout=5).status_code == 201
    assert _marked(server) == {"spec"}
    before = _stored(server)
    r = _patch_status(server, {"status": _status()})
    assert r.status_code == 200 and "Warning" not in r.headers
    after = _stored(server)
    assert after["spec"] is before["spec"] and after["metadata"]["generation"] == 1
    assert _marked(server) == {"spec", "status"}
    # the main resource: the status (ignored) is the stored one, the changed spec checked again
    r = requests.patch(f"{server.url}{ROUTES}/r", json={"spec": {"hostnames": ["a.example.com"]}, "status": None},
                       headers=MERGE, timeout=5)
    assert r.status_code == 200 and r.json()["metadata"]["generation"] == 2
    latest = _stored(server)
    assert latest["status"] is after["status"] and latest["spec"] is not after["spec"]
    assert _marked(server) == {"spec", "status"}


@pytest.mark.parametrize("how", ["put_object", "update_object"])
def test_a_status_write_after_a_spec_change_behind_the_apis_back_still_prunes_and_defaults(
        server: FakeApiServer, how: str) -> None:
    """put_object / update_object skip pruning and validation: what they store is checked again
    by the next status write (unknown fields pruned with a warning, defaults filled in, the
    generation bumped), however often the object was written through the API before."""
    assert requests.post(f"{server.url}{ROUTES}", json=_route(), timeout=5).status_code == 201
    assert _patch_status(server, {"status": _status("1")}).status_code == 200
    if how == "put_object":
        server.put_object(_route(unknownField=1, rules=[{"backendRefs": [{"name": "s", "port": 80}]}]), defaults=False)
    else:
        def mutate(o: dict[str, Any]) -> None:
            o["spec"]["unknownField"] = 1
            del o["spec"]["rules"][0]["backendRefs"][0]["weight"]  # a default, gone
        server.update_object("HTTPRoute", "default", "r", mutate)
    assert _marked(server) == frozenset()
    gen = _stored(server)["metadata"]["generation"]
    r = _patch_status(server, {"status": _status("2")})
    assert r.status_code == 200
    assert r.headers.get("Warning") == '299 - "unknown field \\"spec.unknownField\\""'
    spec = r.json()["spec"]
    assert "unknownField" not in spec and spec["rules"][0]["backendRefs"][0]["weight"] == 1
    assert r.json()["metadata"]["generation"] == gen + 1
    assert _marked(server) == {"spec", "status"}
    # Strict: the same spec edit is refused on a status write (422, as the real patch handler)
    server.update_object("HTTPRoute", "default", "r", lambda o: o["spec"].__setitem__("unknownField", 2))
    r = _patch_status(server, {"status": _status("3")}, fieldValidation="Strict")
    assert r.status_code == 422 and "spec.unknownField" in r.text


def test_another_api_version_checks_everything_again(server: FakeApiServer) -> None:
    assert requests.post(f"{server.url}{ROUTES}", json=_route(), timeout=5).status_code == 201
    spec = _stored(server)["spec"]
    assert _patch_status(server, {"status": _status()}, version="v1beta1").status_code == 200
    beta_spec = _stored(server)["spec"]
    assert beta_spec is not spec and beta_spec == spec  # v1beta1's schema: copied, checked
    assert _patch_status(server, {"status": _status("x")}, version="v1beta1").status_code == 200
    assert _stored(server)["spec"] is beta_spec  # checked under v1beta1's schema now: taken
    assert _patch_status(server, {"status": _status("y")}).status_code == 200
    assert _stored(server)["spec"] is not beta_spec  # and v1's again


def test_an_invalid_status_stored_behind_the_apis_back_is_validated_on_main_resource_writes(
        server: FakeApiServer) -> None:
    """A status put_object stored (never validated) is not taken as checked by a write to the
    main resource: it is validated again (and ratcheted: unchanged, it does not count)."""
    assert requests.post(f"{server.url}{ROUTES}", json=_route(), timeout=5).status_code == 201
    bad = _status()
    bad["parents"][0]["conditions"][0]["status"] = "Maybe"  # not in the enum
    server.update_object("HTTPRoute", "default", "r", lambda o: o.__setitem__("status", bad))
    r = requests.patch(f"{server.url}{ROUTES}/r", json={"metadata": {"labels": {"a": "b"}}}, headers=MERGE, timeout=5)
    assert r.status_code == 200 and r.json()["status"] == bad
    assert _marked(server) == {"spec"}  # the status had an error (ratcheted): not marked
    assert _patch_status(server, {"status": bad}).status_code == 200  # unchanged: ratcheted
    bad["parents"][0]["conditions"][0]["status"] = "Perhaps"
    r = _patch_status(server, {"status": bad})
    assert r.status_code == 422 and "Perhaps" in r.text  # changed: counts


def test_an_unknown_status_field_stored_behind_the_apis_back_warns_on_every_main_resource_write(
        server: FakeApiServer) -> None:
    """A write to the main resource validates the stored status (and warns of its unknown
    fields) but stores the status as it was: it is never taken as checked."""
    assert requests.post(f"{server.url}{ROUTES}", json=_route(), timeout=5).status_code == 201
    server.update_object("HTTPRoute", "default", "r", lambda o: o.__setitem__("status", dict(_status(), extra=1)))
    for n in range(3):
        r = requests.patch(f"{server.url}{ROUTES}/r", json={"metadata": {"labels": {"n": str(n)}}}, headers=MERGE,
                           timeout=5)
        assert r.status_code == 200 and r.json()["status"]["extra"] == 1
        assert r.headers.get("Warning") == '299 - "unknown field \\"status.extra\\""'
        assert _marked(server) == {"spec"}


# --------------------------------------------------------------------------------------------
# the same writes with and without taking checked fields as they are


def _masked(v: Any) -> Any:
    """Without what differs between two servers by chance (uids)."""
    if isinstance(v, dict):
        return {k: ("<uid>" if k == "uid" else _masked(x)) for k, x in v.items()}
    if isinstance(v, list):
        return [_masked(x) for x in v]
    return v


def _ops(rng: random.Random, n: int) -> list[tuple[str, Any]]:
    specs = [{}, {"hostnames": ["a.example.com"]}, {"unknownField": 1}, {"hostnames": ["-bad-"]},
             {"rules": [{"backendRefs": [{"name": "s", "port": 80}], "extra": True}]}, {"hostnames": None}]
    statuses = [_status("a"), _status("b"), {"parents": []}, {"parents": [{"bad": 1}]}, {"unknownStatusField": 1},
                {"parents": [{"parentRef": {"name": "gw"}, "controllerName": "x.io/c", "conditions": [
                    dict(condition("Accepted"), status="Maybe")]}]}]
    kinds = ["status", "status", "status", "status-beta", "status-strict", "spec", "spec-strict", "labels",
             "put-status", "update-spec", "update-status", "put_object", "create", "delete", "json-status"]
    return [(rng.choice(kinds), rng.choice(specs + statuses)) for _ in range(n)]


def _apply(server: FakeApiServer, op: str, arg: Any) -> Any:
    url = f"{server.url}{ROUTES}/r"
    if op == "create":
        r = requests.post(f"{server.url}{ROUTES}", json=_route(**(arg if "parents" not in arg else {})), timeout=5)
    elif op == "delete":
        r = requests.delete(url, timeout=5)
    elif op.startswith("status"):
        params = {"fieldValidation": "Strict"} if op == "status-strict" else {}
        body = {"status": arg if "parents" in arg or "unknownStatusField" in arg else _status(json.dumps(arg))}
        r = _patch_status(server, body, "v1beta1" if op == "status-beta" else "v1", **params)
    elif op.startswith("spec"):
        params = {"fieldValidation": "Strict"} if op == "spec-strict" else {}
        r = requests.patch(url, json={"spec": arg, "status": {"ignored": 1}}, headers=MERGE, params=params, timeout=5)
    elif op == "labels":
        r = requests.patch(url, json={"metadata": {"labels": {"n": str(len(json.dumps(arg)))}}}, headers=MERGE, timeout=5)
    elif op == "json-status":
        r = requests.patch(f"{url}/status", json=[{"op": "add", "path": "/status", "value": _status("j")}],
                           headers={"Content-Type": "application/json-patch+json"}, timeout=5)
    elif op == "put-status":
        cur = requests.get(url, timeout=5).json()
        cur["status"] = _status("put")
        r = requests.put(f"{url}/status", json=cur, timeout=5)
    elif op == "put_object":
        server.put_object(_route(**(arg if "parents" not in arg else {})), defaults=bool(len(arg) % 2))
        return "put_object"
    else:  # update-spec / update-status: behind the API's back
        if server.get_object("HTTPRoute", "default", "r") is None:
            return "absent"
        field = "spec" if op == "update-spec" else "status"
        server.update_object("HTTPRoute", "default", "r", lambda o: o.setdefault(field, {}).update(
            {k: v for k, v in arg.items() if v is not None}))
        return op
    return r.status_code, r.headers.get("Warning"), _masked(r.json())


@pytest.mark.parametrize("seed", range(6))
def test_the_same_writes_give_the_same_results_with_and_without_reuse(seed: int) -> None:
    ops = _ops(random.Random(seed), 60)
    results: list[list[Any]] = []
    servers = [FakeApiServer(), FakeApiServer()]
    servers[1]._reuse_clean = False
    for s in servers:
        s.now = lambda: datetime(2026, 1, 1, tzinfo=timezone.utc)
        with s:
            _apply(s, "create", {})
            results.append([_apply(s, op, arg) for op, arg in ops])
            results[-1].append(_masked(s.get_object("HTTPRoute", "default", "r")))
            results[-1].append([(e.type, _masked(e.obj)) for e in s._history])
    assert results[0] == results[1]
    assert sum(1 for r in results[0][:-2] if isinstance(r, tuple) and r[0] == 200) > 10


def test_put_object_stores_a_copy_with_the_schema_defaults_and_nothing_pruned(server: FakeApiServer) -> None:
    """put_object copies and defaults in one walk: the same object as copying (nulls dropped),
    filling in the metadata, then applying the defaults (unknown fields are kept)."""
    import copy
    from collections import OrderedDict

    from tests.support import crdschema
    from tests.support.k8sutil import strip_nulls, stripped_copy

    objs = [
        _route(unknownField={"x": None, "y": 1}, hostnames=None),
        {"apiVersion": f"{GW}/v1", "kind": "HTTPRoute", "metadata": OrderedDict(name="o", labels={"a": "b"}),
         "spec": OrderedDict(parentRefs=[OrderedDict(name="gw", port=None)], rules=[{}])},
        {"apiVersion": f"{GW}/v1beta1", "kind": "HTTPRoute", "metadata": {"name": "beta", "namespace": None},
         "spec": {"rules": [{"matches": [{"path": {}}]}]}, "status": _status()},
        {"apiVersion": f"{GW}/v1", "kind": "Gateway", "metadata": {"name": "g"},
         "spec": {"gatewayClassName": "c", "listeners": [{"name": "l", "port": 80, "protocol": "HTTP"}]}},
    ]
    for obj in objs:
        for defaults in (True, False):
            frozen = copy.deepcopy(obj)
            got = server.put_object(obj, defaults=defaults)
            assert obj == frozen
            want = stripped_copy(obj)
            want["metadata"].setdefault("namespace", "default")
            schema = crdschema.schema_for(GW, obj["kind"], obj["apiVersion"].split("/")[1])
            assert schema is not None
            if defaults:
                crdschema.apply_defaults(want, schema)
            want = strip_nulls(want)
            kept = {k: v for k, v in got.items() if k not in ("metadata", "apiVersion")}
            assert json.dumps(kept) == json.dumps({k: v for k, v in want.items() if k not in ("metadata", "apiVersion")})
            assert got["apiVersion"] == f"{GW}/v1"  # stored in the preferred version
            assert {k: v for k, v in got["metadata"].items() if k in want["metadata"]} == want["metadata"]
            stored = server._get(server.resolve(obj["kind"]), "default", obj["metadata"]["name"])
            assert got == stored and got is not stored and got["spec"] is not stored["spec"]
