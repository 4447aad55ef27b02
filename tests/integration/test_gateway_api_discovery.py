"""The Gateway API kinds the controller watches follow the CRDs the cluster serves (v1.2.1 to
v1.7 bundles), and a ReferenceGrant watch that fails never leaves stale grants in force
(controller/gatewayapi.py; docs/operations.md, "Gateway API CRDs" and "Health")."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.integration.conftest import GW, Env, cluster_env, condition, wait_for
from tests.support.gatewayapi_crds import chart_crds, serving, v1_2_1_standard
from titanium_gateway.render.features import SUPPORTED_FEATURES

GROUP = "gateway.networking.k8s.io"


def cross_namespace_route(env: Env, grant_version: str = "v1", grant: bool = True) -> None:
    """HTTPRoute apps/shop -> Service backends/api, allowed by a ReferenceGrant in backends."""
    env.service("api", ns="backends")
    env.service("local", ns="apps")
    env.gateway()
    env.server.put_object({"apiVersion": GW, "kind": "HTTPRoute", "metadata": {"name": "shop", "namespace": "apps"},
                           "spec": {"parentRefs": [{"name": "web"}], "hostnames": ["shop.example.com"],
                                    "rules": [{"backendRefs": [{"name": "api", "namespace": "backends", "port": 8080}]}]}})
    env.route("local", host="local.example.com", backend="local")
    if grant:
        env.server.put_object({
            "apiVersion": f"{GROUP}/{grant_version}", "kind": "ReferenceGrant",
            "metadata": {"name": "from-apps", "namespace": "backends"},
            "spec": {"from": [{"group": GROUP, "kind": "HTTPRoute", "namespace": "apps"}],
                     "to": [{"group": "", "kind": "Service"}]}})


def resolved(env: Env, name: str = "shop") -> dict[str, Any] | None:
    route = env.get("HTTPRoute", "apps", name)
    parents = ((route or {}).get("status") or {}).get("parents") or []
    return condition({"status": parents[0]}, "ResolvedRefs") if parents else None


def lists(env: Env, plural: str) -> list[Any]:
    """The controller's lists of ``plural``: paginated, or streaming (a watch with sendInitialEvents)."""
    return [*env.server.requests("list", plural),
            *(r for r in env.server.requests("watch", plural) if r.query.get("sendInitialEvents") == "true")]


def requested(env: Env, plural: str, verb: str = "list") -> set[str]:
    """The versions of ``plural`` the controller listed (or watched)."""
    reqs = lists(env, plural) if verb == "list" else env.server.requests(verb, plural)
    return {r.path.split("/")[3] for r in reqs if r.path.startswith(f"/apis/{GROUP}/")}


def gateway_class(env: Env) -> dict[str, Any]:
    return env.must("GatewayClass", None, env.rel.gateway_class)


def health(env: Env, path: str) -> requests.Response:
    return requests.get(f"http://127.0.0.1:{env.instances[0].health_port}{path}", timeout=5)


def test_the_v1_6_3_bundle_every_kind_is_watched_grants_as_v1_and_supported_features_written(env: Env) -> None:
    cross_namespace_route(env)
    inst = env.start_controller()
    env.wait_programmed()
    wait_for(lambda: (c := resolved(env)) and c["status"] == "True", what="the granted backend resolves")
    assert requested(env, "referencegrants") == {"v1"}
    for plural in ("grpcroutes", "tlsroutes", "tcproutes", "udproutes", "listenersets", "backendtlspolicies"):
        assert requested(env, plural, "watch") == {"v1"}, plural
    # the ConfigMaps BackendTLSPolicies may name, without the data plane's own
    (cm_list,) = [r for r in lists(env, "configmaps") if not r.namespace]
    assert cm_list.query.get("labelSelector") == "app.kubernetes.io/component!=data-plane-config"
    gc = wait_for(lambda: (g := gateway_class(env)) and g["status"].get("supportedFeatures") and g,
                  what="supportedFeatures")
    assert gc["status"]["supportedFeatures"] == [{"name": f} for f in SUPPORTED_FEATURES]
    assert condition(gc, "Accepted")["message"] == (
        "GatewayClass is accepted by this controller; Gateway API CRDs v1.6.3 (standard)")
    snap = inst.ctrl.snapshot()
    assert dict(snap.unreadable) == {} and snap.gateway_api is not None
    assert snap.gateway_api.watched["ReferenceGrant"] == f"{GROUP}/v1"
    assert health(env, "/readyz").status_code == 200


def test_the_v1_2_1_bundle_grants_as_v1beta1_new_kinds_unwatched_then_an_upgrade_is_followed() -> None:
    with cluster_env(v1_2_1_standard()) as env:
        cross_namespace_route(env, grant_version="v1beta1")
        inst = env.start_controller()
        env.wait_programmed()
        wait_for(lambda: (c := resolved(env)) and c["status"] == "True", what="the granted backend resolves")
        assert requested(env, "referencegrants") == {"v1beta1"}
        for plural in ("listenersets", "backendtlspolicies", "tlsroutes", "configmaps"):
            assert not env.server.requests("list", plural) and not env.server.requests("watch", plural), plural
        assert inst.ctrl.informers.get("ListenerSet") is None
        gc = gateway_class(env)
        assert "supportedFeatures" not in gc["status"]  # the v1.2.1 GatewayClass CRD has no such field
        assert condition(gc, "Accepted")["message"] == (
            "GatewayClass is accepted by this controller; Gateway API CRDs v1.2.1 (standard)")
        assert health(env, "/readyz").status_code == 200

        # the cluster is upgraded to the v1.6.3 bundle while the controller runs
        env.server.clear_log()
        for crd in chart_crds():
            env.server.put_object(crd)
        wait_for(lambda: requested(env, "referencegrants", "watch") == {"v1"}, what="ReferenceGrant read as v1")
        wait_for(lambda: env.server.requests("watch", "listenersets"), what="ListenerSets watched")
        wait_for(lambda: gateway_class(env)["status"].get("supportedFeatures"), what="supportedFeatures written")
        # the grant was honoured throughout: the new cache replaced the old one once listed
        refused = [r for r in env.server.requests("patch", "httproutes/status") if "RefNotPermitted" in str(r.body)]
        assert refused == []
        assert resolved(env)["status"] == "True"
        # v1beta1 no longer served: nothing changes for a controller reading v1
        crd = env.server.get_object("CustomResourceDefinition", None, f"referencegrants.{GROUP}")
        env.server.put_object(serving(crd, v1beta1=False))
        inst.reconcile_again(2)
        assert resolved(env)["status"] == "True" and health(env, "/readyz").status_code == 200


def test_a_served_version_that_goes_away_is_replaced_by_one_still_served(env: Env) -> None:
    cross_namespace_route(env)
    inst = env.start_controller()
    wait_for(lambda: (c := resolved(env)) and c["status"] == "True", what="the granted backend resolves")
    crd = env.server.get_object("CustomResourceDefinition", None, f"referencegrants.{GROUP}")
    env.server.put_object(serving(crd, v1=False))
    wait_for(lambda: inst.ctrl.gateway_api.plan["ReferenceGrant"].version == "v1beta1", what="ReferenceGrant as v1beta1")
    inst.reconcile_again(2)
    assert resolved(env)["status"] == "True"
    assert health(env, "/readyz").status_code == 200


def test_grants_that_cannot_be_read_refuse_cross_namespace_references_and_make_the_controller_unready(
        env: Env) -> None:
    cross_namespace_route(env)
    inst = env.start_controller()
    env.wait_programmed()
    wait_for(lambda: (c := resolved(env)) and c["status"] == "True", what="the granted backend resolves")
    # the controller loses its read of ReferenceGrants; its watch is cut and comes back with 403
    rule = env.server.forbid(["list", "watch"], "referencegrants")
    env.server.close_watches()
    refused = wait_for(lambda: (c := resolved(env)) and c["status"] == "False" and c,
                       what="the cross-namespace backend refused")
    assert refused["reason"] == "RefNotPermitted"
    assert "Service backends/api is in another namespace and the ReferenceGrants could not be read (" in (
        refused["message"]) and "403 Forbidden" in refused["message"]
    assert resolved(env, "local")["status"] == "True"  # the rest is served
    ready = health(env, "/readyz")
    assert ready.status_code == 503 and "ReferenceGrant" in ready.text and "403" in ready.text
    assert health(env, "/healthz").status_code == 200
    assert "ReferenceGrant cannot be read (" in condition(gateway_class(env), "Accepted")["message"]
    # a grant revoked meanwhile is not honoured; once readable again the grants are read afresh
    env.server.delete_object("ReferenceGrant", "backends", "from-apps")
    env.server.unforbid(rule)
    wait_for(lambda: health(env, "/readyz").status_code == 200, timeout=20, what="ready again")
    inst.reconcile_again(2)
    assert resolved(env)["status"] == "False" and "no ReferenceGrant allows it" in resolved(env)["message"]
    assert "cannot be read" not in condition(gateway_class(env), "Accepted")["message"]


@pytest.mark.parametrize("status", [403, 404])
def test_a_restart_with_unreadable_grants_still_reconciles_the_rest(env: Env, status: int) -> None:
    cross_namespace_route(env)
    if status == 403:
        env.server.forbid(["list", "watch"], "referencegrants")
    else:
        env.server.inject("list", "referencegrants", 404, times=None)
        env.server.inject("watch", "referencegrants", 404, times=None)
    env.start_controller()
    env.wait_programmed()
    wait_for(lambda: (c := resolved(env, "local")) and c["status"] == "True", what="the same-namespace route")
    refused = wait_for(lambda: (c := resolved(env)) and c["status"] == "False" and c, what="the cross-namespace one")
    assert refused["reason"] == "RefNotPermitted" and "could not be read" in refused["message"]
    assert "local.example.com" in env.route_hosts()
    assert health(env, "/readyz").status_code == 503
    assert health(env, "/healthz").status_code == 200


def test_a_kind_no_longer_installed_is_no_longer_watched(env: Env) -> None:
    env.gateway()
    inst = env.start_controller()
    env.wait_programmed()
    assert inst.ctrl.informers.get("ConfigMap") is not None
    env.server.delete_object("CustomResourceDefinition", None, f"backendtlspolicies.{GROUP}")
    wait_for(lambda: inst.ctrl.informers.get("BackendTLSPolicy") is None, what="BackendTLSPolicy unwatched")
    assert inst.ctrl.informers.get("ConfigMap") is None  # (only read for BackendTLSPolicies)
    assert inst.ctrl.snapshot().backend_tls_policies == {}
    assert health(env, "/readyz").status_code == 200


def test_a_required_kind_never_listed_makes_the_controller_unhealthy_after_the_grace(env: Env) -> None:
    env.server.forbid(["list", "watch"], "gateways")
    inst = env.start_controller(sync_timeout=1.0)
    wait_for(lambda: health(env, "/healthz").status_code == 503, timeout=10, what="/healthz 503")
    body = health(env, "/healthz").text
    assert "Gateway not listed after 1 s" in body and "403" in body
    assert inst.ctrl.reconciles == 0  # nothing rendered without the Gateways
    assert "Gateway" in health(env, "/readyz").text
