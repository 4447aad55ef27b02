"""--secret-namespaces: TLS Secrets are watched per listed namespace (one reflector each), only
kubernetes.io/tls ones; a Secret elsewhere is never read."""

from __future__ import annotations

from tests.integration.conftest import Env, make_tls_secret, wait_for


def test_secret_namespaces_scope_the_watch(env: Env) -> None:
    env.service("api")
    env.ensure_ns("other")
    env.server.put_object(make_tls_secret("shop-tls", "apps"))
    env.server.put_object(make_tls_secret("elsewhere", "other"))
    env.gateway(listeners=[{"name": "https", "port": 443, "protocol": "HTTPS", "hostname": "shop.example.com",
                            "tls": {"mode": "Terminate", "certificateRefs": [{"name": "shop-tls"}]}}])
    env.route()
    inst = env.start_controller("--secret-namespaces=apps,tenants")
    env.wait_programmed()
    secret_reads = [r for r in env.server.requests(method="GET") if r.resource == "secrets"]
    # by name: only the Secret the controller writes, read once before its first write
    assert {(r.namespace, r.name) for r in secret_reads if r.name} <= {(env.rel.namespace, env.rel.tls_secret)}
    watches = [r for r in secret_reads if not r.name]
    assert watches and {r.namespace for r in watches} <= {"apps", "tenants"}
    assert all(r.query.get("fieldSelector") == "type=kubernetes.io/tls" for r in watches)
    cache = inst.ctrl.informers["Secret"].store
    assert cache.keys() == ["apps/shop-tls"]
    wait_for(lambda: "apps.shop-tls.pfx" in ((env.get("Secret", env.rel.namespace, env.rel.tls_secret) or {})
                                             .get("data") or {}), timeout=5)
