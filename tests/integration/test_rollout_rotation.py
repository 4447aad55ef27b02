"""Programmed waits for the listener rollout (R7); a certificate rotation pokes the pods (R2);
a fresh install with no Gateway does not roll the data plane (R5)."""

from __future__ import annotations

import base64
import hashlib
import time

from tests.integration.conftest import LISTENERS, Env, condition, make_tls_secret, wait_for
from titanium_gateway.writers.pods import parse_poke

POKE = "gateway.titaniumproxy.com/config-poke"
HTTPS = [{"name": "http", "port": 80, "protocol": "HTTP"},
         {"name": "https", "port": 443, "protocol": "HTTPS", "hostname": "shop.example.com",
          "tls": {"mode": "Terminate", "certificateRefs": [{"name": "shop-tls"}]}}]


def _pods(env: Env) -> list[dict]:
    return [env.must("Pod", env.rel.namespace, s.name) for s in env.fleet]


def _loaded_everywhere(env: Env, needle: str) -> bool:
    root = env.root_config()
    h = hashlib.sha256(root.encode()).hexdigest()
    return needle in root and all(s.config_hash == h for s in env.fleet)


def test_programmed_waits_for_pods_started_with_the_new_listeners(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    env.start_controller()
    env.wait_programmed()
    assert all((p["metadata"].get("annotations") or {}).get(LISTENERS) == "8080/http" for p in _pods(env))
    assert env.rollout is not None
    env.rollout.hold()  # the Deployment rollout takes a while
    env.server.put_object(make_tls_secret("shop-tls", "apps"))
    env.gateway(listeners=HTTPS)
    # the old pods reload the new twp.yaml at once (and report its hash) ...
    wait_for(lambda: _loaded_everywhere(env, "8443"), timeout=10, what="new config loaded by the old pods")
    time.sleep(2.0)  # several probe periods
    # ... but they bind the listeners they were started with: not programmed yet
    c = condition(env.must("Gateway", "apps", "web"), "Programmed")
    assert c is not None and c["status"] == "False" and c["reason"] == "Pending", c
    assert "rollout" in c["message"] and any(s.name in c["message"] for s in env.fleet), c["message"]
    env.rollout.release()
    env.wait_programmed(timeout=10)
    assert all(p["metadata"]["annotations"][LISTENERS] == "8080/http,8443/https" for p in _pods(env))


def test_certificate_rotation_pokes_the_pods(env: Env) -> None:
    env.service("api")
    env.server.put_object(make_tls_secret("shop-tls", "apps"))
    env.gateway(listeners=HTTPS)
    env.route()
    env.start_controller()
    env.wait_programmed()

    def pfx() -> str:
        sec = env.must("Secret", env.rel.namespace, env.rel.tls_secret)
        return str((sec.get("data") or {}).get("apps.shop-tls.pfx") or "")

    first_pfx, root = pfx(), env.root_config()
    assert first_pfx
    wait_for(lambda: all(POKE in (p["metadata"].get("annotations") or {}) for p in _pods(env)), timeout=5)
    pokes = {p["metadata"]["name"]: p["metadata"]["annotations"][POKE] for p in _pods(env)}
    env.server.put_object(make_tls_secret("shop-tls", "apps"))  # a rotated certificate, same names
    wait_for(lambda: pfx() != first_pfx, timeout=5, what="rotated pfx written")
    assert base64.b64decode(pfx())
    # the kubelet must refresh the Secret volume now, not on its next periodic sync
    # (a new poke value, not a re-poke ``<value>/<n>`` of the old one)
    wait_for(lambda: all(parse_poke(p["metadata"]["annotations"][POKE])[0] != parse_poke(pokes[p["metadata"]["name"]])[0]
                         for p in _pods(env)),
             timeout=5, what="pods poked after the certificate rotation")
    assert env.root_config() == root  # twp.yaml unchanged: only the Secret was written
    env.wait_programmed()


def test_fresh_install_without_a_gateway_does_not_roll_the_data_plane(env: Env) -> None:
    inst = env.start_controller()
    wait_for(lambda: env.root_config(), timeout=10, what="first config written")
    wait_for(lambda: inst.metric("controller_runtime_reconcile_total", result="success") >= 2, timeout=10)
    time.sleep(1.0)
    assert env.writes("deployments") == []
    dep = env.must("Deployment", env.rel.namespace, env.rel.data_plane)
    assert LISTENERS not in ((dep["spec"]["template"].get("metadata") or {}).get("annotations") or {})
    # the first Gateway stamps the Deployment (its first listener set), once
    env.service("api")
    env.gateway()
    env.route()
    env.wait_programmed()
    assert len(env.writes("deployments")) == 1
    dep = env.must("Deployment", env.rel.namespace, env.rel.data_plane)
    assert dep["spec"]["template"]["metadata"]["annotations"][LISTENERS] == "8080/http"
