"""Route status shared with another controller on a real API server: their parent entry
survives our writes, and a 409 Conflict answered to a status write is retried (the 409 comes
from a real admission webhook the test registers)."""

from __future__ import annotations

import threading
from typing import Any

from tests.cluster.conftest import ClusterEnv, wait_for
from tests.support.kubecluster import NODE_IP
from tests.support.webhook import AdmissionWebhook

OTHER = "example.com/other-controller"


def other_parent(generation: int = 1) -> dict[str, Any]:
    return {"parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "their-gateway"},
            "controllerName": OTHER,
            "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "theirs",
                            "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": generation}]}


def parents(env: ClusterEnv, name: str = "shop") -> list[dict[str, Any]]:
    return ((env.get("HTTPRoute", env.apps, name) or {}).get("status") or {}).get("parents") or []


def test_another_controllers_parent_entry_survives_and_409s_are_retried(env: ClusterEnv) -> None:
    env.service("api")
    env.gateway()
    env.route()  # parentRefs: our Gateway only; the other controller reports its own parent too
    env.api.patch("HTTPRoute", env.apps, "shop", {"status": {"parents": [other_parent()]}}, subresource="status")

    # the first 3 status writes of the controller to this route are answered 409 Conflict
    user = env.controller_user()
    lock = threading.Lock()
    left = {"n": 3}

    def decide(req: dict[str, Any]) -> tuple[int, str, str] | None:
        if (req.get("userInfo") or {}).get("username") != user:
            return (409, "Conflict", "probe") if req.get("name") == "probe" else None
        with lock:
            if left["n"] <= 0:
                return None
            left["n"] -= 1
        return 409, "Conflict", 'Operation cannot be fulfilled on httproutes.gateway.networking.k8s.io "shop": ' \
                                "the object has been modified; please apply your changes to the latest version"

    hook = AdmissionWebhook(NODE_IP, decide).start()
    name = f"{env.release.rel.name}-conflicts"
    try:
        env.api.create(hook.configuration(name, [
            {"apiGroups": ["gateway.networking.k8s.io"], "apiVersions": ["v1"], "operations": ["UPDATE"],
             "resources": ["httproutes/status"], "scope": "Namespaced"}], namespace=env.apps))
        # the API server picks the configuration up asynchronously: wait until it calls us
        env.route(name="probe", host="probe.example.com", gateway="not-ours")

        def probe_denied() -> bool:
            try:
                env.api.patch("HTTPRoute", env.apps, "probe", {"status": {"parents": [other_parent()]}},
                              subresource="status")
            except Exception as e:  # the webhook's 409
                return "probe" in str(e)
            return False

        wait_for(probe_denied, 60, 0.5, "the webhook in force")

        ctrl = env.start_controller()
        env.set_load_balancer()
        env.wait_condition("Gateway", "web", "Programmed", ns=env.apps, timeout=120)
        both = wait_for(lambda: len(p := parents(env)) == 2 and p, 90, what="both parent entries")
        by_ctrl = {p["controllerName"]: p for p in both}
        assert by_ctrl[OTHER] == other_parent()  # theirs untouched
        ours = by_ctrl[env.release.rel.controller_name]
        assert ours["parentRef"]["name"] == "web"
        assert {c["type"]: c["status"] for c in ours["conditions"]}["Accepted"] == "True"
        assert left["n"] == 0 and len([r for r in hook.denied() if r.get("name") == "shop"]) == 3
        assert ctrl.metric("titanium_status_conflicts_total") >= 3

        # the other controller updates its entry; then our status changes: both kept
        env.api.patch("HTTPRoute", env.apps, "shop", {"status": {"parents": [ours, other_parent(2)]}},
                      subresource="status")
        env.api.patch("HTTPRoute", env.apps, "shop", {"spec": {"rules": [
            {"backendRefs": [{"name": "missing-backend", "port": 8080}]}]}})

        def resolved_refs_false() -> Any:
            p = {x["controllerName"]: x for x in parents(env)}
            mine = p.get(env.release.rel.controller_name) or {}
            c = {x["type"]: x for x in mine.get("conditions") or []}.get("ResolvedRefs") or {}
            return c.get("status") == "False" and p

        after = wait_for(resolved_refs_false, 60, what="our ResolvedRefs False after the change")
        assert after[OTHER] == other_parent(2)
    finally:
        env.api.delete("ValidatingWebhookConfiguration", None, name)
        hook.stop()
