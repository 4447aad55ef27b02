"""A data plane per Gateway (chart value ``dataPlane.mode=perGateway``) on a real control plane:
the controller creates each Gateway's Deployment, Service, ConfigMaps and Secrets; the pod
runner (tools/podrunner) runs the data-plane pods (the reference data plane) and echo backends
and gives the LoadBalancer Services addresses; the real garbage collector deletes a Gateway's
data plane with it. The API server's audit log is the witness of what the controller wrote.

- two Gateways (internal and public) get different addresses, each answers its own route, and a
  request for the internal route sent to the public address gets 404;
- a listener on 8080 beside 80: the Gateway's Service exposes both ports, its route answers on
  both;
- a change to one Gateway's route writes that Gateway's ConfigMap only;
- deleting a Gateway removes its data plane (owner references, the garbage collector); a Gateway
  that moves to another class loses it (the controller deletes it).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.cluster.conftest import GW, KubeSession, condition, wait_for
from tests.support.chartrelease import ChartRelease
from tests.support.kubeapi import KubeApiError
from tests.support.kubecluster import REPO, describe, describe_resource

pytestmark = pytest.mark.timeout(900)

ECHO = "gcr.io/k8s-staging-gateway-api/echo-basic:v1"
#: the pod runner's ranges: apart from the stub kubelet's addresses (198.18.1.x up) and the
#: load-balancer addresses other tests write by hand (198.18.250.x)
POD_RANGE = "198.18.230.1-198.18.239.254"
LB_RANGE = "198.18.251.1-198.18.251.254"


@dataclass
class PlaneEnv:
    kube: KubeSession
    release: ChartRelease
    apps: str

    @property
    def api(self) -> Any:
        return self.kube.cluster.api

    @property
    def class_name(self) -> str:
        return self.release.rel.gateway_class

    def base(self, gateway: str) -> str:
        return f"{gateway}-{self.class_name}"

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.api.put_object(obj)

    def backend(self, name: str) -> None:
        labels = {"app": name}
        self.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": self.apps},
                    "spec": {"selector": labels, "ports": [{"name": "http", "port": 8080, "targetPort": 3000}]}})
        self.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": self.apps},
                    "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
                        "metadata": {"labels": labels}, "spec": {"containers": [{
                            "name": "echo", "image": ECHO, "ports": [{"name": "http", "containerPort": 3000}],
                            "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                                    {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}],
                            "readinessProbe": {"httpGet": {"path": "/", "port": 3000}, "periodSeconds": 2}}]}}}})

    def gateway(self, name: str) -> None:
        self.apply({"apiVersion": GW, "kind": "Gateway", "metadata": {"name": name, "namespace": self.apps},
                    "spec": {"gatewayClassName": self.class_name, "infrastructure": {"labels": {"team": name}},
                             "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}})

    def route(self, name: str, gateway: str, host: str, backend: str, paths: tuple[str, ...] = ("/",)) -> None:
        self.apply({"apiVersion": GW, "kind": "HTTPRoute", "metadata": {"name": name, "namespace": self.apps},
                    "spec": {"parentRefs": [{"name": gateway}], "hostnames": [host],
                             "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": p}} for p in paths],
                                        "backendRefs": [{"name": backend, "port": 8080}]}]}})

    def programmed_address(self, gateway: str) -> str:
        gw = self.api.get_object("Gateway", self.apps, gateway) or {}
        cond = condition(gw, "Programmed") or {}
        if cond.get("status") != "True":
            return ""
        return next((a["value"] for a in (gw.get("status") or {}).get("addresses") or []
                     if a.get("value", "").startswith("198.18.251.")), "")

    def config(self, gateway: str) -> str:
        cm = self.api.get_object("ConfigMap", self.apps, self.base(gateway)) or {}
        return str((cm.get("data") or {}).get("twp.yaml", ""))


def _settled(cluster: Any, user: str, quiet: float = 3.0, timeout: float = 60.0) -> None:
    """Until the controller has written nothing (but its Lease) for ``quiet`` seconds."""
    import time

    end = time.monotonic() + timeout
    while True:
        mark = cluster.audit.mark()
        time.sleep(quiet)
        if not [ev for ev in cluster.audit.writes(mark, user=user) if describe_resource(ev) != "leases"]:
            return
        assert time.monotonic() < end, "the controller kept writing"


def _get(url: str, host: str) -> requests.Response:
    http = requests.Session()
    http.trust_env = False
    return http.get(url, headers={"Host": host}, timeout=5)


def _answer(address: str, host: str, path: str = "/") -> tuple[int, str]:
    """(status, the echo pod's name or ""); (0, "") when the connection fails (a port with no
    ready endpoint yet: the load balancer closes the connection)."""
    try:
        r = _get(f"http://{address}{path}", host)
    except requests.ConnectionError:
        return 0, ""
    pod = ""
    if r.status_code == 200:
        with contextlib.suppress(ValueError):
            pod = str(json.loads(r.text).get("pod", ""))
    return r.status_code, pod


@pytest.fixture
def planes(kube: KubeSession, tmp_path: Path) -> Iterator[PlaneEnv]:
    cluster = kube.cluster
    name = kube.next_name("pg")
    mark = cluster.audit.mark()
    image = {"repository": "podrunner.local/titanium-reference", "tag": "working-tree", "pullPolicy": "Never"}
    release = ChartRelease.install(cluster, kube.helm, name, workdir=tmp_path / "release",
                                   values={"dataPlane": {"mode": "perGateway", "replicas": 1, "image": image}})
    apps = f"{name}-apps"
    cluster.api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": apps}})
    state = tmp_path / "pods"
    log = open(tmp_path / "podrunner.log", "ab")  # noqa: SIM115 - the child holds it
    runner = subprocess.Popen(
        ["nsenter", f"--net=/run/netns/{cluster.netns}", "--", sys.executable, "-m", "tools.podrunner",
         "--images", str(REPO / "hack/kube/dev-images.yaml"), "--state-dir", str(state),
         "--netns-prefix", f"tgq-{os.getpid() % 100000}-", "--pod-range", POD_RANGE, "--lb-range", LB_RANGE,
         "--sync-period", "10", "--backoff", "1"],
        env={**os.environ, "KUBECONFIG": str(cluster.admin_kubeconfig), "PYTHONPATH": str(REPO)},
        cwd=str(REPO), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    log.close()
    env = PlaneEnv(kube, release, apps)
    try:
        yield env
    finally:
        forbidden = cluster.audit.forbidden(mark, user=release.service_account_user)
        logs = {p.identity: p.log() for p in release.processes}
        release.uninstall()
        with contextlib.suppress(KubeApiError):
            cluster.api.delete("Namespace", None, apps)
        # the pods of the namespace: stopped by the pod runner before it goes
        with contextlib.suppress(Exception):
            wait_for(lambda: not cluster.api.list("Pod", apps), 60, 0.5, "the test's pods gone")
        runner.send_signal(signal.SIGTERM)
        try:
            runner.wait(30)
        except subprocess.TimeoutExpired:
            runner.kill()
        if forbidden:
            print("\n".join(f"===== {k}\n{v[-4000:]}" for k, v in logs.items()))
        assert not forbidden, "the API server answered 403 to the controller:\n" + "\n".join(
            describe(ev) for ev in forbidden[:20])


def test_each_gateway_has_its_own_data_plane_address_and_routes(planes: PlaneEnv, kube: KubeSession) -> None:
    env = planes
    cluster = kube.cluster
    for b in ("billing", "www"):
        env.backend(b)
    env.gateway("internal")
    env.gateway("public")
    env.route("billing", "internal", "billing.internal.example", "billing")
    env.route("www", "public", "www.example.com", "www")
    ctrl = env.release.start_controller("ctrl-a", health_port=next(kube.ports))

    # each Gateway: its own Deployment, Service and address, Programmed by its own pods
    addresses = {}
    for gw in ("internal", "public"):
        addresses[gw] = wait_for(lambda gw=gw: env.programmed_address(gw), 240, 1,
                                 f"Gateway {gw} Programmed with a load-balancer address ({ctrl.log()[-2000:]})")
    assert addresses["internal"] != addresses["public"]
    dep = env.api.get_object("Deployment", env.apps, env.base("internal"))
    owner = env.api.get_object("Gateway", env.apps, "internal")
    assert dep["metadata"]["ownerReferences"] == [{"apiVersion": GW, "kind": "Gateway", "name": "internal",
                                                   "uid": owner["metadata"]["uid"], "controller": True}]
    assert dep["metadata"]["labels"]["team"] == "internal"  # spec.infrastructure.labels
    assert dep["metadata"]["labels"]["gateway.networking.k8s.io/gateway-name"] == "internal"

    # each address answers its own Gateway's routes only
    assert wait_for(lambda: _answer(addresses["internal"], "billing.internal.example")[0] == 200, 60, 1,
                    "the internal route through the internal address")
    status, pod = _answer(addresses["internal"], "billing.internal.example")
    assert pod.startswith("billing-")
    assert _answer(addresses["public"], "billing.internal.example")[0] == 404
    assert wait_for(lambda: _answer(addresses["public"], "www.example.com")[1].startswith("www-"), 60, 1,
                    "the public route through the public address")
    assert _answer(addresses["internal"], "www.example.com")[0] == 404

    # a change to one Gateway's routes writes only that Gateway's ConfigMap
    mark = cluster.audit.mark()
    env.route("billing", "internal", "billing.internal.example", "billing", paths=("/", "/invoices"))
    wait_for(lambda: "/invoices" in env.config("internal"), 60, 0.5, "the edited route in the internal ConfigMap")
    wait_for(lambda: _answer(addresses["internal"], "billing.internal.example", "/invoices")[0] == 200, 60, 1,
             "the edited route served")
    user = env.release.service_account_user
    writes = [ev for ev in cluster.audit.writes(mark, user=user, resource="configmaps")]
    written = {(ev["objectRef"].get("namespace"), ev["objectRef"].get("name")) for ev in writes}
    assert written == {(env.apps, env.base("internal"))}, sorted(written)
    assert "/invoices" not in env.config("public")

    # a new leader (a restart with nothing changed) writes nothing: it reads each Gateway's
    # objects once by name and finds them as they should be
    _settled(cluster, user)
    assert ctrl.stop() == 0  # SIGTERM: the Lease is released
    mark = cluster.audit.mark()
    second = env.release.start_controller("ctrl-b", health_port=next(kube.ports))
    wait_for(second.is_leader, 60, 0.5, "ctrl-b leads")
    wait_for(lambda: second.metric("controller_runtime_reconcile_total", result="success") >= 2, 60, 0.5,
             "ctrl-b reconciled")
    _settled(cluster, user)
    writes = [ev for ev in cluster.audit.writes(mark, user=user) if describe_resource(ev) not in ("leases",)]
    assert not writes, "a restart with nothing changed wrote:\n" + "\n".join(describe(ev) for ev in writes)

    # a listener on 8080 beside 80: the Gateway's Service exposes both (8080 on container port
    # 8080, 80 on the next free one, 8081), the pods roll to bind them, the route answers on both
    env.api.patch("Gateway", env.apps, "public", {"spec": {"listeners": [
        {"name": "http", "port": 80, "protocol": "HTTP"}, {"name": "alt", "port": 8080, "protocol": "HTTP"}]}})

    def ports(kind: str) -> list[Any]:
        obj = env.api.get_object(kind, env.apps, env.base("public")) or {}
        if kind == "Service":
            return sorted((p["port"], p["targetPort"]) for p in obj["spec"]["ports"])
        (container, *_) = obj["spec"]["template"]["spec"]["containers"]
        return sorted((p["name"], p["containerPort"]) for p in container["ports"] if p["name"] != "admin")

    wait_for(lambda: ports("Service") == [(80, "http-80"), (8080, "http-8080")], 60, 0.5, "the public Service's ports")
    assert ports("Deployment") == [("http-80", 8081), ("http-8080", 8080)]
    wait_for(lambda: _answer(f"{addresses['public']}:8080", "www.example.com")[1].startswith("www-"), 180, 1,
             "the public route through port 8080")
    assert _answer(addresses["public"], "www.example.com")[1].startswith("www-")
    mark = cluster.audit.mark()

    # deleting a Gateway deletes its data plane: the garbage collector follows the owner references
    env.api.delete("Gateway", env.apps, "internal")
    base = env.base("internal")

    def gone() -> bool:
        return all(env.api.get_object(kind, env.apps, name) is None for kind, name in (
            ("Deployment", base), ("Service", base), ("ConfigMap", base), ("Secret", f"{base}-tls"),
            ("Secret", f"{base}-admin")))

    wait_for(gone, 120, 1, "the internal Gateway's data plane deleted with it")
    deletes = [ev for ev in cluster.audit.writes(mark, user=user) if ev.get("verb") == "delete"]
    assert deletes == [], [describe(ev) for ev in deletes]  # (the garbage collector did it, not the controller)
    assert env.api.get_object("Deployment", env.apps, env.base("public")) is not None
    assert _answer(addresses["public"], "www.example.com")[0] == 200

    # a Gateway that is no longer ours (another class) keeps existing: the controller deletes its data plane
    env.api.patch("Gateway", env.apps, "public", {"spec": {"gatewayClassName": "someone-else"}})
    base = env.base("public")
    wait_for(lambda: env.api.get_object("Deployment", env.apps, base) is None
             and env.api.get_object("Service", env.apps, base) is None
             and env.api.get_object("ConfigMap", env.apps, base) is None, 120, 1,
             "the data plane of a Gateway no longer ours deleted by the controller")
