"""TLS on a real API server: a kubernetes.io/tls Secret a listener references becomes a
password-less PKCS#12 in the generated Secret (the private key nowhere else); a Secret in
another namespace needs a ReferenceGrant."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from tests.cluster.conftest import ClusterEnv, condition, wait_for
from tests.integration.conftest import make_tls_secret

#: Secrets in the test's own namespaces: the chart's default (no namespaces listed) reads
#: certificates in every namespace (tests/cluster/test_secret_access.py)
CHART_DEFAULTS: dict = {}


def https(name: str, host: str, ref: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "port": 443, "protocol": "HTTPS", "hostname": host,
            "tls": {"mode": "Terminate", "certificateRefs": [ref]},
            "allowedRoutes": {"namespaces": {"from": "Same"}}}


def generated(env: ClusterEnv) -> dict[str, str]:
    sec = env.get("Secret", env.ns, env.release.rel.tls_secret) or {}
    return sec.get("data") or {}


def listener(env: ClusterEnv, name: str) -> dict[str, Any] | None:
    for lst in ((env.get("Gateway", env.apps, "web") or {}).get("status") or {}).get("listeners") or []:
        if lst["name"] == name:
            return lst
    return None


def listener_condition(env: ClusterEnv, name: str, ctype: str) -> dict[str, Any] | None:
    return condition({"status": listener(env, name)}, ctype)


@pytest.mark.parametrize("env", [CHART_DEFAULTS], indirect=True, ids=["chart-defaults"])
def test_tls_secret_becomes_pfx_and_cross_namespace_needs_a_reference_grant(env: ClusterEnv) -> None:
    certs = env.namespace(f"{env.release.rel.name}-certs")
    env.service("api")
    env.set_load_balancer()
    own = make_tls_secret("shop-tls", env.apps, cn="shop.example.com")
    env.apply(own)
    env.apply(make_tls_secret("cart-tls", certs, cn="cart.example.com"))
    env.start_controller()
    env.gateway(listeners=[
        https("shop", "shop.example.com", {"name": "shop-tls"}),
        https("cart", "cart.example.com", {"name": "cart-tls", "namespace": certs})])
    env.route(name="shop", host="shop.example.com")
    env.route(name="cart", host="cart.example.com")

    # the Secret of the Gateway's own namespace: a PFX holding its key and certificate
    key = f"{env.apps}.shop-tls.pfx"
    data = wait_for(lambda: key in (d := generated(env)) and d, 90, what=f"{key} in the generated Secret")
    pfx_key, pfx_cert, _ = pkcs12.load_key_and_certificates(base64.b64decode(data[key]), None)
    assert pfx_cert is not None and pfx_key is not None
    assert pfx_cert.public_bytes(serialization.Encoding.PEM) == base64.b64decode(own["data"]["tls.crt"])
    assert pfx_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption()) == base64.b64decode(own["data"]["tls.key"])
    config = env.root_config()
    assert key in config and "PRIVATE KEY" not in config

    # another namespace's Secret without a ReferenceGrant: not used, RefNotPermitted
    c = wait_for(lambda: listener_condition(env, "cart", "ResolvedRefs"), 60, what="cart listener ResolvedRefs")
    assert c["status"] == "False" and c["reason"] == "RefNotPermitted", c
    assert f"{certs}.cart-tls.pfx" not in generated(env)
    assert listener_condition(env, "shop", "ResolvedRefs")["status"] == "True"

    env.apply({"apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "ReferenceGrant",
               "metadata": {"name": "gateways-may-read", "namespace": certs},
               "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": env.apps}],
                        "to": [{"group": "", "kind": "Secret", "name": "cart-tls"}]}})
    wait_for(lambda: (c := listener_condition(env, "cart", "ResolvedRefs")) and c["status"] == "True", 60,
             what="cart listener ResolvedRefs True after the ReferenceGrant")
    wait_for(lambda: f"{certs}.cart-tls.pfx" in generated(env), 60, what="the granted Secret's PFX")
    env.wait_condition("Gateway", "web", "Programmed", ns=env.apps, timeout=120)

    # the grant withdrawn: the certificate goes again
    env.api.delete("ReferenceGrant", certs, "gateways-may-read")
    wait_for(lambda: f"{certs}.cart-tls.pfx" not in generated(env), 60, what="the PFX removed with the grant")
