"""The Gateway API v1.6.3 bundle on a real API server: the chart installs where the CRDs and the
safe-upgrades policy are already in force, the GatewayClass reports the bundle and the claimed
features, and ReferenceGrants the controller cannot read are never honoured
(docs/install.md, "The Gateway API CRDs"; docs/operations.md, "Health")."""

from __future__ import annotations

import copy
from typing import Any

import requests
import yaml

from tests.cluster.conftest import ClusterEnv, condition, wait_for
from tests.support.chartrelease import ChartRelease
from tests.support.kubecluster import REPO
from titanium_gateway.render.features import SUPPORTED_FEATURES

GROUP = "gateway.networking.k8s.io"
BUNDLE = REPO / "manifests" / "gateway-api-crds.yaml"
POLICY = f"safe-upgrades.{GROUP}"


def health(env: ClusterEnv, port: int, path: str) -> requests.Response:
    with env.cluster.inside():
        return requests.get(f"http://127.0.0.1:{port}{path}", timeout=5)


def test_helm_install_where_the_v1_6_3_bundle_is_applied_server_side_and_its_policy_in_force(
        env: ClusterEnv, tmp_path: Any) -> None:
    # a cluster whose CRDs someone else manages: the upstream bundle, applied server-side
    out = env.cluster.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=platform-team",
                              "-f", str(BUNDLE)).stdout
    assert f"validatingadmissionpolicy.admissionregistration.k8s.io/{POLICY} serverside-applied" in out
    # the policy is in force: the v1.2.1 CRDs (what the chart shipped before) are refused
    old = copy.deepcopy(next(d for d in yaml.safe_load_all(BUNDLE.read_text())
                             if d and d["kind"] == "CustomResourceDefinition"
                             and d["metadata"]["name"] == f"referencegrants.{GROUP}"))
    old["metadata"]["annotations"][f"{GROUP}/bundle-version"] = "v1.2.1"

    def refused() -> str:
        p = env.cluster.kubectl("apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-",
                                input=yaml.safe_dump(old), check=False)
        return p.stderr if p.returncode != 0 else ""
    why = wait_for(refused, 60, 1, "the safe-upgrades policy in force")
    assert "Installing CRDs with version before v1.5.0 is prohibited" in why

    # helm install of the chart there: its CRDs and policy exist, Helm leaves them; so does --skip-crds
    name = env.kube.next_name()
    for extra in ([], ["--skip-crds"]):
        release = ChartRelease.install(env.cluster, env.kube.helm, f"{name}{len(extra)}", workdir=tmp_path / str(len(extra)),
                                       extra_args=extra)
        try:
            assert env.get("GatewayClass", None, release.rel.gateway_class) is not None
        finally:
            release.uninstall()
    crd = env.get("CustomResourceDefinition", None, f"referencegrants.{GROUP}") or {}
    assert crd["metadata"]["annotations"][f"{GROUP}/bundle-version"] == "v1.6.3"


def test_the_gatewayclass_names_the_bundle_and_the_features_claimed(env: ClusterEnv) -> None:
    env.start_controller()
    rel = env.release.rel
    gc = wait_for(lambda: (g := env.get("GatewayClass", None, rel.gateway_class))
                  and (g.get("status") or {}).get("supportedFeatures") and g, 90, what="supportedFeatures written")
    assert gc["status"]["supportedFeatures"] == [{"name": f} for f in SUPPORTED_FEATURES]
    assert condition(gc, "Accepted")["message"] == (
        "GatewayClass is accepted by this controller; Gateway API CRDs v1.6.3 (standard)")


def cross_namespace_backend(env: ClusterEnv) -> str:
    backends = env.namespace(f"{env.apps}-backends")
    env.service("api", ns=backends)
    env.service("local")
    env.gateway()
    env.apply({"apiVersion": f"{GROUP}/v1", "kind": "HTTPRoute", "metadata": {"name": "shop", "namespace": env.apps},
               "spec": {"parentRefs": [{"name": "web"}], "hostnames": ["shop.example.com"],
                        "rules": [{"backendRefs": [{"name": "api", "namespace": backends, "port": 8080}]}]}})
    env.route("local", host="local.example.com", backend="local")
    env.apply({"apiVersion": f"{GROUP}/v1beta1", "kind": "ReferenceGrant",
               "metadata": {"name": "from-apps", "namespace": backends},
               "spec": {"from": [{"group": GROUP, "kind": "HTTPRoute", "namespace": env.apps}],
                        "to": [{"group": "", "kind": "Service"}]}})
    return backends


def resolved_refs(env: ClusterEnv, name: str = "shop") -> dict[str, Any] | None:
    parents = ((env.get("HTTPRoute", env.apps, name) or {}).get("status") or {}).get("parents") or []
    return condition({"status": parents[0]}, "ResolvedRefs") if parents else None


def test_grants_the_controller_cannot_read_are_not_honoured_and_it_is_not_ready(env: ClusterEnv) -> None:
    cross_namespace_backend(env)
    ctrl = env.start_controller()
    wait_for(lambda: (c := resolved_refs(env)) and c["status"] == "True", 90, what="the granted backend resolves")
    wait_for(lambda: "shop.example.com" in env.route_hosts(), 60, what="the route in twp.yaml")

    # the controller's read of ReferenceGrants is revoked, and it restarts (a running watch keeps
    # the permission it started with)
    role = f"{env.release.rel.name}-controller"

    def revoke(cr: dict[str, Any]) -> None:
        for rule in cr["rules"]:
            if "referencegrants" in rule.get("resources", []):
                rule["resources"] = [r for r in rule["resources"] if r != "referencegrants"]
    granted = env.api.get("ClusterRole", None, role)
    env.api.update_object("ClusterRole", None, role, revoke)
    ctrl.stop()
    env.expect_alive.discard("ctrl-a")
    ctrl = env.start_controller("ctrl-b", wait_ready=False)
    try:
        refused = wait_for(lambda: (c := resolved_refs(env)) and c["status"] == "False" and c, 120,
                           what="the cross-namespace backend refused")
        assert refused["reason"] == "RefNotPermitted"
        assert "is in another namespace and the ReferenceGrants could not be read" in refused["message"]
        assert "403" in refused["message"]
        # the rest is reconciled and served
        assert resolved_refs(env, "local")["status"] == "True"
        wait_for(lambda: "local.example.com" in env.route_hosts(), 60, what="the same-namespace route served")
        ready = health(env, ctrl.health_port, "/readyz")
        assert ready.status_code == 503 and "ReferenceGrant" in ready.text and "403" in ready.text, ready.text
        assert health(env, ctrl.health_port, "/healthz").status_code == 200
        gc = env.get("GatewayClass", None, env.release.rel.gateway_class)
        assert "ReferenceGrant cannot be read" in condition(gc, "Accepted")["message"]
        wait_for(lambda: "ReferenceGrant watch fails" in ctrl.log(), 10, what="the log line")
    finally:
        # the permission comes back: read again, honoured again, ready again
        env.api.update_object("ClusterRole", None, role, lambda cr: cr.update(rules=granted["rules"]))
    wait_for(lambda: ctrl.ready(), 120, 1, "/readyz 200 once the grants are read")
    wait_for(lambda: (c := resolved_refs(env)) and c["status"] == "True", 90, what="the grant honoured again")
    env.audit_mark = env.cluster.audit.mark()  # the 403s so far were this test's doing


def test_a_served_version_that_goes_away_is_followed_without_a_restart(env: ClusterEnv) -> None:
    cross_namespace_backend(env)
    ctrl = env.start_controller()
    wait_for(lambda: (c := resolved_refs(env)) and c["status"] == "True", 90, what="the granted backend resolves")
    name = f"referencegrants.{GROUP}"

    def serve_v1(served: bool) -> None:
        def edit(crd: dict[str, Any]) -> None:
            for v in crd["spec"]["versions"]:
                if v["name"] == "v1":
                    v["served"] = served
        env.api.update_object("CustomResourceDefinition", None, name, edit)
    serve_v1(False)
    try:
        wait_for(lambda: "watching ReferenceGrant as gateway.networking.k8s.io/v1beta1" in ctrl.log(), 60,
                 what="ReferenceGrant read as v1beta1")
        env.api.delete("ReferenceGrant", f"{env.apps}-backends", "from-apps")
        refused = wait_for(lambda: (c := resolved_refs(env)) and c["status"] == "False" and c, 90,
                           what="the revoked grant is no longer honoured")
        assert "no ReferenceGrant allows it" in refused["message"]
        assert ctrl.ready()
    finally:
        serve_v1(True)
    wait_for(lambda: "watching ReferenceGrant as gateway.networking.k8s.io/v1 instead" in ctrl.log(), 60,
             what="ReferenceGrant read as v1 again")
    wait_for(lambda: ctrl.ready(), 60, 1, "/readyz 200 once v1 is read again")
    assert resolved_refs(env)["status"] == "False"  # (the grant is gone: still refused, for that reason)
