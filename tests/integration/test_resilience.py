"""Watch expiry, dropped connections, status conflicts, malformed objects, pre-created objects."""

from __future__ import annotations

from tests.integration.conftest import Env, wait_for


def test_watch_expiry_410_relists_and_misses_nothing(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    env.start_controller()
    env.wait_programmed()
    def lists() -> int:  # a list, or a streaming list (a watch with sendInitialEvents)
        return len(env.server.requests("list", "httproutes")) + len(
            [r for r in env.server.requests("watch", "httproutes") if r.query.get("sendInitialEvents") == "true"])

    lists_before = lists()
    # hold every re-watch back, cut the watches, change things, then compact the history: the
    # resourceVersion each reflector resumes from is now expired (410)
    slow = env.server.inject("watch", "*", status=None, latency=0.5, times=None)
    env.server.close_watches()
    env.route(name="cart", host="cart.example.com")
    env.server.delete_object("HTTPRoute", "apps", "shop")
    env.server.compact()
    slow.cancel()
    wait_for(lambda: "cart.example.com" in env.root_config() and "shop.example.com" not in env.root_config(),
             timeout=10, what="state after relist")
    assert lists() > lists_before  # relisted after 410
    env.wait_programmed()


def test_dropped_connections_recover(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.start_controller()
    env.wait_programmed()
    for i in range(3):
        env.server.close_watches(abrupt=True)
        env.route(name=f"r{i}", host=f"h{i}.example.com")
    # a dropped write request too: the reconcile fails and is retried
    env.server.inject("update", "configmaps", status=None, drop=True, times=1)
    env.route(name="last", host="last.example.com")
    wait_for(lambda: all(f"h{i}.example.com" in env.root_config() for i in range(3))
             and "last.example.com" in env.root_config(), timeout=10, what="every change after drops")
    env.wait_programmed()


def test_status_conflicts_are_retried(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    # another controller's parent entry on the route must survive our writes
    other = {"parentRef": {"name": "other-gw"}, "controllerName": "example.com/other",
             "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "",
                             "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": 1}]}
    env.server.update_object("HTTPRoute", "apps", "shop", lambda o: o.__setitem__("status", {"parents": [other]}))
    env.server.inject("patch", "httproutes/status", status=409, times=3)
    env.server.inject("patch", "gateways/status", status=409, times=2)
    inst = env.start_controller()
    env.wait_programmed()
    route = wait_for(lambda: (r := env.get("HTTPRoute", "apps", "shop")) and len(r["status"]["parents"]) == 2 and r,
                     timeout=10, what="both parents")
    ctrls = [p["controllerName"] for p in route["status"]["parents"]]
    assert ctrls == ["example.com/other", env.rel.controller_name]
    assert inst.metric("titanium_status_conflicts_total", kind="HTTPRoute") >= 3


def test_malformed_object_never_stops_the_loop(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    inst = env.start_controller()
    env.wait_programmed()
    env.server.put_object({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
                           "metadata": {"name": "bad", "namespace": "apps"},
                           "spec": {"parentRefs": "not-a-list", "hostnames": [7, None], "rules": {"x": 1}}})
    env.server.put_object({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                           "metadata": {"name": "weird", "namespace": "apps"},
                           "spec": {"gatewayClassName": "titanium", "listeners": [{"port": "eighty"}]}})
    env.route(name="cart", host="cart.example.com")
    wait_for(lambda: "cart.example.com" in env.root_config(), timeout=10)
    env.wait_programmed()
    assert inst.ctrl.alive()


def test_a_crashing_render_is_retried_with_backoff(env: Env) -> None:
    from titanium_gateway.render import render

    calls = {"n": 0}

    def flaky(snap, opts):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] <= 2:
            raise RuntimeError("boom")
        return render(snap, opts)

    env.service("api")
    env.gateway()
    inst = env.start_controller(render_fn=flaky)
    env.wait_programmed()
    assert calls["n"] >= 3
    assert inst.metric("controller_runtime_reconcile_total", result="error") == 2


def test_controller_never_creates_precreated_objects(env: Env) -> None:
    for res in ("configmaps", "secrets", "leases", "deployments"):
        env.server.forbid("create", res)
    env.service("api")
    env.gateway()
    env.route()
    env.start_controller()
    env.wait_programmed()
    posts = [r for r in env.server.requests(method="POST")]
    assert all(r.resource == "events" for r in posts), [(r.path, r.status) for r in posts]


def test_missing_precreated_configmap_is_a_clear_error_and_recovers(env: Env, caplog) -> None:  # type: ignore[no-untyped-def]
    env.server.delete_object("ConfigMap", env.rel.namespace, env.rel.config_map)
    env.service("api")
    env.gateway()
    inst = env.start_controller()
    wait_for(lambda: inst.metric("controller_runtime_reconcile_total", result="error") >= 1,
             timeout=10)
    assert any("never creates it" in r.getMessage() or "never creates it" in str(getattr(r, "exc_text", ""))
               for r in caplog.records)
    assert env.get("ConfigMap", env.rel.namespace, env.rel.config_map) is None
    env.server.put_object({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": env.rel.config_map, "namespace": env.rel.namespace}})
    env.wait_programmed(timeout=15)


def test_route_moved_to_another_controller_loses_our_parent_entry(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    env.start_controller()
    env.wait_programmed()
    wait_for(lambda: (env.must("HTTPRoute", "apps", "shop").get("status") or {}).get("parents"), timeout=5)
    other = {"parentRef": {"name": "theirs"}, "controllerName": "example.com/other",
             "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "",
                             "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": 1}]}

    def move(o: dict) -> None:  # type: ignore[type-arg]
        o["spec"]["parentRefs"] = [{"name": "theirs"}]
        o["status"]["parents"].append(other)

    env.server.update_object("HTTPRoute", "apps", "shop", move)
    wait_for(lambda: [p["controllerName"] for p in env.must("HTTPRoute", "apps", "shop")["status"]["parents"]]
             == ["example.com/other"], timeout=10, what="only the other controller's entry left")
