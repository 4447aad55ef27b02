"""manifests/ is the chart rendered by hack/generate-manifests.sh; fail when the two drift."""

from __future__ import annotations

import os
import subprocess

import kubernetes_validate

from .conftest import ROOT, load_docs

MANIFESTS = ROOT / "manifests"
FILES = ("gateway-api-crds.yaml", "titanium-gateway.yaml")


def test_manifests_match_the_chart(helm_binary, tmp_path):
    env = dict(os.environ, OUT_DIR=str(tmp_path))
    proc = subprocess.run([str(ROOT / "hack" / "generate-manifests.sh")], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(FILES)
    for name in FILES:
        committed = (MANIFESTS / name).read_text()
        fresh = (tmp_path / name).read_text()
        assert committed == fresh, f"manifests/{name} is stale: run `make manifests` and commit the result"


def test_manifests_are_valid_and_hold_no_secret_token():
    crds = load_docs((MANIFESTS / "gateway-api-crds.yaml").read_text())
    kinds = sorted(d["kind"] for d in crds)
    assert kinds == ["CustomResourceDefinition"] * 10 + ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]
    docs = load_docs((MANIFESTS / "titanium-gateway.yaml").read_text())
    for d in docs:
        if not d["apiVersion"].startswith("gateway.networking.k8s.io/"):
            kubernetes_validate.validate(d, "1.31", strict=True)
    secrets = [d["metadata"]["name"] for d in docs if d["kind"] == "Secret"]
    assert secrets == ["titanium-gateway-data-plane-tls"], "a committed admin token would be shared by every install"
    assert {d["kind"] for d in docs} >= {"GatewayClass", "IngressClass", "Deployment", "Service", "ClusterRole", "Role",
                                         "Lease", "ConfigMap"}
