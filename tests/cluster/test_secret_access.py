"""Secret access on a real API server, with the chart's RBAC (docs/install.md, "Which Secrets and
ConfigMaps the controller can read"): with no namespaces listed (the default) the controller's
ServiceAccount reads certificates in every namespace, read only, so an HTTPS listener whose
Secret is in the Gateway's own namespace works after a default install; it reads only the
kubernetes.io/tls ones (a field selector) and writes none. With namespaces listed, it reads those
and no other: a certificateRef elsewhere is reported on its listener, naming the chart values;
the controller itself never gets a 403 (it watches only what it may read)."""

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


def secret_reads(env: ClusterEnv) -> list[dict[str, Any]]:
    return [e for e in env.cluster.audit.events(env.audit_mark, user=env.controller_user())
            if (e.get("objectRef") or {}).get("resource") == "secrets" and e.get("verb") in ("get", "list", "watch")]


def only_certificates_read(env: ClusterEnv) -> None:
    """Every Secret read of the controller: the kubernetes.io/tls ones (list and watch with the
    type field selector), or its own generated Secret by name; never another Secret."""
    reads = secret_reads(env)
    assert reads
    for e in reads:
        uri = str(e.get("requestURI") or "")
        own = e["verb"] == "get" and e["objectRef"].get("namespace") == env.ns and \
            e["objectRef"].get("name") == env.release.rel.tls_secret
        from urllib.parse import parse_qs, urlparse

        selector = parse_qs(urlparse(uri).query).get("fieldSelector")
        assert own or selector == ["type=kubernetes.io/tls"], uri


def test_by_default_certificates_are_read_in_every_namespace_read_only(env: ClusterEnv) -> None:
    other = env.namespace(f"{env.release.rel.name}-other")
    env.apply(make_tls_secret("shop-tls", env.apps, cn="shop.example.com"))
    env.apply(make_tls_secret("shared-tls", env.ns, cn="shared.example.com"))
    env.apply(make_tls_secret("elsewhere", other))

    # What the ServiceAccount may do, asked of the API server with its own token (before the
    # controller runs: the 403s these probes get are expected, the audit check starts after them)
    sa = as_controller(env)
    try:
        assert status_of(sa.get, "Secret", env.apps, "shop-tls") == 200
        assert status_of(sa.list, "Secret", None, field_selector="type=kubernetes.io/tls") == 200
        # read only: no write on a Secret it did not make (the shared data plane's own, by name, aside)
        assert status_of(sa.patch, "Secret", env.apps, "shop-tls", {"metadata": {"labels": {"x": "y"}}}) == 403
        assert status_of(sa.delete, "Secret", other, "elsewhere", missing_ok=False) == 403
        assert status_of(sa.create, {"apiVersion": "v1", "kind": "Secret",
                                     "metadata": {"name": "new", "namespace": env.apps}}) == 403
    finally:
        sa.close()
    env.audit_mark = env.cluster.audit.mark()

    env.service("api")
    env.set_load_balancer()
    env.start_controller()
    env.gateway(listeners=[https("shop", "shop.example.com", {"name": "shop-tls"}),
                           https("shared", "shared.example.com", {"name": "shared-tls", "namespace": env.ns}),
                           https("other", "other.example.com", {"name": "elsewhere", "namespace": other})])
    env.apply({"apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "ReferenceGrant",
               "metadata": {"name": "gateways", "namespace": env.ns},
               "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": env.apps}],
                        "to": [{"group": "", "kind": "Secret", "name": "shared-tls"}]}})
    # the Gateway's own namespace and the one granted by a ReferenceGrant: read and converted
    for name in ("shop", "shared"):
        wait_for(lambda name=name: (c := listener_refs(env, name)) and c["status"] == "True", 90,
                 what=f"listener {name} ResolvedRefs=True")
    wait_for(lambda: {f"{env.apps}.shop-tls.pfx", f"{env.ns}.shared-tls.pfx"} <= generated_files(env), 60,
             what="the PFX of shop-tls and shared-tls")
    # readable but not granted: the Gateway API's rule, not RBAC, keeps it out
    refs = wait_for(lambda: (c := listener_refs(env, "other")) and c["status"] == "False" and c, 60,
                    what="listener other ResolvedRefs=False")
    assert refs["reason"] == "RefNotPermitted"
    assert f"{other}.elsewhere.pfx" not in generated_files(env)
    only_certificates_read(env)


def test_listed_namespaces_are_the_only_ones_read(env: ClusterEnv) -> None:
    other = env.namespace(f"{env.release.rel.name}-other")
    env.apply(make_tls_secret("shop-tls", env.apps, cn="shop.example.com"))
    env.apply(make_tls_secret("elsewhere", other))
    # the namespaces this release serves, listed (a helm upgrade): Roles there, nothing cluster-wide
    env.cluster.run(env.kube.helm, "upgrade", env.release.rel.name, str(CHART), "--namespace", env.ns,
                    "--reuse-values", "--set", f"controller.secretNamespaces={{{env.apps}}}", timeout=180,
                    env=HELM_ENV)
    sa = as_controller(env)
    try:
        assert status_of(sa.get, "Secret", env.apps, "shop-tls") == 200
        assert status_of(sa.get, "Secret", other, "elsewhere") == 403
        assert status_of(sa.list, "Secret", None, field_selector="type=kubernetes.io/tls") == 403
    finally:
        sa.close()
    env.audit_mark = env.cluster.audit.mark()

    env.service("api")
    env.set_load_balancer()
    env.start_controller()
    env.gateway(listeners=[https("shop", "shop.example.com", {"name": "shop-tls"})])
    env.gateway("edge", ns=other, listeners=[https("edge", "edge.example.com", {"name": "elsewhere"})])
    wait_for(lambda: (c := listener_refs(env, "shop")) and c["status"] == "True", 90,
             what="listener shop ResolvedRefs=True")
    wait_for(lambda: f"{env.apps}.shop-tls.pfx" in generated_files(env), 60, what="the PFX of shop-tls")

    def edge_refs() -> Any:
        for lst in ((env.get("Gateway", other, "edge") or {}).get("status") or {}).get("listeners") or []:
            c = condition({"status": lst}, "ResolvedRefs")
            if c and c["status"] == "False":
                return c
        return None

    refs = wait_for(edge_refs, 90, what="listener edge ResolvedRefs=False")
    assert refs["reason"] == "InvalidCertificateRef"
    assert refs["message"].startswith(f"Secret {other}/elsewhere cannot be read: the controller reads Secrets in ")
    assert "controller.secretNamespaces" in refs["message"]
    # the controller only ever asked for what it may read
    assert {e["objectRef"].get("namespace") for e in secret_reads(env)} <= {env.ns, env.apps}
