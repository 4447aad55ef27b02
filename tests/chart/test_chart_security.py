"""The security context and probes of every pod the chart runs (docs/install.md, Security)."""

from __future__ import annotations

import pytest

from .conftest import VARIANTS, one, pod_templates

CONTAINER = {
    "runAsUser": 1654,
    "runAsNonRoot": True,
    "readOnlyRootFilesystem": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_pod_runs_non_root_read_only_without_capabilities(helm, variant):
    pods = pod_templates(helm.template(VARIANTS[variant]))
    assert sorted(name for name, _ in pods) == ["titanium-gateway-controller", "titanium-gateway-data-plane"]
    for name, template in pods:
        spec = template["spec"]
        pod_sc = spec["securityContext"]
        assert pod_sc["runAsUser"] == 1654 and pod_sc["runAsNonRoot"] is True, name
        assert pod_sc["seccompProfile"] == {"type": "RuntimeDefault"}, name
        assert not spec.get("hostNetwork") and not spec.get("hostPID") and not spec.get("hostIPC"), name
        containers = spec["containers"] + spec.get("initContainers", [])
        assert containers
        for c in containers:
            sc = c["securityContext"]
            for key, value in CONTAINER.items():
                assert sc.get(key) == value, f"{name}/{c['name']}: securityContext.{key} = {sc.get(key)!r}"
            assert not sc.get("privileged")
            assert "add" not in sc["capabilities"]
            assert c["resources"]["requests"] and c["resources"]["limits"]["memory"]
        # a read-only root file system needs a writable /tmp
        mounts = {m["mountPath"] for c in containers for m in c.get("volumeMounts", [])}
        assert "/tmp" in mounts, name
        for volume in spec.get("volumes", []):
            assert "hostPath" not in volume, name


def test_probes_on_the_health_endpoints(helm):
    docs = helm.template()
    c = one(docs, "Deployment", "titanium-gateway-controller")["spec"]["template"]["spec"]["containers"][0]
    assert {p["name"]: p["containerPort"] for p in c["ports"]}["health"] == 8081
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    d = one(docs, "Deployment", "titanium-gateway-data-plane")["spec"]["template"]["spec"]["containers"][0]
    assert {p["name"]: p["containerPort"] for p in d["ports"]}["admin"] == 9901
    assert d["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "admin"}
    assert d["livenessProbe"]["tcpSocket"]["port"] == "admin"
