from __future__ import annotations

from typing import Any

import requests
import responses
from responses import matchers

from titanium_gateway.metrics import Registry
from titanium_gateway.prober.prober import (
    POD_FIELDS_USED,
    Endpoint,
    Prober,
    awaiting_rollout,
    ready_endpoints,
)
from titanium_gateway.writers.deployment import LISTENERS_ANNOTATION

TOKEN = "admin-token"
H = "a" * 64
OLD = "b" * 64
AUTH = [matchers.header_matcher({"Authorization": f"Bearer {TOKEN}"})]


def slice_(eps: list[dict[str, Any]], svc: str = "titanium", ns: str = "gw") -> dict[str, Any]:
    return {"metadata": {"name": f"{svc}-x", "namespace": ns, "labels": {"kubernetes.io/service-name": svc}},
            "endpoints": eps}


def ep(addr: str, pod: str, ready: bool | None = True, terminating: bool = False) -> dict[str, Any]:
    cond: dict[str, Any] = {"terminating": terminating}
    if ready is not None:
        cond["ready"] = ready
    return {"addresses": [addr], "conditions": cond, "targetRef": {"kind": "Pod", "name": pod}}


def test_ready_endpoints_from_slices() -> None:
    slices = [slice_([ep("10.0.0.1", "p1"), ep("10.0.0.2", "p2", ready=False), ep("10.0.0.3", "p3", ready=None),
                      ep("10.0.0.4", "p4", terminating=True)]),
              slice_([ep("10.9.9.9", "other")], svc="else"), slice_([ep("10.8.8.8", "x")], ns="elsewhere")]
    assert ready_endpoints(slices, "gw", "titanium") == [Endpoint("p1", "10.0.0.1"), Endpoint("p3", "10.0.0.3")]


def prober(reg: Registry | None = None) -> Prober:
    return Prober(9901, TOKEN, timeout=0.5, attempts=2, retry_wait=0.0, registry=reg or Registry())


def add_pod(rsps: responses.RequestsMock, addr: str, h: str, ready: int = 200) -> None:
    rsps.get(f"http://{addr}:9901/readyz", status=ready)
    rsps.get(f"http://{addr}:9901/version", json={"version": "7.1", "config_hash": h}, match=AUTH)


@responses.activate
def test_confirmed_only_when_every_ready_pod_reports_the_hash() -> None:
    add_pod(responses.mock, "10.0.0.1", H)
    add_pod(responses.mock, "10.0.0.2", H)
    reg = Registry()
    r = prober(reg).probe([Endpoint("p1", "10.0.0.1"), Endpoint("p2", "10.0.0.2")], H)
    assert r.confirmed_hash == H and r.message == ""
    assert reg.get("titanium_probe_results_total").value(result="confirmed") == 1  # type: ignore[union-attr]
    # /version got the bearer token, /readyz did not need it
    v = [c.request for c in responses.calls if str(c.request.url).endswith("/version")]
    assert all(req.headers["Authorization"] == f"Bearer {TOKEN}" for req in v)


@responses.activate
def test_stale_pod_is_named_in_the_message() -> None:
    add_pod(responses.mock, "10.0.0.1", H)
    add_pod(responses.mock, "10.0.0.2", OLD)
    r = prober().probe([Endpoint("p1", "10.0.0.1"), Endpoint("p2", "10.0.0.2")], H)
    assert r.confirmed_hash is None
    assert "p2" in r.message and OLD[:12] in r.message and H[:12] in r.message


@responses.activate
def test_not_ready_and_unauthorized() -> None:
    add_pod(responses.mock, "10.0.0.1", H, ready=503)
    r = prober().probe([Endpoint("p1", "10.0.0.1")], H)
    assert r.confirmed_hash is None and "503" in r.message
    responses.reset()
    responses.get("http://10.0.0.1:9901/readyz", status=200)
    responses.get("http://10.0.0.1:9901/version", status=401)
    assert "401" in prober().probe([Endpoint("p1", "10.0.0.1")], H).message


@responses.activate
def test_connection_errors_are_retried_briefly_then_reported() -> None:
    responses.get("http://10.0.0.1:9901/readyz", body=requests.ConnectionError("refused"))
    responses.get("http://10.0.0.1:9901/readyz", status=200)
    responses.get("http://10.0.0.1:9901/version", json={"config_hash": H})
    assert prober().probe([Endpoint("p1", "10.0.0.1")], H).confirmed_hash == H
    responses.reset()
    responses.get("http://10.0.0.1:9901/readyz", body=requests.ConnectionError("refused"))
    r = prober().probe([Endpoint("p1", "10.0.0.1")], H)
    assert r.confirmed_hash is None and "unreachable" in r.message
    assert len([c for c in responses.calls if str(c.request.url).endswith("/readyz")]) == 2  # attempts=2


def test_no_ready_endpoints_is_pending() -> None:
    r = prober().probe([], H)
    assert r.confirmed_hash is None and "no ready" in r.message


@responses.activate
def test_token_not_in_message() -> None:
    responses.get("http://10.0.0.1:9901/readyz", status=200)
    responses.get("http://10.0.0.1:9901/version", body="not json")
    r = prober().probe([Endpoint("p1", "10.0.0.1")], H)
    assert "not JSON" in r.message and TOKEN not in r.message


def test_pods_are_probed_in_parallel() -> None:
    import threading
    import time

    class SlowProber(Prober):
        def __init__(self) -> None:
            super().__init__(9901, TOKEN, registry=Registry())
            self.active = 0
            self.peak = 0
            self.lock = threading.Lock()

        def check(self, ep: Endpoint, expected: str) -> str | None:
            with self.lock:
                self.active += 1
                self.peak = max(self.peak, self.active)
            time.sleep(0.2)
            with self.lock:
                self.active -= 1
            return None

    p = SlowProber()
    t0 = time.monotonic()
    assert p.probe([Endpoint(f"p{i}", f"10.0.0.{i}") for i in range(8)], H).confirmed_hash == H
    assert time.monotonic() - t0 < 1.0 and p.peak > 1


def pod(name: str, ip: str | None, stamp: str | None = None, *, ips: tuple[str, ...] = (),
        deleting: bool = False) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": "gw",
                          "annotations": {} if stamp is None else {LISTENERS_ANNOTATION: stamp}}
    if deleting:
        md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status: dict[str, Any] = {}
    if ip:
        status["podIP"] = ip
    if ips:
        status["podIPs"] = [{"ip": i} for i in ips]
    return {"metadata": md, "status": status}


def bare(addr: str) -> dict[str, Any]:
    """An endpoint after an informer transform dropped targetRef and nodeName."""
    return {"addresses": [addr], "conditions": {"ready": True}}


def test_endpoints_map_to_pods_by_address_without_target_ref() -> None:
    slices = [slice_([bare("10.0.0.1"), bare("fd00::2"), bare("10.0.0.3")])]
    pods = [pod("titanium-a", "10.0.0.1", "8080/http"), pod("titanium-b", None, "", ips=("10.0.0.2", "fd00::2")),
            pod("old", "10.0.0.1", "8080/http", deleting=True)]
    eps = ready_endpoints(slices, "gw", "titanium", pods)
    assert [(e.pod, e.address, e.listeners) for e in eps] == [
        ("10.0.0.3", "10.0.0.3", None), ("titanium-a", "10.0.0.1", "8080/http"), ("titanium-b", "fd00::2", "")]
    # with targetRef but no Pod address in the cache: by name
    eps = ready_endpoints([slice_([ep("10.0.0.9", "p9")])], "gw", "titanium", [pod("p9", None, "8080/http")])
    assert [(e.pod, e.listeners) for e in eps] == [("p9", "8080/http")]
    # the Pod fields this relies on are declared for the informer transform
    assert {"status.podIP", "status.podIPs[].ip", "metadata.annotations[gateway.titaniumproxy.com/listeners]"} \
        <= set(POD_FIELDS_USED)


def test_pod_created_before_the_listener_stamp_awaits_the_rollout() -> None:
    slices = [slice_([bare("10.0.0.1"), bare("10.0.0.2")])]
    new = "8080/http,8443/https"
    eps = ready_endpoints(slices, "gw", "titanium", [pod("p-new", "10.0.0.1", new), pod("p-old", "10.0.0.2", "8080/http")])
    msg = awaiting_rollout(eps, new)
    assert "p-old" in msg and "10.0.0.2" in msg and "rollout" in msg and "p-new" not in msg
    assert awaiting_rollout(eps, "8080/http").startswith("pod p-new ")
    eps = ready_endpoints(slices, "gw", "titanium", [pod("p-new", "10.0.0.1", new), pod("p-2", "10.0.0.2", new)])
    assert awaiting_rollout(eps, new) == ""
    # a pod without the stamp was created from the chart's template: the empty listener set
    eps = ready_endpoints(slices, "gw", "titanium", [pod("a", "10.0.0.1"), pod("b", "10.0.0.2")])
    assert awaiting_rollout(eps, "") == ""
    assert "pod a (10.0.0.1) awaits the data-plane rollout" in awaiting_rollout(eps, "8080/http")
    assert "(and 1 more)" in awaiting_rollout(eps, "8080/http")
    # an endpoint whose Pod is not in the cache is not confirmed either
    eps = ready_endpoints(slices, "gw", "titanium", [pod("a", "10.0.0.1", new)])
    assert "10.0.0.2" in awaiting_rollout(eps, new)
