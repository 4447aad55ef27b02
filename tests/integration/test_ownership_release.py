"""An object that stops being ours (its class changed, or the class's controller did) must not
keep our Accepted/Programmed: the previous controller steps back (Gateway API), its status is
reset to the CRDs' "Waiting for controller" default; another controller's status is never
overwritten."""

from __future__ import annotations

from typing import Any

from tests.integration.conftest import GW, Env, condition, wait_for

OTHER = "example.com/other-controller"


def _waiting(obj: dict[str, Any] | None, *types: str) -> bool:
    conds = {c.get("type"): c for c in ((obj or {}).get("status") or {}).get("conditions") or []}
    return set(conds) == set(types) and all(
        conds[t].get("status") == "Unknown" and conds[t].get("reason") == "Pending" for t in types)


def _other_class(env: Env, name: str = "other") -> None:
    env.server.put_object({"apiVersion": GW, "kind": "GatewayClass", "metadata": {"name": name},
                           "spec": {"controllerName": OTHER}})


def test_gateway_moved_to_another_class_loses_our_conditions(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    env.start_controller()
    env.wait_programmed()
    _other_class(env)
    env.server.update_object("Gateway", "apps", "web", lambda o: o["spec"].update(gatewayClassName="other"))
    gw = wait_for(lambda: (g := env.get("Gateway", "apps", "web")) and _waiting(g, "Accepted", "Programmed") and g,
                  timeout=15, what="the Gateway's status back to Waiting for controller")
    assert not (gw.get("status") or {}).get("listeners"), "our listener statuses stayed"
    # the route's status is written in the same batch, in parallel: it may land a moment later
    wait_for(lambda: not [p for p in (env.must("HTTPRoute", "apps", "shop").get("status") or {}).get("parents") or []
                          if p.get("controllerName") == env.rel.controller_name],
             timeout=15, what="our parent status gone from the route")
    assert (env.must("GatewayClass", None, "other").get("status") or {}).get("conditions", [{}])[0].get(
        "status") != "True"  # never ours to accept


def test_gateway_class_controller_changed_releases_the_class_and_its_gateways(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.start_controller()
    env.wait_programmed()
    cls = env.rel.gateway_class
    assert condition(env.get("GatewayClass", None, cls), "Accepted")["status"] == "True"  # type: ignore[index]
    env.server.update_object("GatewayClass", None, cls, lambda o: o["spec"].update(controllerName=OTHER))
    wait_for(lambda: _waiting(env.get("GatewayClass", None, cls), "Accepted"), timeout=15,
             what="the GatewayClass's status back to Waiting for controller")
    wait_for(lambda: _waiting(env.get("Gateway", "apps", "web"), "Accepted", "Programmed"), timeout=15,
             what="the Gateway's status back to Waiting for controller")


def test_new_owner_status_is_never_overwritten(env: Env) -> None:
    """The other controller writes its status first (before we notice): we leave it alone."""
    env.service("api")
    env.gateway()
    inst = env.start_controller()
    env.wait_programmed()
    _other_class(env)

    def moved_with_status(o: dict[str, Any]) -> None:
        o["spec"]["gatewayClassName"] = "other"
        o["status"] = {"conditions": [
            {"type": "Accepted", "status": "True", "reason": "Accepted", "message": "theirs",
             "observedGeneration": o["metadata"].get("generation", 1) + 1,
             "lastTransitionTime": "2026-01-01T00:00:00Z"}]}

    env.server.update_object("Gateway", "apps", "web", moved_with_status)
    n = inst.ctrl.reconciles
    wait_for(lambda: inst.ctrl.reconciles >= n + 2, timeout=10, what="two more reconciles")
    inst.ctrl.trigger.trigger()
    wait_for(lambda: inst.ctrl.reconciles >= n + 3, timeout=10, what="a further reconcile")
    acc = condition(env.get("Gateway", "apps", "web"), "Accepted")
    assert acc is not None and acc["message"] == "theirs"
    assert not [r for r in env.writes("gateways") if r.name == "web" and r.status < 300 and (r.body or {}).get("status", {}).get("conditions", [{}])[0].get(
                    "message") == "Waiting for controller"]


def test_ingress_moved_to_another_class_loses_our_address(env: Env) -> None:
    env.service("api")
    env.ensure_ns("apps")
    env.server.update_object("Service", env.rel.namespace, env.rel.data_plane,
                             lambda o: o.update(status={"loadBalancer": {"ingress": [{"ip": "192.0.2.7"}]}}))
    env.server.put_object({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                           "metadata": {"name": "other"}, "spec": {"controller": "example.com/other"}})
    env.server.put_object({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "shop", "namespace": "apps"},
        "spec": {"ingressClassName": env.rel.ingress_class, "rules": [{"host": "shop.example.com", "http": {
            "paths": [{"path": "/", "pathType": "Prefix",
                       "backend": {"service": {"name": "api", "port": {"number": 8080}}}}]}}]}})
    env.start_controller()

    def lb() -> Any:
        return (((env.get("Ingress", "apps", "shop") or {}).get("status") or {}).get("loadBalancer") or {}).get(
            "ingress")

    wait_for(lambda: lb() == [{"ip": "192.0.2.7"}], timeout=15, what="our address on the Ingress")
    env.server.update_object("Ingress", "apps", "shop", lambda o: o["spec"].update(ingressClassName="other"))
    wait_for(lambda: not lb(), timeout=15, what="our address removed from the Ingress")
