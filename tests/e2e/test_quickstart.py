"""End to end on kind: install the chart, apply the quick start, and send it traffic."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = Path(__file__).resolve().parent / "quickstart.yaml"
NAMESPACE = "gateway-system"

pytestmark = pytest.mark.e2e


def get(port: int, path: str, host: str) -> tuple[int, str]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Host": host})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


@pytest.fixture(scope="module")
def cluster(kind_cluster):
    kind_cluster.load_docker_image("titanium-gateway:e2e")
    kind_cluster.load_docker_image("titanium:e2e")
    subprocess.run([
        str(ROOT / "hack" / "helm.sh"), "upgrade", "--install", "titanium-gateway",
        str(ROOT / "charts" / "titanium-gateway"), "--kubeconfig", str(kind_cluster.kubeconfig_path),
        "--namespace", NAMESPACE, "--create-namespace", "--wait", "--timeout", "5m",
        "--set", "controller.image.repository=titanium-gateway", "--set", "controller.image.tag=e2e",
        "--set", "controller.image.pullPolicy=Never",
        "--set", "dataPlane.image.repository=titanium", "--set", "dataPlane.image.tag=e2e",
        "--set", "dataPlane.image.pullPolicy=Never",
        "--set", "dataPlane.service.type=ClusterIP",
    ], check=True)
    kind_cluster.kubectl("wait", "--for=condition=Accepted", "gatewayclass/titanium", "--timeout=120s")
    return kind_cluster


def test_one_controller_leads(cluster):
    deadline = time.monotonic() + 60
    holder = ""
    while time.monotonic() < deadline and not holder:
        holder = cluster.kubectl("-n", NAMESPACE, "get", "lease", "titanium-gateway",
                                 "-o", "jsonpath={.spec.holderIdentity}").strip()
        time.sleep(2)
    assert holder.startswith("titanium-gateway-controller-")


def test_quick_start_serves_traffic(cluster):
    cluster.kubectl("apply", "-f", str(QUICKSTART))
    for name in ("api", "api-canary", "frontend"):
        cluster.kubectl("-n", "apps", "rollout", "status", f"deployment/{name}", "--timeout=180s")
    cluster.kubectl("-n", "apps", "wait", "--for=condition=Programmed", "gateway/web", "--timeout=180s")
    cluster.kubectl("-n", "apps", "wait", "httproute/shop", "--timeout=120s",
                    "--for=jsonpath={.status.parents[0].conditions[?(@.type==\"Accepted\")].status}=True")

    with cluster.port_forward("service/titanium-gateway-data-plane", 80, "-n", NAMESPACE) as port:
        deadline = time.monotonic() + 60
        status, body = 0, ""
        while time.monotonic() < deadline:
            status, body = get(port, "/", "shop.example.com")
            if status == 200:
                break
            time.sleep(1)
        assert status == 200, body
        assert json.loads(body)["pod"].startswith("frontend-")

        pods = Counter()
        for _ in range(60):
            status, body = get(port, "/api/items", "shop.example.com")
            assert status == 200, body
            answer = json.loads(body)
            assert answer["path"] == "/api/items"
            pods["api-canary" if answer["pod"].startswith("api-canary-") else answer["pod"].split("-")[0]] += 1
        assert set(pods) <= {"api", "api-canary"} and pods["api"] > pods["api-canary"], pods

        status, _ = get(port, "/", "unknown.example.com")
        assert status == 404
