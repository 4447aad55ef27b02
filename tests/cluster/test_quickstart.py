"""The quick start on a real API server: examples/quickstart applied next to a release of the
chart, the controller running as the chart's ServiceAccount."""

from __future__ import annotations

import hashlib
from typing import Any

import yaml

from tests.cluster.conftest import ClusterEnv, condition, wait_for
from tests.support.kubecluster import REPO


def quickstart_objects(env: ClusterEnv) -> list[dict[str, Any]]:
    """examples/quickstart in the test's namespace, for the release's GatewayClass. The file of
    what the chart installs (GatewayClass, data-plane Service) is left out: the chart made them."""
    objs = []
    for f in sorted((REPO / "examples" / "quickstart").glob("*.yaml")):
        if f.name.startswith("00-"):
            continue
        for doc in yaml.safe_load_all(f.read_text()):
            if not doc or doc["kind"] == "Namespace":
                continue
            doc["metadata"]["namespace"] = env.apps
            if doc["kind"] == "Gateway":
                doc["spec"]["gatewayClassName"] = env.release.rel.gateway_class
            objs.append(doc)
    return objs


def test_quick_start_statuses_config_and_programmed(env: ClusterEnv) -> None:
    rel = env.release.rel
    env.start_controller()
    for obj in quickstart_objects(env):
        env.apply(obj)

    env.wait_condition("GatewayClass", rel.gateway_class, "Accepted")
    gw = env.wait_condition("Gateway", "web", "Accepted", ns=env.apps)
    assert gw["reason"] == "Accepted"

    # no load-balancer address yet: the Service's cluster IP (docs/render-cli.md), then the
    # load balancer's address once the Service has one
    svc = env.get("Service", env.ns, rel.data_plane) or {}
    cluster_ip = svc["spec"]["clusterIP"]
    assert cluster_ip.startswith("198.19.")
    wait_for(lambda: ((env.get("Gateway", env.apps, "web") or {}).get("status") or {}).get("addresses")
             == [{"type": "IPAddress", "value": cluster_ip}], 60, what="Gateway address = the cluster IP")
    ip = env.set_load_balancer()
    wait_for(lambda: ((env.get("Gateway", env.apps, "web") or {}).get("status") or {}).get("addresses")
             == [{"type": "IPAddress", "value": ip}], 60, what="Gateway address from the Service's load balancer")

    route = wait_for(lambda: (r := env.get("HTTPRoute", env.apps, "shop")) and (r.get("status") or {}).get("parents")
                     and r, 60, what="HTTPRoute parent status")
    parent = route["status"]["parents"][0]
    assert parent["controllerName"] == rel.controller_name
    assert parent["parentRef"]["name"] == "web"
    assert condition({"status": parent}, "Accepted")["status"] == "True"
    assert condition({"status": parent}, "ResolvedRefs")["status"] == "True"
    listeners = wait_for(lambda: (env.get("Gateway", env.apps, "web") or {}).get("status", {}).get("listeners"), 60)
    assert listeners[0]["name"] == "http" and listeners[0]["attachedRoutes"] == 1

    # the ConfigMap the chart pre-created carries the config
    wait_for(lambda: "shop.example.com" in env.route_hosts(), 60, what="the route in twp.yaml")
    programmed = env.wait_condition("Gateway", "web", "Programmed", ns=env.apps, timeout=120)
    assert programmed["reason"] == "Programmed"
    digest = hashlib.sha256(env.root_config().encode()).hexdigest()
    pods = env.kubelet.running()
    assert len(pods) == 2 and all(p.stub.config_hash == digest for p in pods), \
        [(p.name, p.stub.config_hash) for p in pods]

    # Programmed follows the pods: one pod keeps serving the old config -> Pending until it loads
    stale = pods[0].stub
    stale.lag = True
    env.route(name="cart", host="cart.example.com", backend="api")
    wait_for(lambda: "cart.example.com" in env.route_hosts(), 60, what="the new route in twp.yaml")
    pending = env.wait_condition("Gateway", "web", "Programmed", "False", ns=env.apps, timeout=60)
    assert pending["reason"] == "Pending", pending
    # once probed, the message names the pod that serves an old config
    wait_for(lambda: pods[0].name in ((c := condition(env.get("Gateway", env.apps, "web"), "Programmed")) or {})
             .get("message", "") and c["status"] == "False", 60, what="Pending naming the stale pod")
    assert stale.config_hash == digest  # still the old config
    stale.release()
    env.wait_condition("Gateway", "web", "Programmed", ns=env.apps, timeout=90)
    new_digest = hashlib.sha256(env.root_config().encode()).hexdigest()
    assert all(p.stub.config_hash == new_digest for p in env.kubelet.running())
