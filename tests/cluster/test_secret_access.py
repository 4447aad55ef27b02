"""Secret access on a real API server, with the chart's RBAC (docs/install.md, "Which Secrets the
controller can read"): by default the controller's ServiceAccount reads the Secrets of the
release namespace and no other; ``controller.secretNamespaces`` adds namespaces. A certificateRef
the controller may not read is reported on its listener, naming the chart values; the controller
itself never gets a 403 (it watches only what it may read)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import ClusterEnv, condition, wait_for
from tests.integration.conftest import make_tls_secret
from tests.support.chartrelease import CHART, HELM_ENV
from tests.support.kubeapi import KubeApi, KubeApiError

pytestmark = pytest.mark.timeout(420)


def https(name: str, host: str, ref: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "port": 443, "protocol": "HTTPS", "hostname": host,
            "tls": {"mode": "Terminate", "certificateRefs": [ref]},
            "allowedRoutes": {"namespaces": {"from": "Same"}}}


def as_controller(env: ClusterEnv) -> KubeApi:
    """A client with a token of the controller's ServiceAccount."""
    ns, name = env.release.rel.service_account.split(":")
    token = env.api.token_request(ns, name, seconds=600)
    return KubeApi(env.cluster.server, token, str(env.cluster.ca_file))


def status_of(call: Any, *args: Any, **kw: Any) -> int:
    try:
        call(*args, **kw)
    except KubeApiError as e:
        return e.status
    return 200


def listener_refs(env: ClusterEnv, name: str) -> dict[str, Any] | None:
    for lst in ((env.get("Gateway", env.apps, "web") or {}).get("status") or {}).get("listeners") or []:
        if lst["name"] == name:
            return condition({"status": lst}, "ResolvedRefs")
    return None


def generated_files(env: ClusterEnv) -> set[str]:
    return set(((env.get("Secret", env.ns, env.release.rel.tls_secret) or {}).get("data")) or {})


def test_by_default_the_controller_reads_the_secrets_of_its_own_namespace_only(env: ClusterEnv) -> None:
    other = env.namespace(f"{env.release.rel.name}-other")
    env.apply(make_tls_secret("shop-tls", env.apps, cn="shop.example.com"))
    env.apply(make_tls_secret("shared-tls", env.ns, cn="shared.example.com"))
    env.apply(make_tls_secret("elsewhere", other))

    # What the ServiceAccount may do, asked of the API server with its own token (before the
    # controller runs: the 403s these probes get are expected, the audit check starts after them)
    sa = as_controller(env)
    try:
        assert status_of(sa.get, "Secret", env.apps, "shop-tls") == 403
        assert status_of(sa.list, "Secret", env.apps) == 403
        assert status_of(sa.list, "Secret", None) == 403  # no cluster-wide read
        assert status_of(sa.get, "Secret", other, "elsewhere") == 403
        assert status_of(sa.get, "Secret", env.ns, "shared-tls") == 200
        assert status_of(sa.list, "Secret", env.ns, field_selector="type=kubernetes.io/tls") == 200
    finally:
        sa.close()
    env.audit_mark = env.cluster.audit.mark()

    env.service("api")
    env.set_load_balancer()
    ctrl = env.start_controller()
    env.gateway(listeners=[https("shop", "shop.example.com", {"name": "shop-tls"}),
                           https("shared", "shared.example.com", {"name": "shared-tls", "namespace": env.ns})])
    env.apply({"apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "ReferenceGrant",
               "metadata": {"name": "gateways", "namespace": env.ns},
               "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": env.apps}],
                        "to": [{"group": "", "kind": "Secret", "name": "shared-tls"}]}})
    # the Secret in the Gateway's namespace exists, but the controller may not read it: said so
    refs = wait_for(lambda: (c := listener_refs(env, "shop")) and c["status"] == "False" and c, 90,
                    what="listener shop ResolvedRefs=False")
    assert refs["reason"] == "InvalidCertificateRef"
    assert refs["message"] == (
        f"Secret {env.apps}/shop-tls cannot be read: the controller reads Secrets in {env.ns} only "
        "(--secret-namespaces; chart values controller.secretNamespaces, controller.secretsClusterWide)")
    # the release namespace's certificate is read and converted
    wait_for(lambda: (c := listener_refs(env, "shared")) and c["status"] == "True", 60,
             what="listener shared ResolvedRefs=True")
    wait_for(lambda: f"{env.ns}.shared-tls.pfx" in generated_files(env), 60, what="the PFX of shared-tls")
    assert f"{env.apps}.shop-tls.pfx" not in generated_files(env)
    # the controller only ever asked for what it may read
    secret_reads = [e for e in env.cluster.audit.events(env.audit_mark, user=env.controller_user())
                    if (e.get("objectRef") or {}).get("resource") == "secrets"]
    assert secret_reads and {e["objectRef"].get("namespace") for e in secret_reads} == {env.ns}

    # controller.secretNamespaces: the Gateway's namespace is read too (a helm upgrade, then the
    # controller with the chart's new environment)
    env.expect_alive.discard("ctrl-a")
    ctrl.stop()
    env.cluster.run(env.kube.helm, "upgrade", env.release.rel.name, str(CHART), "--namespace", env.ns,
                    "--reuse-values", "--set", f"controller.secretNamespaces={{{env.apps}}}", timeout=180,
                    env=HELM_ENV)
    sa = as_controller(env)
    try:
        assert status_of(sa.get, "Secret", env.apps, "shop-tls") == 200
        assert status_of(sa.get, "Secret", other, "elsewhere") == 403  # still nothing else
    finally:
        sa.close()
    env.audit_mark = env.cluster.audit.mark()
    env.start_controller("ctrl-b")
    wait_for(lambda: (c := listener_refs(env, "shop")) and c["status"] == "True", 90,
             what="listener shop ResolvedRefs=True")
    wait_for(lambda: f"{env.apps}.shop-tls.pfx" in generated_files(env), 60, what="the PFX of shop-tls")
