"""Changes reach the ConfigMap; a no-op writes nothing (the API server's audit log is the
witness: every write the controller's ServiceAccount makes is in it)."""

from __future__ import annotations

import time

from tests.cluster.conftest import ClusterEnv, wait_for

QUIET = 5.0  # seconds without a write after a no-op


def quiesce(env: ClusterEnv, quiet: float = 2.0, timeout: float = 90) -> None:
    """Until the controller has written nothing but Lease renewals for ``quiet`` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        mark = env.cluster.audit.mark()
        time.sleep(quiet)
        if not [w for w in env.controller_writes(mark) if w["objectRef"]["resource"] != "leases"]:
            return
    raise AssertionError("the controller kept writing")


def test_no_write_on_a_noop_and_a_route_change_reaches_the_configmap(env: ClusterEnv) -> None:
    env.service("api")
    env.gateway()
    env.route()
    env.set_load_balancer()
    ctrl = env.start_controller()
    env.wait_condition("Gateway", "web", "Programmed", ns=env.apps, timeout=120)
    quiesce(env)

    # a watched object changes in a way the render does not read: a reconcile, no write
    mark = env.cluster.audit.mark()
    before = ctrl.metric("controller_runtime_reconcile_total")
    env.api.patch("HTTPRoute", env.apps, "shop", {"metadata": {"annotations": {"example.com/note": "unrelated"}}})
    env.api.patch("Namespace", None, env.apps, {"metadata": {"labels": {"example.com/team": "shop"}}})
    wait_for(lambda: ctrl.metric("controller_runtime_reconcile_total") > before, 30, what="a reconcile after the no-op")
    time.sleep(QUIET)
    writes = [w for w in env.controller_writes(mark) if w["objectRef"]["resource"] != "leases"]
    assert writes == [], [f"{w['verb']} {w['objectRef']}" for w in writes]

    # a real change: the path of the route -> the ConfigMap (and Programmed again)
    mark = env.cluster.audit.mark()
    env.api.patch("HTTPRoute", env.apps, "shop", {"spec": {"rules": [
        {"matches": [{"path": {"type": "PathPrefix", "value": "/checkout"}}],
         "backendRefs": [{"name": "api", "port": 8080}]}]}})
    wait_for(lambda: "/checkout" in env.root_config(), 60, what="the new path in twp.yaml")
    assert "/api" not in env.root_config()
    cm_writes = env.controller_writes(mark, resource="configmaps")
    assert cm_writes and all(w["verb"] in ("update", "patch") for w in cm_writes)
    env.wait_condition("Gateway", "web", "Programmed", ns=env.apps, timeout=90)
