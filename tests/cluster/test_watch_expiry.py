"""Watch expiry on a real API server: the controller is cut off, the routes change, etcd is
compacted and the API server restarted (its watch cache starts afresh), so every
resourceVersion the informers hold is gone (410 Gone); they relist and lose nothing."""

from __future__ import annotations

import pytest

from tests.cluster.conftest import ClusterEnv, wait_for
from tests.support.kubecluster import NODE_IP
from tests.support.tcprelay import TcpRelay

pytestmark = pytest.mark.timeout(600)


def test_informers_relist_after_compaction_without_losing_a_change(env: ClusterEnv) -> None:
    env.service("api")
    env.gateway()
    env.route()
    env.set_load_balancer()
    relay = TcpRelay((NODE_IP, 6443), listen_host=NODE_IP).start()
    try:
        # a Lease long enough to outlast the cut: this test is about the informers
        env.start_controller(server=relay.url, env={"TITANIUM_GATEWAY_LEASE_DURATION": "300",
                                                    "TITANIUM_GATEWAY_RENEW_DEADLINE": "240"})
        env.wait_condition("Gateway", "web", "Programmed", ns=env.apps, timeout=120)
        assert "shop.example.com" in env.route_hosts()

        relay.cut()
        mark = env.cluster.audit.mark()
        env.route(name="cart", host="cart.example.com")
        env.api.delete("HTTPRoute", env.apps, "shop")
        for i in range(5):  # history the informers never saw
            env.api.patch("Namespace", None, env.apps, {"metadata": {"labels": {"example.com/step": str(i)}}})
        revision = env.cluster.compact_etcd()
        assert revision > 0
        env.cluster.restart("kube-apiserver")
        relay.restore()

        wait_for(lambda: env.route_hosts() == {"cart.example.com"}, 120, what="the state after the relist")
        user = env.controller_user()
        # a list, or a streaming list (a watch with sendInitialEvents)
        lists = [e for e in env.cluster.audit.events(mark, user=user)
                 if e["objectRef"]["resource"] == "httproutes" and (e.get("verb") == "list" or (
                     e.get("verb") == "watch" and "sendInitialEvents=true" in e.get("requestURI", "")))]
        assert lists, "the informers did not relist HTTPRoutes"
        env.wait_condition("Gateway", "web", "Programmed", ns=env.apps, timeout=120)
    finally:
        relay.stop()
