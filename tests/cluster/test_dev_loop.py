"""``make dev`` end to end, on a cluster of its own (``hack/kube/dev.sh DIR``; docs/development.md):
the pod runner runs the chart's controller (this working tree), the reference data plane and the
quick start's echo backends; a request through the Gateway's address answers 200 from a backend;
a route edit shows in the next requests; after an API server restart and after a crash of the
controller (restarted by the pod runner, its previous log kept) route edits are served again; a
second ``make dev`` restarts the controller, keeps the edited route, and the new controller
writes nothing (the API server's audit log); a values file of the user's (``DEV_VALUES``) is
applied and kept by the next run without it, and the summary names a listener that cannot serve;
a gRPC call through the Gateway's address reaches the gRPC backend by examples/grpc's GRPCRoute."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.cluster.conftest import KubeSession, wait_for
from tests.support.kubecluster import REPO, LocalCluster, describe, describe_resource
from titanium_gateway.render.features import SUPPORTED_FEATURES

pytestmark = pytest.mark.timeout(900)

DEV_DIR = Path(os.environ.get("TITANIUM_DEV_TEST_DIR") or REPO / ".cache" / "kube" / "dev-test")
NS = "gateway-system"
CONTROLLER = "system:serviceaccount:gateway-system:titanium-gateway-controller"
SELECTOR = "app.kubernetes.io/component=controller,app.kubernetes.io/instance=titanium-gateway"
#: the network namespace of the host, taken at import (before a test thread enters a cluster's)
_HOST_NET = os.open("/proc/self/ns/net", os.O_RDONLY)


def on_host(*cmd: str, timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``cmd`` in the host's network namespace, as a developer runs it."""
    return subprocess.run(["nsenter", f"--net=/proc/self/fd/{_HOST_NET}", "--", *cmd], pass_fds=(_HOST_NET,),
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHON": sys.executable, **(env or {})})


def make_dev(**env: str) -> subprocess.CompletedProcess[str]:
    p = on_host(str(REPO / "hack/kube/dev.sh"), str(DEV_DIR), timeout=600, env=env)
    assert p.returncode == 0, f"hack/kube/dev.sh failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-6000:]}"
    return p


@pytest.fixture(scope="module")
def dev(kube: KubeSession) -> Iterator[tuple[LocalCluster, str]]:
    """make dev on a cluster of its own (the tier's toolchain checks come with ``kube``)."""
    DEV_DIR.parent.mkdir(parents=True, exist_ok=True)
    on_host(str(REPO / "hack/kube/down.sh"), str(DEV_DIR), timeout=120)  # a cluster an earlier run left
    (DEV_DIR / "dev" / "values-files").unlink(missing_ok=True)  # (values an earlier run remembered)
    try:
        out = make_dev().stderr
        yield LocalCluster(DEV_DIR), out
    finally:
        if not os.environ.get("TITANIUM_CLUSTER_KEEP"):
            on_host(str(REPO / "hack/kube/down.sh"), str(DEV_DIR), timeout=120)


def answer(cluster: LocalCluster, address: str, path: str = "/api/items") -> tuple[int, dict[str, Any]]:
    """A request to the Gateway's address, from inside the dev cluster's network."""
    http = requests.Session()
    http.trust_env = False
    with cluster.inside():
        try:
            r = http.get(f"http://{address}{path}", headers={"Host": "shop.example.com"}, timeout=5)
        except requests.RequestException:
            return 0, {}
    try:
        return r.status_code, r.json()
    except ValueError:
        return r.status_code, {}


def served_by(cluster: LocalCluster, address: str, prefix: str) -> bool:
    """Some of a few requests to /api are answered by a pod whose name starts with ``prefix``
    (``api`` takes 90 % of them, ``api-canary`` 10 %)."""
    for _ in range(5):
        code, body = answer(cluster, address)
        if code == 200 and str(body.get("pod", "")).startswith(prefix):
            return True
    return False


def send_api_to(cluster: LocalCluster, backend: str) -> None:
    with cluster.inside():
        cluster.api.patch("HTTPRoute", "apps", "shop", [
            {"op": "replace", "path": "/spec/rules/0/backendRefs", "value": [{"name": backend, "port": 8080}]}],
            type="json")


def controller_pod(cluster: LocalCluster) -> dict[str, Any]:
    with cluster.inside():
        pods = [p for p in cluster.api.list("Pod", NS, label_selector=SELECTOR)
                if not p["metadata"].get("deletionTimestamp")]
    assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
    return pods[0]


def settled(cluster: LocalCluster, quiet: float = 3.0, timeout: float = 60.0) -> None:
    """Until the controller has written nothing but its Lease for ``quiet`` seconds."""
    end = time.monotonic() + timeout
    while True:
        mark = cluster.audit.mark()
        time.sleep(quiet)
        if not [e for e in cluster.audit.writes(mark, user=CONTROLLER) if describe_resource(e) != "leases"]:
            return
        assert time.monotonic() < end, "the controller kept writing"


def controller_state(cluster: LocalCluster) -> tuple[int, bool]:
    """(restartCount, ready) of the controller container ((-1, False) while it has no status)."""
    statuses = (controller_pod(cluster).get("status") or {}).get("containerStatuses") or []
    return (statuses[0].get("restartCount", 0), bool(statuses[0].get("ready"))) if statuses else (-1, False)


def process_of(pod_name: str) -> int:
    """The pid of the controller process the pod runner started for ``pod_name``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"titanium_gateway" in cmdline and f"POD_NAME={pod_name}".encode() in environ:
            return int(entry.name)
    raise AssertionError(f"no controller process for pod {pod_name}")


def test_make_dev_serves_the_quick_start_and_follows_edits_restarts_and_crashes(dev: tuple[LocalCluster, str]) -> None:
    cluster, out = dev
    assert "curl -H 'Host: shop.example.com' http://" in out and ": 200 from pod api" in out, out[-2000:]
    address = (DEV_DIR / "dev" / "gateway-address").read_text().strip()
    assert address.startswith("198.18.250."), address
    code, body = answer(cluster, address, "/")
    assert code == 200 and body["pod"].startswith("frontend-") and body["host"] == "shop.example.com"

    # a route edit shows in the next requests
    send_api_to(cluster, "frontend")
    wait_for(lambda: served_by(cluster, address, "frontend-"), 30, 0.2, "/api answered by frontend")

    # an API server restart (hack/kube/restart.sh: about 5 s, not the API server's 60 s wait for
    # its open watches), then an edit: served again
    t0 = time.monotonic()
    cluster.restart("kube-apiserver")
    assert time.monotonic() - t0 < 30, "restart.sh waited for the old API server's shutdown timeout"
    wait_for(lambda: controller_state(cluster)[1], 120, 1, "the controller Ready again")
    send_api_to(cluster, "api")
    wait_for(lambda: served_by(cluster, address, "api-"), 120, 0.5, "/api answered by api after the restart")

    # the controller crashes: the pod runner restarts it, and keeps the log of the one that died
    pod = controller_pod(cluster)
    os.kill(process_of(pod["metadata"]["name"]), signal.SIGKILL)
    wait_for(lambda: (s := controller_state(cluster))[0] >= 1 and s[1], 120, 1, "the controller restarted, Ready")
    with cluster.inside():
        previous = cluster.kubectl("-n", NS, "logs", pod["metadata"]["name"], "--previous").stdout
    assert '"msg": "starting controller"' in previous
    send_api_to(cluster, "frontend")
    wait_for(lambda: served_by(cluster, address, "frontend-"), 120, 0.5, "/api answered by frontend after the crash")

    # make dev again: the controller restarts with the working tree, the edited route stays, and
    # the new controller finds everything written already
    settled(cluster)  # (the edit's Programmed=False, then True again, are written)
    mark = cluster.audit.mark()
    again = make_dev().stderr
    assert "left as they are" in again and "httproute/shop" in again
    new = controller_pod(cluster)
    assert new["metadata"]["name"] != pod["metadata"]["name"]
    assert served_by(cluster, address, "frontend-")
    settled(cluster)  # its first passes
    writes = [e for e in cluster.audit.writes(mark, user=CONTROLLER) if describe_resource(e) != "leases"]
    assert not writes, "\n".join(describe(e) for e in writes)

    # a values file of the user's: applied after hack/kube/dev-values.yaml, and kept by the next
    # run without DEV_VALUES; the summary names a listener that cannot serve, though the Gateway
    # is Programmed
    mine = DEV_DIR.parent / "dev-test-values.yaml"
    mine.write_text("controller:\n  minReconcileMs: 300\n")
    with cluster.inside():
        cluster.api.patch("Gateway", "apps", "web", [{"op": "add", "path": "/spec/listeners/-", "value": {
            "name": "https", "port": 443, "protocol": "HTTPS", "hostname": "shop.example.com",
            "tls": {"certificateRefs": [{"name": "no-such-secret"}]}}}], type="json")
    out = make_dev(DEV_VALUES=str(mine)).stderr
    shown = str(mine.relative_to(REPO)) if mine.is_relative_to(REPO) else str(mine)
    assert f"--values hack/kube/dev-values.yaml --values {shown}" in out
    assert 'Gateway apps/web: listener "https" cannot serve: ' in out and "no-such-secret" in out, out[-3000:]
    assert min_reconcile_ms(cluster) == "300"
    again = make_dev(DEV_VALUES="").stderr
    assert f"with your values from an earlier run: {mine}" in again and f"--values {shown}" in again
    assert min_reconcile_ms(cluster) == "300"


def min_reconcile_ms(cluster: LocalCluster) -> str:
    """The controller Deployment's minimum reconcile interval (the chart's controller.minReconcileMs)."""
    with cluster.inside():
        deploy = cluster.api.get_object("Deployment", NS, "titanium-gateway-controller")
    assert deploy is not None
    env = deploy["spec"]["template"]["spec"]["containers"][0].get("env") or []
    return next(str(e.get("value")) for e in env if "RECONCILE" in e["name"])

def grpc_call(cluster: LocalCluster, address: str, method: str = "Echo") -> dict[str, Any]:
    """``python3 -m tools.podrunner.shims.grpcecho call`` (a grpcio client: h2c with prior
    knowledge) to the Gateway's port 80 for grpc.example.com, from inside the dev cluster's network."""
    p = cluster.run(sys.executable, "-m", "tools.podrunner.shims.grpcecho", "call", f"{address}:80",
                    "--authority", "grpc.example.com", "--method", method, "-H", "x-demo: through-the-gateway",
                    "--timeout", "5", check=False, timeout=60, env={"PYTHONPATH": str(REPO)})
    assert p.returncode in (0, 1), p.stderr[-3000:]
    return json.loads(p.stdout)


@pytest.mark.xfail("GRPCRoute" not in SUPPORTED_FEATURES, strict=True,
                   reason="GRPCRoute is not served by this controller yet: examples/grpc's route is not accepted")
def test_make_dev_serves_a_grpc_call_through_the_gateway_by_the_grpcroute(dev: tuple[LocalCluster, str]) -> None:
    """examples/grpc/grpcroute.yaml on the quick start's Gateway: a gRPC call to its address
    reaches the grpc-echo backend over HTTP/2 end to end, and the backend's status comes back in
    the trailers (grpc-status: a client that gets no trailers reports an error, not OK)."""
    cluster, _ = dev
    address = (DEV_DIR / "dev" / "gateway-address").read_text().strip()
    with cluster.inside():
        route = cluster.api.get_object("GRPCRoute", "apps", "echo") or {}
    assert route, "make dev did not create the GRPCRoute apps/echo"
    calls: list[dict[str, Any]] = []

    def answered_ok() -> bool:
        calls.append(grpc_call(cluster, address))
        return calls[-1]["code"] == "OK"

    try:
        wait_for(answered_ok, 90, 1, "a gRPC call through the Gateway answered OK")
    except AssertionError as e:
        with cluster.inside():
            status = (cluster.api.get_object("GRPCRoute", "apps", "echo") or {}).get("status")
        raise AssertionError(f"{e}; the last call: {calls[-1]}; the route's status: {status}") from None
    out = calls[-1]
    a = out["answer"]["assertions"]
    assert a["fullyQualifiedMethod"] == "/gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/Echo"
    assert a["context"]["pod"].startswith("grpc-echo-") and a["context"]["namespace"] == "apps"
    assert {"key": "x-demo", "value": "through-the-gateway"} in a["headers"]
    # a method the backend lacks: the route still matches (its match names the service only), and
    # the backend's UNIMPLEMENTED comes back with its message
    missing = grpc_call(cluster, address, "EchoFour")
    assert (missing["code"], missing["message"], missing["answer"]) == ("UNIMPLEMENTED", "Method not found!", None)
