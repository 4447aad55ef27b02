"""Changes flow to the data plane; no-op resyncs write nothing; certificates and listeners."""

from __future__ import annotations

import base64
import time

from tests.integration.conftest import Env, make_tls_secret, wait_for


def test_change_reaches_configmap_within_one_coalescing_window(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    env.start_controller(min_reconcile_ms=500)
    env.wait_programmed()
    time.sleep(0.6)  # let the last reconcile's window pass: the next change runs at once
    t0 = time.monotonic()
    env.route(name="cart", host="cart.example.com")
    wait_for(lambda: "cart.example.com" in env.root_config(), timeout=5, what="new host in twp.yaml")
    # one coalescing window (500 ms) plus the watch and the write, not a poll period
    assert time.monotonic() - t0 < 2.0  # the 5 s probe poll or a resync would be far slower
    env.wait_programmed()


def test_burst_of_changes_is_coalesced(env: Env) -> None:
    env.service("api")
    env.gateway()
    inst = env.start_controller(min_reconcile_ms=500)
    env.wait_programmed()
    before = inst.ctrl.reconciles
    for i in range(30):
        env.route(name=f"r{i}", host=f"h{i}.example.com")
    wait_for(lambda: "h29.example.com" in env.root_config(), timeout=10)
    # 30 changes in a burst: a handful of reconciles, not 30
    assert inst.ctrl.reconciles - before < 12


def test_no_write_on_noop_resync(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    inst = env.start_controller()
    env.wait_programmed()
    ctrl = inst.ctrl
    # quiesce: wait until nothing more is written for a while
    wait_for(lambda: not ctrl.trigger.pending(), timeout=10)
    time.sleep(0.3)
    env.server.clear_log()
    inst.reconcile_again(3)
    n = ctrl.reconciles
    # a watched object that changes nothing the render reads
    env.server.update_object("Namespace", None, "apps", lambda o: o["metadata"].setdefault("labels", {}).update(x="1"))
    wait_for(lambda: ctrl.reconciles > n, timeout=5)
    writes = [r for r in env.writes() if r.resource != "leases"]  # lease renewals are not config writes
    assert writes == [], [(r.method, r.path) for r in writes]


def test_certificate_rotation_updates_tls_secret(env: Env) -> None:
    env.service("api")
    env.server.put_object(make_tls_secret("shop-tls", "apps"))
    env.gateway(listeners=[{"name": "https", "port": 443, "protocol": "HTTPS", "hostname": "shop.example.com",
                            "tls": {"mode": "Terminate", "certificateRefs": [{"name": "shop-tls"}]}}])
    env.route()
    env.start_controller()
    env.wait_programmed()

    def pfx() -> bytes:
        sec = env.get("Secret", env.rel.namespace, env.rel.tls_secret) or {}
        data = sec.get("data") or {}
        return base64.b64decode(data.get("apps.shop-tls.pfx", ""))

    first = wait_for(pfx, what="pfx in the TLS Secret")
    cfg = env.root_config()
    assert "apps.shop-tls.pfx" in cfg and "PRIVATE KEY" not in cfg
    env.server.put_object(make_tls_secret("shop-tls", "apps"))  # rotated: new key and certificate
    wait_for(lambda: pfx() and pfx() != first, timeout=5, what="rotated pfx")
    sec = env.must("Secret", env.rel.namespace, env.rel.tls_secret)
    assert sec["type"] == "Opaque"
    # no longer referenced: the file leaves the Secret once the config without it is confirmed
    env.gateway()
    wait_for(lambda: "apps.shop-tls.pfx" not in env.root_config(), timeout=5)
    wait_for(lambda: not pfx(), timeout=10, what="pfx removed after confirmation")
    env.wait_programmed()


def test_listener_change_stamps_deployment(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    env.start_controller()
    env.wait_programmed()

    def stamp() -> str:
        dep = env.get("Deployment", env.rel.namespace, env.rel.data_plane) or {}
        return (((dep.get("spec") or {}).get("template") or {}).get("metadata") or {}).get(
            "annotations", {}).get("gateway.titaniumproxy.com/listeners", "")

    assert stamp() == "8080/http"
    patches = len(env.writes("deployments"))
    env.route(name="cart", host="cart.example.com")  # not a listener change: no stamp
    wait_for(lambda: "cart.example.com" in env.root_config(), timeout=5)
    env.server.put_object(make_tls_secret("shop-tls", "apps"))
    env.gateway(listeners=[{"name": "http", "port": 80, "protocol": "HTTP"},
                           {"name": "https", "port": 443, "protocol": "HTTPS", "hostname": "shop.example.com",
                            "tls": {"mode": "Terminate", "certificateRefs": [{"name": "shop-tls"}]}}])
    wait_for(lambda: stamp() == "8080/http,8443/https", timeout=5, what="listener stamp")
    assert len(env.writes("deployments")) == patches + 1


def test_stale_pod_keeps_programmed_pending_until_it_catches_up(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    env.start_controller()
    env.wait_programmed()
    stale = env.fleet[1]
    stale.lag = True  # keeps serving (and reporting) the old config
    env.route(name="cart", host="cart.example.com")
    c = env.wait_programmed(status="False", timeout=10)
    assert c["reason"] == "Pending"
    wait_for(lambda: stale.name in ((env.must("Gateway", "apps", "web")["status"]["conditions"])
                                    and next(x for x in env.must("Gateway", "apps", "web")["status"]["conditions"]
                                             if x["type"] == "Programmed")["message"]),
             timeout=5, what="Pending message naming the stale pod")
    time.sleep(1.5)  # several probe periods: still pending while the pod is stale
    assert env.wait_programmed(status="False", timeout=1)["reason"] == "Pending"
    stale.release()
    env.wait_programmed(status="True", timeout=10)


def test_pod_falling_behind_after_confirmation_turns_pending(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    inst = env.start_controller()
    env.wait_programmed()
    env.fleet[0].lie_hash = "0" * 64  # e.g. restarted on an old volume
    inst.ctrl.trigger.trigger()  # any event does
    c = env.wait_programmed(status="False", timeout=10)
    assert c["reason"] == "Pending" and env.fleet[0].name in c["message"]
    env.fleet[0].lie_hash = None
    env.wait_programmed(timeout=10)
