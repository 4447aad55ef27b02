"""The data plane is what ``--data-plane-service`` serves, whatever labels its pods carry (a data
plane from raw manifests or another chart): its pods are poked, stamped and probed, and
Programmed turns True; pods that only look like a data plane are left alone. Through the real
controller against the FakeApiServer, with the chart's RBAC."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from tests.integration.conftest import LISTENERS, Env, condition, make_tls_secret, running, wait_for
from tests.support.apiserver import FakeApiServer
from tests.support.dataplane import DATA_PLANE_LABELS, DataPlaneFleet
from tests.support.release import Release, seed_release

POKE = "gateway.titaniumproxy.com/config-poke"
EDGE = {"app": "edge-proxy", "tier": "edge"}  # nothing of the chart's labels
HTTPS = [{"name": "http", "port": 80, "protocol": "HTTP"},
         {"name": "https", "port": 443, "protocol": "HTTPS", "hostname": "shop.example.com",
          "tls": {"mode": "Terminate", "certificateRefs": [{"name": "shop-tls"}]}}]


@pytest.fixture
def edge() -> Iterator[Env]:
    """The release's data-plane Service and Deployment, with pods labelled ``EDGE``; the stubs
    reload the mounted config only when their Pod changes (a poke) or once a minute."""
    server = FakeApiServer(bookmark_interval=0.5).start()
    rel = Release()
    seed_release(server, rel)
    fleet = DataPlaneFleet.start(2, token=rel.token, service=rel.data_plane)
    fleet.register(server, rel.namespace, rel.data_plane, deployment=rel.data_plane, labels=EDGE)
    fleet.follow(server, rel.namespace, rel.config_map, sync_period=60)
    with running(server, rel, fleet) as e:
        yield e


def _stray(env: Env, name: str, labels: dict[str, str], ip: str) -> None:
    """A pod of the namespace that the data-plane Service does not serve."""
    env.server.put_object({"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": name, "namespace": env.rel.namespace, "labels": labels},
                           "spec": {"containers": [{"name": "c", "image": "i"}]},
                           "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}})


def _poked(env: Env) -> set[str]:
    return {r.name for r in env.server.requests("patch", "pods")
            if POKE in ((r.body or {}).get("metadata") or {}).get("annotations", {})}


def test_a_data_plane_with_other_labels_is_poked_rolled_and_confirmed(edge: Env) -> None:
    env = edge
    _stray(env, "titanium-lookalike", {**DATA_PLANE_LABELS, "app.kubernetes.io/instance": env.rel.name}, "127.0.0.99")
    _stray(env, "controller-0", {"app.kubernetes.io/component": "controller"}, "127.0.0.98")
    env.service("api")
    env.gateway()
    env.route()
    env.start_controller()
    # the stubs reload on a poke only (their sync period is a minute): Programmed in seconds
    # means the Service's pods were poked, and their listener stamp was read from the Pods
    env.wait_programmed(timeout=20)
    assert _poked(env) == {s.name for s in env.fleet}
    h = hashlib.sha256(env.root_config().encode()).hexdigest()
    assert all(s.config_hash == h for s in env.fleet)
    # a listener change rolls the Deployment: Programmed waits for pods with the new stamp
    assert env.rollout is not None
    env.rollout.hold()
    env.server.put_object(make_tls_secret("shop-tls", "apps"))
    env.gateway(listeners=HTTPS)
    c = wait_for(lambda: (c := condition(env.get("Gateway", "apps", "web"), "Programmed")) and "rollout" in
                 c.get("message", "") and c, timeout=10, what="Pending: awaiting the rollout")
    assert c["status"] == "False" and "not in the controller's pod cache" not in c["message"]
    env.rollout.release()
    env.wait_programmed(timeout=15)
    assert all(env.must("Pod", env.rel.namespace, s.name)["metadata"]["annotations"][LISTENERS]
               == "8080/http,8443/https" for s in env.fleet)
    assert "titanium-lookalike" not in _poked(env) and "controller-0" not in _poked(env)
    assert not [r for r in env.server.requests("patch", "pods") if r.status >= 400]


def test_endpoints_without_target_ref_of_a_service_without_selector(edge: Env) -> None:
    env = edge
    ns, svc = env.rel.namespace, env.rel.data_plane
    # raw manifests: a selector-less Service and a hand-made EndpointSlice with addresses only
    env.server.update_object("Service", ns, svc, lambda s: s["spec"].pop("selector", None))
    sl = env.must("EndpointSlice", ns, f"{svc}-abcde")
    for ep in sl["endpoints"]:
        ep.pop("targetRef", None)
    env.server.put_object(sl)
    env.service("api")
    env.gateway()
    env.route()
    env.start_controller()
    env.wait_programmed(timeout=20)
    assert _poked(env) == {s.name for s in env.fleet}


def test_the_chart_labels_still_work_and_no_ready_endpoint_says_why(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    env.start_controller()
    env.wait_programmed()
    assert _poked(env) == {s.name for s in env.fleet}
    for i in range(len(env.fleet)):
        env.fleet.set_ready(i, False)
    svc = f"{env.rel.namespace}/{env.rel.data_plane}"
    expected = (f"no ready data-plane endpoint: none of the 2 endpoints of the data-plane Service {svc} "
                f"is ready (pod {env.fleet[0].name}, pod {env.fleet[1].name}); a data-plane pod turns "
                "ready once it has loaded a config")
    # The two pods turn unready one after the other, so a reconcile in between may report a
    # passing state first: wait for the state both changes lead to.
    c = wait_for(lambda: (c := condition(env.get("Gateway", "apps", "web"), "Programmed"))
                 and c["status"] == "False" and c["message"] == expected and c, timeout=20,
                 what="Programmed False naming both unready endpoints")
    assert c["reason"] == "Pending"
    for i in range(len(env.fleet)):
        env.fleet.remove(i)
    wait_for(lambda: "has no endpoints: no running pod matches its selector app.kubernetes.io/component=data-plane,"
             in (condition(env.get("Gateway", "apps", "web"), "Programmed") or {}).get("message", ""),
             timeout=20, what="the selector named")
