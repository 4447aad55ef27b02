"""Zero dropped requests: ``make dev`` (the chart, this tree's controller, the reference data plane
and the quick start's echo backends as pods of the pod runner) on a cluster of its own, and a
steady stream of requests to the quick start's route (``shop.example.com/api/items``, 20 a
second, a new connection each, so through the load balancer to any ready data-plane pod) while,
one scenario per test:

- routes are created, changed and deleted (others, and the quick start's own);
- the backend's EndpointSlice churns: scaled up, a pod becoming unready, scaled down;
- an HTTPS listener is added to the Gateway (the data plane rolls), its certificate is rotated,
  and the listener is removed again (it rolls back);
- the leader controller's pod is deleted and the other replica takes over;
- the data-plane pod is deleted and its Deployment replaces it.

Every answer of the stream must be 200; an HTTPS stream during the listener's life too.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.conftest import KubeSession, wait_for
from tests.cluster.test_dev_loop import on_host
from tests.integration.conftest import make_tls_secret
from tests.support.kubecluster import REPO, LocalCluster

pytestmark = pytest.mark.timeout(900)

DIR = Path(os.environ.get("TITANIUM_ZERO_DROP_TEST_DIR") or REPO / ".cache" / "kube" / "zero-drop-test")
APPS, SYSTEM = "apps", "gateway-system"
HOST = "shop.example.com"
DATA_PLANE = "gateway.networking.k8s.io/gateway-name=web"
CONTROLLER = "app.kubernetes.io/component=controller,app.kubernetes.io/instance=titanium-gateway"


@pytest.fixture(scope="module")
def dev(kube: KubeSession) -> Iterator[tuple[LocalCluster, str]]:
    """make dev on a cluster of its own; (cluster, the Gateway's address)."""
    DIR.parent.mkdir(parents=True, exist_ok=True)
    on_host(str(REPO / "hack/kube/down.sh"), str(DIR), timeout=120)
    try:
        p = on_host(str(REPO / "hack/kube/dev.sh"), str(DIR), timeout=600)
        assert p.returncode == 0, f"hack/kube/dev.sh failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-6000:]}"
        yield LocalCluster(DIR), (DIR / "dev" / "gateway-address").read_text().strip()
    finally:
        if not os.environ.get("TITANIUM_CLUSTER_KEEP"):
            on_host(str(REPO / "hack/kube/down.sh"), str(DIR), timeout=120)


def ask(address: str, port: int, host: str = HOST, path: str = "/api/items", tls: bool = False,
        timeout: float = 5.0) -> tuple[str, bytes]:
    """One request on a new connection: (status code or the error's name, the peer certificate's
    DER for TLS)."""
    cert = b""
    try:
        with socket.create_connection((address, port), timeout=timeout) as raw:
            sock: socket.socket = raw
            if tls:
                ctx = ssl.create_default_context()
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
                sock = ctx.wrap_socket(raw, server_hostname=host)
                cert = sock.getpeercert(binary_form=True) or b""
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while b"\r\n" not in data:
                piece = sock.recv(4096)
                if not piece:
                    break
                data += piece
            while sock.recv(65536):  # the whole answer, as a client reads it
                pass
    except (OSError, ssl.SSLError) as exc:
        return type(exc).__name__, cert
    parts = data.split(b" ", 2)
    return (parts[1].decode() if len(parts) > 1 and data.startswith(b"HTTP/1.") else f"bad answer {data[:40]!r}"), cert


class Stream(threading.Thread):
    """``rate`` requests a second, each on a new connection, until stopped; keeps the answers."""

    def __init__(self, cluster: LocalCluster, address: str, port: int = 80, tls: bool = False,
                 rate: float = 20.0) -> None:
        super().__init__(daemon=True, name=f"stream-{port}")
        self.cluster, self.address, self.port, self.tls, self.rate = cluster, address, port, tls, rate
        self.answers: list[tuple[float, str]] = []
        self._halt = threading.Event()

    def run(self) -> None:
        with self.cluster.inside():
            nxt = time.monotonic()
            while not self._halt.is_set():
                code, _ = ask(self.address, self.port, tls=self.tls)
                self.answers.append((time.time(), code))
                nxt += 1 / self.rate
                self._halt.wait(max(0.0, nxt - time.monotonic()))

    def stop(self) -> None:
        self._halt.set()
        self.join(15)

    def check(self, minimum: int) -> None:
        bad = [(time.strftime("%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}", c)
               for t, c in self.answers if c != "200"]
        assert not bad, f"{len(bad)} of {len(self.answers)} answers were not 200: {bad[:20]}"
        assert len(self.answers) >= minimum, f"only {len(self.answers)} requests were sent"


@contextlib.contextmanager
def steady(cluster: LocalCluster, address: str, port: int = 80, tls: bool = False) -> Iterator[Stream]:
    """A stream for the block; afterwards every answer must have been 200."""
    stream = Stream(cluster, address, port, tls)
    t0 = time.monotonic()
    stream.start()
    try:
        yield stream
    finally:
        stream.stop()
    stream.check(minimum=int((time.monotonic() - t0) * stream.rate * 0.3))


def answers(cluster: LocalCluster, address: str, host: str, want: str, path: str = "/", **kw: Any) -> bool:
    with cluster.inside():
        return ask(address, 80, host, path, **kw)[0] == want


def pods(cluster: LocalCluster, ns: str, selector: str) -> list[dict[str, Any]]:
    with cluster.inside():
        return cluster.api.list("Pod", ns, label_selector=selector)


def ready(pod: dict[str, Any]) -> bool:
    return not pod["metadata"].get("deletionTimestamp") and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in (pod.get("status") or {}).get("conditions") or [])


def rolled_out(cluster: LocalCluster, ns: str, selector: str, replicas: int, old: set[str]) -> bool:
    """``replicas`` Ready pods, none of them in ``old``, and no other pod left (terminating ones gone)."""
    now = pods(cluster, ns, selector)
    names = {p["metadata"]["name"] for p in now}
    return len(now) == replicas and not names & old and all(ready(p) for p in now)


def scale(cluster: LocalCluster, ns: str, name: str, replicas: int) -> None:
    with cluster.inside():
        cluster.api.patch("Deployment", ns, name, {"spec": {"replicas": replicas}})


def route(name: str, host: str, header: str | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"backendRefs": [{"name": "api", "port": 8080}]}
    if header:
        rule["filters"] = [{"type": "ResponseHeaderModifier",
                            "responseHeaderModifier": {"set": [{"name": "x-churn", "value": header}]}}]
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": name, "namespace": APPS},
            "spec": {"parentRefs": [{"name": "web"}], "hostnames": [host], "rules": [rule]}}


def test_route_churn(dev: tuple[LocalCluster, str]) -> None:
    cluster, address = dev
    api = cluster.api
    names = [f"churn-{i}" for i in range(4)]
    with steady(cluster, address):
        for name in names:
            with cluster.inside():
                api.create(route(name, f"{name}.example.com"))
            wait_for(lambda name=name: answers(cluster, address, f"{name}.example.com", "200"), 60, 0.1,
                     f"{name} served")
        for name in names:
            with cluster.inside():
                api.patch("HTTPRoute", APPS, name, {"spec": route(name, f"{name}.example.com", "v2")["spec"]})
        with cluster.inside():  # the quick start's own route: /api to api alone, then back to 9:1
            shop = api.get("HTTPRoute", APPS, "shop")
            api.patch("HTTPRoute", APPS, "shop", [{"op": "replace", "path": "/spec/rules/0/backendRefs",
                                                   "value": [{"name": "api", "port": 8080}]}], type="json")
        time.sleep(3)
        with cluster.inside():
            api.patch("HTTPRoute", APPS, "shop", [{"op": "replace", "path": "/spec/rules/0/backendRefs",
                                                   "value": shop["spec"]["rules"][0]["backendRefs"]}], type="json")
            for name in names:
                api.delete("HTTPRoute", APPS, name)
        wait_for(lambda: all(answers(cluster, address, f"{n}.example.com", "404") for n in names), 60, 0.2,
                 "the deleted routes answer 404")


def test_endpoint_slice_churn(dev: tuple[LocalCluster, str]) -> None:
    cluster, address = dev
    with steady(cluster, address):
        before = {p["metadata"]["name"] for p in pods(cluster, APPS, "app=api")}
        scale(cluster, APPS, "api", 3)
        wait_for(lambda: sum(ready(p) for p in pods(cluster, APPS, "app=api")) == 3, 120, 0.5, "3 api pods Ready")
        # a pod becoming unready (what the kubelet writes when its readiness probe fails)
        newer = next(p for p in pods(cluster, APPS, "app=api") if p["metadata"]["name"] not in before)
        conditions = [{**c, "status": "False"} if c.get("type") in ("Ready", "ContainersReady") else c
                      for c in newer["status"]["conditions"]]
        with cluster.inside():
            cluster.api.patch("Pod", APPS, newer["metadata"]["name"], {"status": {"conditions": conditions}},
                              subresource="status", type="strategic")
        time.sleep(5)
        scale(cluster, APPS, "api", 1)
        wait_for(lambda: len(pods(cluster, APPS, "app=api")) == 1, 120, 0.5, "back to one api pod")
        time.sleep(2)


def _tls_secret(name: str) -> dict[str, Any]:
    return make_tls_secret(name, SYSTEM, HOST)


def _served_cert(cluster: LocalCluster, address: str) -> bytes:
    with cluster.inside():
        code, cert = ask(address, 443, tls=True)
    return cert if code == "200" else b""


def _cert_der(secret: dict[str, Any]) -> bytes:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    pem = base64.b64decode(secret["data"]["tls.crt"])
    return x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)


def test_listener_change_and_certificate_rotation(dev: tuple[LocalCluster, str]) -> None:
    cluster, address = dev
    api = cluster.api
    first, second = _tls_secret("shop-tls"), _tls_secret("shop-tls")
    with cluster.inside():
        api.create(first)
        api.create({"apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "ReferenceGrant",
                    "metadata": {"name": "web-certificates", "namespace": SYSTEM},
                    "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": APPS}],
                             "to": [{"group": "", "kind": "Secret", "name": "shop-tls"}]}})
        listeners = api.get("Gateway", APPS, "web")["spec"]["listeners"]
    https = {"name": "https", "port": 443, "protocol": "HTTPS", "hostname": HOST,
             "tls": {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": "shop-tls",
                                                               "namespace": SYSTEM}]},
             "allowedRoutes": {"namespaces": {"from": "Same"}}}
    with steady(cluster, address):
        old = {p["metadata"]["name"] for p in pods(cluster, APPS, DATA_PLANE)}
        t0 = time.monotonic()
        with cluster.inside():
            api.patch("Gateway", APPS, "web", {"spec": {"listeners": [*listeners, https]}})
        # the data plane rolls (a new listener set) and the HTTPS listener serves
        wait_for(lambda: _served_cert(cluster, address) == _cert_der(first), 90, 0.5, "HTTPS served")
        served_after = time.monotonic() - t0
        wait_for(lambda: rolled_out(cluster, APPS, DATA_PLANE, 1, old), 120, 0.5, "the data plane rolled")
        with steady(cluster, address, 443, tls=True):
            with cluster.inside():  # rotation: a new key and certificate in the same Secret
                api.patch("Secret", SYSTEM, "shop-tls", {"data": second["data"]})
            wait_for(lambda: _served_cert(cluster, address) == _cert_der(second), 60, 0.2, "the new certificate served")
            time.sleep(2)
        old = {p["metadata"]["name"] for p in pods(cluster, APPS, DATA_PLANE)}
        with cluster.inside():
            api.patch("Gateway", APPS, "web", {"spec": {"listeners": listeners}})
        wait_for(lambda: rolled_out(cluster, APPS, DATA_PLANE, 1, old), 120, 0.5, "the data plane rolled back")
        time.sleep(2)
    assert served_after < 60, f"the HTTPS listener served {served_after:.1f} s after it was added"
    assert hashlib.sha256(_cert_der(first)).digest() != hashlib.sha256(_cert_der(second)).digest()


def _leader(cluster: LocalCluster) -> str:
    with cluster.inside():
        lease = cluster.api.get("Lease", SYSTEM, "titanium-gateway")
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def test_leader_failover(dev: tuple[LocalCluster, str]) -> None:
    cluster, address = dev
    scale(cluster, SYSTEM, "titanium-gateway-controller", 2)
    wait_for(lambda: sum(ready(p) for p in pods(cluster, SYSTEM, CONTROLLER)) == 2, 120, 0.5, "2 controllers Ready")
    try:
        with steady(cluster, address):
            holder = wait_for(lambda: _leader(cluster), 30, 0.5, "a leader")
            leader = next(p["metadata"]["name"] for p in pods(cluster, SYSTEM, CONTROLLER)
                          if p["metadata"]["name"] in holder)
            with cluster.inside():
                cluster.api.delete("Pod", SYSTEM, leader)
            wait_for(lambda: (h := _leader(cluster)) and leader not in h, 60, 0.2, "another leader")
            # the new leader serves changes
            with cluster.inside():
                cluster.api.create(route("after-failover", "after-failover.example.com"))
            wait_for(lambda: answers(cluster, address, "after-failover.example.com", "200"), 60, 0.2,
                     "a route created after the failover served")
            time.sleep(2)
    finally:
        with cluster.inside(), contextlib.suppress(Exception):
            cluster.api.delete("HTTPRoute", APPS, "after-failover")
        scale(cluster, SYSTEM, "titanium-gateway-controller", 1)


def test_data_plane_pod_deletion(dev: tuple[LocalCluster, str]) -> None:
    cluster, address = dev
    with steady(cluster, address):
        old = {p["metadata"]["name"] for p in pods(cluster, APPS, DATA_PLANE)}
        assert len(old) == 1, old
        with cluster.inside():
            cluster.api.delete("Pod", APPS, next(iter(old)))
        wait_for(lambda: rolled_out(cluster, APPS, DATA_PLANE, 1, old), 120, 0.5, "a new data-plane pod, the old gone")
        time.sleep(2)
