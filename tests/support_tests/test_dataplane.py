"""The stub data plane: admin endpoints, tokens, config hash, parts, lag/lie/ready, following
the fake API server like a kubelet-mounted volume."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
import requests
import yaml

from tests.support.apiserver import FakeApiServer
from tests.support.dataplane import (
    DATA_PLANE_LABELS,
    ConfigRejected,
    DataPlaneFleet,
    StubDataPlane,
    sha256_hex,
)

TOKEN = "admin-token"
ROOT = b'schemaVersion: "7.1"\nlisteners: []\nroutes: []\nclusters: []\n'


def _auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


def _wait(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


@pytest.fixture
def stub() -> Iterator[StubDataPlane]:
    with StubDataPlane(TOKEN) as s:
        yield s


def test_readyz_version_metrics_and_tokens(stub: StubDataPlane) -> None:
    assert requests.get(f"{stub.url}/readyz", timeout=5).status_code == 503
    assert requests.get(f"{stub.url}/version", timeout=5).status_code == 401
    assert requests.get(f"{stub.url}/version", headers={"Authorization": "Bearer wrong"}, timeout=5).status_code == 401
    assert requests.get(f"{stub.url}/metrics", timeout=5).status_code == 401
    assert requests.get(f"{stub.url}/version", headers=_auth(), timeout=5).json()["config_hash"] is None
    assert stub.load(ROOT) is True
    assert requests.get(f"{stub.url}/readyz", timeout=5).status_code == 200
    v = requests.get(f"{stub.url}/version", headers=_auth(), timeout=5).json()
    assert v == {"version": "7.1.0-stub", "config_hash": sha256_hex(ROOT)}
    m = requests.get(f"{stub.url}/metrics", headers=_auth(), timeout=5)
    assert m.status_code == 200 and "titanium_config_reloads_total 1" in m.text
    assert [(r.path, r.authorized) for r in stub.requests][:2] == [("/readyz", False), ("/version", False)]


def test_lag_lie_and_ready_controls(stub: StubDataPlane) -> None:
    stub.load(ROOT)
    stub.lag = True
    new = ROOT + b"# v2\n"
    assert stub.load(new) is False and stub.config_hash == sha256_hex(ROOT)
    stub.release()
    assert stub.config_hash == sha256_hex(new)
    stub.lie_hash = "0" * 64
    assert requests.get(f"{stub.url}/version", headers=_auth(), timeout=5).json()["config_hash"] == "0" * 64
    stub.set_ready(False)
    assert requests.get(f"{stub.url}/readyz", timeout=5).status_code == 503


def test_parts_are_checked_by_sha256(stub: StubDataPlane) -> None:
    with pytest.raises(ConfigRejected):
        stub.load(b"routes: []\n")  # no schemaVersion
    part1 = b"routes: [{id: r1}]\nclusters: [{id: c1}]\n"
    part2 = b"routes: [{id: r2}]\nclusters: []\n"
    root = yaml.safe_dump({"schemaVersion": "7.1", "listeners": [], "include": [
        {"file": "twp.part-1.yaml", "sha256": sha256_hex(part1)},
        {"file": "twp.part-2.yaml", "sha256": sha256_hex(part2)}]}).encode()
    stub.load(ROOT)
    with pytest.raises(ConfigRejected):  # part 2 not written yet: keep the previous config
        stub.load(root, {"twp.part-1.yaml": part1})
    with pytest.raises(ConfigRejected):  # stale part 2
        stub.load(root, {"twp.part-1.yaml": part1, "twp.part-2.yaml": b"routes: []\n"})
    assert stub.config_hash == sha256_hex(ROOT)
    assert stub.load(root, {"twp.part-1.yaml": part1, "twp.part-2.yaml": part2})
    assert stub.config_hash == sha256_hex(root)
    assert [r["id"] for r in stub.document["routes"]] == ["r1", "r2"]
    small = StubDataPlane(TOKEN, mounted_parts=1)
    with pytest.raises(ConfigRejected):  # more parts than the pod mounts
        small.load(root, {"twp.part-1.yaml": part1, "twp.part-2.yaml": part2})


def test_fleet_registers_service_pods_and_endpoints_and_follows_pokes() -> None:
    with FakeApiServer() as server, DataPlaneFleet.start(2, TOKEN) as fleet:
        assert {s.host for s in fleet} == {"127.0.0.2", "127.0.0.3"} and len({s.port for s in fleet}) == 1
        fleet.register(server, "gateway-system", "titanium", probe_interval=0.05)
        svc = server.get_object("Service", "gateway-system", "titanium")
        assert svc["spec"]["selector"] == DATA_PLANE_LABELS
        pods = server.list_objects("Pod", "gateway-system")
        assert len(pods) == 2 and all(p["metadata"]["labels"] == DATA_PLANE_LABELS for p in pods)
        (eps,) = server.list_objects("EndpointSlice", "gateway-system")
        assert eps["metadata"]["labels"]["kubernetes.io/service-name"] == "titanium"
        assert {p["name"]: p["port"] for p in eps["ports"]}["admin"] == fleet.port
        assert [e["conditions"]["ready"] for e in eps["endpoints"]] == [False, False]  # /readyz 503: no config yet

        fleet.follow(server, "gateway-system", "titanium", sync_period=60)
        server.put_object({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "titanium", "namespace": "gateway-system"},
                           "data": {"twp.yaml": ROOT.decode()}})
        time.sleep(0.3)
        assert all(s.config_hash is None for s in fleet)  # the kubelet has not refreshed the volume yet
        for s in fleet:  # what the controller does after a write
            server.update_object("Pod", "gateway-system", s.name, lambda p: p["metadata"].setdefault(
                "annotations", {}).update({"gateway.titaniumproxy.com/config-poke": sha256_hex(ROOT)}))
        _wait(lambda: all(s.config_hash == sha256_hex(ROOT) for s in fleet))
        _wait(lambda: all(e["conditions"]["ready"] for e in
                          server.get_object("EndpointSlice", "gateway-system", "titanium-abcde")["endpoints"]))
        pod0 = server.get_object("Pod", "gateway-system", fleet[0].name)
        assert pod0["metadata"]["annotations"]["gateway.titaniumproxy.com/config-poke"] == sha256_hex(ROOT)
        for s in fleet:
            r = requests.get(f"http://{s.host}:{fleet.port}/version", headers=_auth(), timeout=5)
            assert r.json()["config_hash"] == sha256_hex(ROOT)

        fleet.set_ready(1, False)
        _wait(lambda: [e["conditions"]["ready"] for e in server.get_object(
            "EndpointSlice", "gateway-system", "titanium-abcde")["endpoints"]] == [True, False])
        fleet.remove(1)
        assert len(server.get_object("EndpointSlice", "gateway-system", "titanium-abcde")["endpoints"]) == 1
        assert server.get_object("Pod", "gateway-system", fleet[1].name) is None


def test_follow_without_pod_sees_every_change(stub: StubDataPlane) -> None:
    with FakeApiServer() as server:
        stub.follow(server, "default", "titanium", interval=0.02)
        server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "titanium"},
                           "data": {"twp.yaml": ROOT.decode()}})
        _wait(lambda: stub.config_hash == sha256_hex(ROOT))
        server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "titanium"},
                           "data": {"twp.yaml": "routes: [unclosed"}})
        time.sleep(0.2)
        assert stub.config_hash == sha256_hex(ROOT) and stub.rejected >= 1


def test_slow_and_failing_pod(stub: StubDataPlane) -> None:
    stub.load(ROOT)
    stub.fail_status = 500
    assert requests.get(f"{stub.url}/version", headers=_auth(), timeout=5).status_code == 500
    stub.fail_status = None
    stub.delay = 0.5
    with pytest.raises(requests.Timeout):
        requests.get(f"{stub.url}/readyz", timeout=0.2)
