"""The data plane is what ``--data-plane-service`` serves, whatever labels its pods carry, on a
real API server with the real Deployment, ReplicaSet and EndpointSlice controllers.

The chart's data-plane Deployment is replaced by one of the same name (the name the chart's
RBAC lets the controller stamp) whose pods carry labels of their own (``app: edge-proxy``), as a
data plane installed from raw manifests would be, and the data-plane Service selects those.
Pods with exactly the chart's data-plane labels keep running next to it, not behind the
Service. The controller pokes the edge pods (their volumes refresh only on a change of their
Pod: without the poke they would never load a config), probes them and turns Programmed True;
a listener change stamps the Deployment and Programmed waits for the rollout's pods, found by
their own labels. The look-alike pods are never poked nor probed."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from tests.cluster.conftest import ClusterEnv, wait_for
from tests.support.kubecluster import NODE_NAME
from tests.support.kubelet import StubKubelet
from titanium_gateway.writers.pods import POKE_ANNOTATION

pytestmark = pytest.mark.timeout(420)

EDGE = {"app": "edge-proxy", "tier": "edge"}  # nothing of the chart's labels
LISTENERS = "gateway.titaniumproxy.com/listeners"


def _edge_deployment(chart: dict[str, Any]) -> dict[str, Any]:
    """The chart's data-plane Deployment as raw manifests with labels of their own, its pod
    template stamped with the listener set of the test's Gateway (so its pods need no rollout
    to count: only the poke brings them the config)."""
    tmpl = copy.deepcopy(chart["spec"]["template"])
    tmpl["metadata"] = {"labels": dict(EDGE), "annotations": {LISTENERS: "8080/http"}}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": chart["metadata"]["name"], "namespace": chart["metadata"]["namespace"],
                         "labels": dict(EDGE)},
            "spec": {"replicas": 2, "selector": {"matchLabels": dict(EDGE)}, "template": tmpl,
                     "strategy": copy.deepcopy(chart["spec"].get("strategy") or {})}}


def _on(env: ClusterEnv, kubelet: StubKubelet) -> list[Any]:
    """The kubelet's pods when every one runs the ConfigMap's current config."""
    digest = hashlib.sha256(env.root_config().encode()).hexdigest()
    running = kubelet.running()
    return running if running and all(p.stub.config_hash == digest for p in running) else []


def test_a_data_plane_with_other_labels_is_poked_stamped_probed_and_confirmed(env: ClusterEnv) -> None:
    api, ns, name = env.api, env.ns, env.release.rel.data_plane
    chart_labels = env.release.data_plane_selector
    chart_pods = {p.name for p in env.data_plane_pods(2)}
    chart_dep = api.get("Deployment", ns, name)

    # raw manifests: the same Deployment name, other labels; the Service selects them
    api.delete("Deployment", ns, name, propagation="Foreground")
    wait_for(lambda: api.get_object("Deployment", ns, name) is None and not api.list(
        "Pod", ns, label_selector=",".join(f"{k}={v}" for k, v in chart_labels.items())), 120,
        what="the chart's data-plane Deployment and its pods gone")
    api.patch("Service", ns, name, [{"op": "replace", "path": "/spec/selector", "value": EDGE}], type="json")
    edge = StubKubelet(env.cluster, ns, EDGE, token=env.release.rel.token, config_map=env.release.rel.config_map,
                       mounted_parts=env.release.rel.parts, sync_period=3600).start()  # only a poke refreshes
    try:
        env.apply(_edge_deployment(chart_dep))
        # look-alikes: the chart's data-plane labels, running (the chart's stub kubelet), not behind the Service
        for i in range(2):
            api.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": f"lookalike-{i}", "namespace": ns,
                "labels": {**chart_labels, "app.kubernetes.io/instance": env.release.rel.name}},
                "spec": {"nodeName": NODE_NAME, "automountServiceAccountToken": False,
                         "containers": [{"name": "titanium", "image": "titanium"}]}})
        running = wait_for(lambda: len(r := env.kubelet.running()) == 2 and r, 60, what="the look-alike pods running")
        lookalikes = {p.name: p for p in running}
        assert set(lookalikes) == {"lookalike-0", "lookalike-1"}
        wait_for(lambda: len(edge.running()) == 2, 120, what="the edge pods running")

        env.service("api")
        env.gateway()
        env.route()
        env.set_load_balancer()
        mark = env.cluster.audit.mark()
        env.start_controller()
        programmed = env.wait_condition("Gateway", "web", "Programmed", ns=env.apps, timeout=120)
        assert programmed["reason"] == "Programmed"
        first = wait_for(lambda: _on(env, edge), 30, what="the edge pods on the config")
        assert len(first) == 2
        pods = {p["metadata"]["name"]: p for p in api.list("Pod", ns, label_selector="app=edge-proxy")}
        for p in first:
            assert POKE_ANNOTATION in pods[p.name]["metadata"]["annotations"]
        # probed: Programmed turns True once every READY pod confirms, and a pod turns ready only
        # once it has loaded a config, so the second may be probed on the next reconcile
        wait_for(lambda: all([r for r in p.stub.requests if r.path == "/version" and r.authorized] for p in first),
                 30, what="both edge pods probed")

        # a listener change: the Deployment is stamped, its new pods (other labels) are awaited
        env.gateway(listeners=[{"name": "http", "port": 80, "protocol": "HTTP",
                                "allowedRoutes": {"namespaces": {"from": "Same"}}},
                               {"name": "alt", "port": 443, "protocol": "HTTP",
                                "allowedRoutes": {"namespaces": {"from": "Same"}}}])
        wait_for(lambda: (api.get("Deployment", ns, name)["spec"]["template"]["metadata"].get("annotations") or {})
                 .get(LISTENERS) == "8080/http,8443/http", 60, what="the Deployment stamped")
        rolled = wait_for(lambda: (r := _on(env, edge)) and not {p.name for p in r} & {p.name for p in first} and r,
                          180, what="the rollout's pods on the new config")
        env.wait_condition("Gateway", "web", "Programmed", ns=env.apps, timeout=120)
        pods = {p["metadata"]["name"]: p for p in api.list("Pod", ns, label_selector="app=edge-proxy")}
        assert all(pods[p.name]["metadata"]["annotations"][LISTENERS] == "8080/http,8443/http" for p in rolled)

        poked = {e["objectRef"]["name"] for e in env.controller_writes(mark, "pods")}
        assert {p.name for p in first} <= poked, poked
        assert not poked & (set(lookalikes) | chart_pods), poked
        for lp in lookalikes.values():  # nothing of the look-alikes: neither poked nor probed
            assert POKE_ANNOTATION not in (api.get("Pod", ns, lp.name)["metadata"].get("annotations") or {})
            assert not [r for r in lp.stub.requests if r.path == "/version"], lp.stub.requests[-3:]
    finally:
        edge.stop()
