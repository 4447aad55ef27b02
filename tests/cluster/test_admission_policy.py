"""The chart's defaults (``dataPlane.mode=perGateway``, no namespaces listed) on a real API server,
with the controller's own ServiceAccount token: every write RBAC grants cluster-wide is fenced by
the chart's ValidatingAdmissionPolicy (templates/admission-policy.yaml, docs/security.md).

- refused by admission: a Deployment in kube-system (any image, or the data-plane image with
  the data-plane labels), a patch or delete of a Secret or ConfigMap the controller never
  created, a Deployment with the data-plane labels but another image, or privileged, or another
  ServiceAccount, a service-account-token Secret, a Service with externalIPs, a Pod change other
  than the config-poke annotation;
- admitted: the same writes on the objects of a Gateway's data plane, and the config-poke;
- the controller itself: it starts (its start check finds the policy), creates a Gateway's data
  plane; an HTTPS listener whose certificate Secret is in the Gateway's own namespace resolves
  and its certificate is written (certificates are read cluster-wide by default); a data-plane
  name taken by a ConfigMap it did not make is refused by admission and said on the Gateway's
  Programmed condition, and the controller keeps running;
- a helm upgrade with a new data-plane image: the policy admits that image and no longer the old
  one; with the binding gone, the controller stops at start with a message naming the policy;
- ``dataPlane.gatewayNamespaces`` listed: Secret reads and writes only there (RBAC refuses the
  rest before admission), and a Gateway there still gets its data plane and certificate.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster.conftest import ClusterEnv, condition, wait_for
from tests.integration.conftest import make_tls_secret
from tests.support.kubeapi import KubeApi, KubeApiError
from titanium_gateway.render.planes import controller_label, plane_names

pytestmark = pytest.mark.timeout(600)

PER_GATEWAY = {"dataPlane": {"mode": "perGateway", "replicas": 1}}
DRY = {"dryRun": "All"}


def as_controller(env: ClusterEnv) -> KubeApi:
    ns, name = env.release.rel.service_account.split(":")
    return KubeApi(env.cluster.server, env.api.token_request(ns, name, seconds=600), str(env.cluster.ca_file))


def refusal(call: Any, *args: Any, **kw: Any) -> str:
    """The admission policy's refusal message ("" when the call was admitted)."""
    try:
        call(*args, **kw)
    except KubeApiError as e:
        assert e.status == 403, e
        assert "ValidatingAdmissionPolicy" in e.message, e  # admission, not RBAC
        return e.message
    return ""


def delete_dry(api: KubeApi, kind: str, ns: str, name: str) -> None:
    from tests.support.kubeapi import KINDS

    api.request("DELETE", KINDS[kind].path(ns, name),
                body={"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]})


@pytest.fixture
def sa(env: ClusterEnv) -> Iterator[KubeApi]:
    api = as_controller(env)
    try:
        yield api
    finally:
        api.close()
        env.audit_mark = env.cluster.audit.mark()  # (the 403s above were asked for)


def data_plane_deployment(env: ClusterEnv, ns: str, gateway: dict[str, Any]) -> dict[str, Any]:
    """A Deployment as the controller makes for ``gateway``: its labels, owner, the chart's pod."""
    import yaml

    tpl = yaml.safe_load(env.get("ConfigMap", env.ns, f"{env.release.rel.data_plane}-template")["data"]
                         ["data-plane.yaml"])
    spec = copy.deepcopy(tpl["pod"]["spec"])
    spec.pop("serviceAccountName", None)
    name = gateway["metadata"]["name"]
    labels = {"app.kubernetes.io/managed-by": "titanium-gateway",
              "gateway.titaniumproxy.com/controller": controller_label(env.release.rel.controller_name),
              "gateway.networking.k8s.io/gateway-name": name, "app.kubernetes.io/name": "titanium",
              "app.kubernetes.io/component": "data-plane"}
    owner = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "name": name,
             "uid": gateway["metadata"]["uid"], "controller": True}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": f"{name}-x", "namespace": ns, "labels": labels, "ownerReferences": [owner]},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


@pytest.mark.parametrize("env", [PER_GATEWAY], indirect=True)
def test_the_default_token_cannot_write_outside_the_data_planes(env: ClusterEnv, sa: KubeApi) -> None:
    gw = env.gateway("web")
    good = data_plane_deployment(env, env.apps, gw)
    image = good["spec"]["template"]["spec"]["containers"][0]["image"]
    # the reference: the data plane as the controller makes it is admitted
    assert refusal(sa.create, good, params=DRY) == ""

    # a Deployment in kube-system: any image, and even the data-plane one with its labels
    other = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "miner", "namespace": "kube-system"},
             "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "miner"}}, "template": {
                 "metadata": {"labels": {"app": "miner"}},
                 "spec": {"containers": [{"name": "c", "image": "registry.example/miner:1"}]}}}}
    # (the API server enforces a policy once its policy cache has it: a moment after the install)
    assert "writes only the objects of Gateways' data planes" in wait_for(
        lambda: refusal(sa.create, other, params=DRY), 30, 0.5, "the policy enforced")
    in_kube_system = copy.deepcopy(good)
    in_kube_system["metadata"]["namespace"] = "kube-system"
    assert "kube-* namespace" in refusal(sa.create, in_kube_system, params=DRY)

    # the data-plane labels but another image, privileged, another ServiceAccount, a host path
    wrong_image = copy.deepcopy(good)
    wrong_image["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example/miner:1"
    assert f"runs only the data-plane image {image}" in refusal(sa.create, wrong_image, params=DRY)
    sidecar = copy.deepcopy(good)
    sidecar["spec"]["template"]["spec"]["initContainers"] = [{"name": "i", "image": "busybox"}]
    assert "runs only the data-plane image" in refusal(sa.create, sidecar, params=DRY)
    privileged = copy.deepcopy(good)
    privileged["spec"]["template"]["spec"]["containers"][0]["securityContext"]["privileged"] = True
    privileged["spec"]["template"]["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = True
    assert "pod security" in refusal(sa.create, privileged, params=DRY)
    host = copy.deepcopy(good)
    host["spec"]["template"]["spec"]["volumes"].append({"name": "root", "hostPath": {"path": "/"}})
    assert "pod security" in refusal(sa.create, host, params=DRY)
    host_net = copy.deepcopy(good)
    host_net["spec"]["template"]["spec"]["hostNetwork"] = True
    assert "pod security" in refusal(sa.create, host_net, params=DRY)
    account = copy.deepcopy(good)
    account["spec"]["template"]["spec"]["serviceAccountName"] = "admin"
    assert "ServiceAccount" in refusal(sa.create, account, params=DRY)
    token = copy.deepcopy(good)
    token["spec"]["template"]["spec"]["automountServiceAccountToken"] = True
    assert "no token mounted" in refusal(sa.create, token, params=DRY)
    no_owner = copy.deepcopy(good)
    no_owner["metadata"]["ownerReferences"] = []
    assert "owned by their Gateway" in refusal(sa.create, no_owner, params=DRY)

    # Secrets and ConfigMaps it never created: no patch, no delete; no new one without the labels
    env.apply(make_tls_secret("shop-tls", env.apps, cn="shop.example.com"))
    env.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": env.apps},
               "data": {"a": "1"}})
    for kind, name in (("Secret", "shop-tls"), ("ConfigMap", "settings")):
        body = {"metadata": {"labels": {"app.kubernetes.io/managed-by": "titanium-gateway"}}, "data": {}}
        assert refusal(sa.patch, kind, env.apps, name, body, params=DRY), kind
        assert refusal(delete_dry, sa, kind, env.apps, name), kind
    for ns in (env.apps, "kube-system"):
        assert refusal(sa.create, {"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "x", "namespace": ns}}, params=DRY)
    # even labelled as ours: a Secret that would mint a ServiceAccount token
    meta = copy.deepcopy(good["metadata"])
    meta["name"] = "minted"
    meta["annotations"] = {"kubernetes.io/service-account.name": "default"}
    assert "only Opaque Secrets" in refusal(sa.create, {"apiVersion": "v1", "kind": "Secret", "metadata": meta,
                                                          "type": "kubernetes.io/service-account-token"}, params=DRY)
    meta.pop("annotations")
    assert refusal(sa.create, {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque",
                               "data": {}}, params=DRY) == ""
    # a Service: data-plane pods only, no externalIPs
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": dict(meta, name="svc"),
           "spec": {"selector": good["spec"]["selector"]["matchLabels"], "ports": [{"port": 80}]}}
    assert refusal(sa.create, svc, params=DRY) == ""
    svc_db = copy.deepcopy(svc)
    svc_db["spec"]["selector"] = {"app": "database"}
    assert "selects data-plane pods only" in refusal(sa.create, svc_db, params=DRY)
    svc_ip = copy.deepcopy(svc)
    svc_ip["spec"]["externalIPs"] = ["198.18.0.9"]
    assert "externalIPs" in refusal(sa.create, svc_ip, params=DRY)

    # Pods: only the config-poke annotation changes
    env.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": env.apps,
                                                               "labels": {"app": "p"}},
               "spec": {"containers": [{"name": "c", "image": "registry.example/app:1"}]}})
    poke = {"metadata": {"annotations": {"gateway.titaniumproxy.com/config-poke": "abc"}}}
    assert refusal(sa.patch, "Pod", env.apps, "p", poke, params=DRY) == ""
    assert "only the gateway.titaniumproxy.com/config-poke annotation" in refusal(
        sa.patch, "Pod", env.apps, "p", {"metadata": {"labels": {"app": "q"}}}, params=DRY)
    assert refusal(sa.patch, "Pod", env.apps, "p", {"metadata": {"annotations": {"other": "x"}}}, params=DRY)
    assert refusal(sa.patch, "Pod", env.apps, "p",
                   {"spec": {"containers": [{"name": "c", "image": "registry.example/miner:1"}]}},
                   type="strategic", params=DRY)


@pytest.mark.parametrize("env", [PER_GATEWAY], indirect=True)
def test_the_controller_runs_fenced_and_https_works_by_default(env: ClusterEnv) -> None:
    """Started with the chart's environment (its start check passes), the controller makes a
    Gateway's data plane; an HTTPS listener with its Secret in the Gateway's own namespace is
    resolved and its certificate converted; a name taken by a ConfigMap it did not make is
    refused by admission and said on the Gateway, the controller running on."""
    env.apply(make_tls_secret("shop-tls", env.apps, cn="shop.example.com"))
    env.service("api")
    ctrl = env.start_controller()
    assert "the admission policy fences the controller's writes" in ctrl.log()
    env.gateway("web", listeners=[
        {"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": {"from": "Same"}}},
        {"name": "https", "port": 443, "protocol": "HTTPS", "hostname": "shop.example.com",
         "tls": {"mode": "Terminate", "certificateRefs": [{"name": "shop-tls"}]},
         "allowedRoutes": {"namespaces": {"from": "Same"}}}])
    env.route()
    names = plane_names("web", env.release.rel.gateway_class)
    wait_for(lambda: env.get("Deployment", env.apps, names.deployment), 90, what="the Gateway's Deployment")
    for kind, name in (("Service", names.service), ("ConfigMap", names.config_map)):
        wait_for(lambda kind=kind, name=name: env.get(kind, env.apps, name), 60, what=f"{kind} {name}")

    def https_resolved() -> Any:
        gw = env.get("Gateway", env.apps, "web") or {}
        for lst in (gw.get("status") or {}).get("listeners") or []:
            if lst["name"] == "https":
                c = condition({"status": lst}, "ResolvedRefs")
                return c if c and c["status"] == "True" else None
        return None

    wait_for(https_resolved, 90, what="listener https ResolvedRefs=True")
    wait_for(lambda: f"{env.apps}.shop-tls.pfx" in ((env.get("Secret", env.apps, names.tls_secret) or {})
                                                     .get("data") or {}), 60, what="the PFX in the Gateway's Secret")

    # a second Gateway whose ConfigMap name is taken by one the controller did not make
    taken = plane_names("blocked", env.release.rel.gateway_class)
    env.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": taken.config_map, "namespace": env.apps},
               "data": {"mine": "yes"}})
    mark = env.cluster.audit.mark()
    env.gateway("blocked")

    def refused() -> Any:
        c = condition(env.get("Gateway", env.apps, "blocked"), "Programmed")
        return c if c and c["status"] == "False" and "ValidatingAdmissionPolicy" in c.get("message", "") else None

    c = wait_for(refused, 90, what="Gateway blocked Programmed=False naming the admission policy")
    assert taken.config_map in c["message"]
    assert (env.get("ConfigMap", env.apps, taken.config_map) or {}).get("data") == {"mine": "yes"}
    assert ctrl.alive()
    assert "refused by admission" in ctrl.log()
    # the other Gateway is still served: its objects are untouched and it stays resolved
    assert https_resolved()
    refusals = env.cluster.audit.forbidden(mark, user=env.controller_user())
    assert refusals and all((e.get("objectRef") or {}).get("name") == taken.config_map for e in refusals)
    env.audit_mark = env.cluster.audit.mark()  # (the refusals were asked for)


@pytest.mark.parametrize("env", [PER_GATEWAY], indirect=True)
def test_the_policy_follows_a_helm_upgrade_and_its_absence_stops_the_start(env: ClusterEnv, sa: KubeApi) -> None:
    """A new data-plane image in a helm upgrade is the one the policy admits (the old one no
    longer); with the binding gone, the controller refuses to start, naming the policy."""
    from tests.support.chartrelease import CHART, HELM_ENV

    gw = env.gateway("web")
    good = data_plane_deployment(env, env.apps, gw)
    old_image = good["spec"]["template"]["spec"]["containers"][0]["image"]
    env.cluster.run(env.kube.helm, "upgrade", env.release.rel.name, str(CHART), "--namespace", env.ns,
                    "--reuse-values", "--set", "dataPlane.image.tag=next", timeout=180, env=HELM_ENV)
    upgraded = data_plane_deployment(env, env.apps, gw)
    new_image = upgraded["spec"]["template"]["spec"]["containers"][0]["image"]
    assert new_image != old_image and new_image.endswith(":next")

    def admits_new_only() -> bool:
        return refusal(sa.create, upgraded, params=DRY) == "" and bool(refusal(sa.create, good, params=DRY))

    wait_for(admits_new_only, 30, 0.5, "the policy admits the upgraded image only")

    policy = f"{env.release.rel.name}-controller-writes"
    env.api.delete("ValidatingAdmissionPolicyBinding", None, policy)

    def unfenced() -> bool:
        return refusal(sa.create, {"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "probe", "namespace": env.apps}}, params=DRY) == ""

    wait_for(unfenced, 30, 0.5, "the API server dropped the binding")
    ctrl = env.start_controller("ctrl-unfenced", wait_ready=False)
    env.expect_alive.discard("ctrl-unfenced")
    wait_for(lambda: not ctrl.alive(), 60, 0.5, "the controller stopped")
    assert ctrl.proc is not None and ctrl.proc.returncode == 1
    log = ctrl.log()
    assert f"the ValidatingAdmissionPolicy {policy} does not fence the controller's writes" in log
    assert not env.controller_writes(env.audit_mark)  # it wrote nothing


@pytest.mark.parametrize("env", [PER_GATEWAY], indirect=True)
def test_listed_gateway_namespaces_leave_nothing_cluster_wide_and_still_work(env: ClusterEnv) -> None:
    """``dataPlane.gatewayNamespaces`` listed (a helm upgrade): Secret reads and data-plane
    writes are Roles there only; the controller's start check runs in that namespace, a Gateway
    there gets its data plane and its certificate, one elsewhere is NoResources."""
    from tests.support.chartrelease import CHART, HELM_ENV

    other = env.namespace(f"{env.release.rel.name}-other")
    env.apply(make_tls_secret("shop-tls", env.apps, cn="shop.example.com"))
    env.apply(make_tls_secret("elsewhere", other))
    env.cluster.run(env.kube.helm, "upgrade", env.release.rel.name, str(CHART), "--namespace", env.ns,
                    "--reuse-values", "--set", f"dataPlane.gatewayNamespaces={{{env.apps}}}", timeout=180,
                    env=HELM_ENV)
    sa = as_controller(env)
    try:
        for call, args in ((sa.get, ("Secret", env.apps, "shop-tls")), (sa.get, ("Secret", other, "elsewhere")),
                           (sa.list, ("Secret", None))):
            try:
                call(*args)
                status = 200
            except KubeApiError as e:
                status = e.status
            assert status == (200 if args[1] == env.apps else 403), args
        # no cluster-wide write left: RBAC, before any admission, refuses one elsewhere
        with pytest.raises(KubeApiError) as refused:
            sa.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": other}},
                      params=DRY)
        assert refused.value.status == 403 and "ValidatingAdmissionPolicy" not in refused.value.message
    finally:
        sa.close()
    env.audit_mark = env.cluster.audit.mark()

    env.service("api")
    ctrl = env.start_controller()
    assert "the admission policy fences the controller's writes" in ctrl.log()
    env.gateway("web", listeners=[{"name": "https", "port": 443, "protocol": "HTTPS", "hostname": "shop.example.com",
                                   "tls": {"mode": "Terminate", "certificateRefs": [{"name": "shop-tls"}]}}])
    env.gateway("edge", ns=other)
    names = plane_names("web", env.release.rel.gateway_class)
    wait_for(lambda: f"{env.apps}.shop-tls.pfx" in ((env.get("Secret", env.apps, names.tls_secret) or {})
                                                     .get("data") or {}), 90, what="the PFX in the Gateway's Secret")
    assert env.get("Deployment", env.apps, names.deployment)
    c = wait_for(lambda: (c := condition(env.get("Gateway", other, "edge"), "Programmed")) and
                 c["reason"] == "NoResources" and c, 90, what="Gateway edge NoResources")
    assert env.apps in c["message"]
