"""The data plane is what ``--data-plane-service`` serves, whatever labels its pods carry: the
reconcile pokes, stamps and probes the Service's pods (EndpointSlice targetRefs, addresses, its
selector), with a fake render and a recording API (no informer threads)."""

from __future__ import annotations

from typing import Any

from tests.controller.test_reconciler import NS, FakeRender, ScriptedProber, _programmed_of
from tests.writers.fakes import RecordingApi
from titanium_gateway.controller.options import parse_options
from titanium_gateway.controller.wiring import build_controller
from titanium_gateway.kube.api import CONFIG_MAPS, DEPLOYMENTS, PODS, SECRETS
from titanium_gateway.metrics import Registry
from titanium_gateway.prober.prober import Endpoint, Prober, ProbeResult
from titanium_gateway.writers.deployment import LISTENERS_ANNOTATION
from titanium_gateway.writers.pods import POKE_ANNOTATION

SLICE_LABEL = "kubernetes.io/service-name"


def _pod(name: str, ip: str | None, labels: dict[str, str], stamp: str | None = "8080/http") -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-{name}", "labels": labels}
    if stamp is not None:
        md["annotations"] = {LISTENERS_ANNOTATION: stamp}
    return {"metadata": md, "status": {"podIP": ip} if ip else {}}


def _slice(endpoints: list[dict[str, Any]], name: str = "edge-a") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "labels": {SLICE_LABEL: "edge"}}, "endpoints": endpoints}


def _ep(ip: str, pod: str | None, ready: bool = True) -> dict[str, Any]:
    e: dict[str, Any] = {"addresses": [ip], "conditions": {"ready": ready}}
    if pod is not None:
        e["targetRef"] = {"kind": "Pod", "name": pod, "namespace": NS}
    return e


class Cluster:
    """A controller for Service ``gw/edge`` (raw manifests: labels ``app=edge``, nothing of the
    chart's) and the API objects the chart would pre-create."""

    def __init__(self, *, deployment: bool = True, selector: dict[str, str] | None = None) -> None:
        self.api = api = RecordingApi()
        for name in ("edge", "edge-part-1"):
            api.put(CONFIG_MAPS, {"metadata": {"name": name, "namespace": NS}})
        api.put(SECRETS, {"metadata": {"name": "edge-tls", "namespace": NS}})
        api.put(DEPLOYMENTS, {"metadata": {"name": "edge", "namespace": NS}})
        args = [f"--data-plane-service={NS}/edge", f"--data-plane-namespace={NS}", "--config-parts=1", "--identity=me"]
        if deployment:
            args.append("--data-plane-deployment=edge")
        self.render, self.prober = FakeRender(), ScriptedProber()
        self.ctrl = build_controller(parse_options(args, {}), api, render_fn=self.render, registry=Registry(),
                               prober=self.prober)  # type: ignore[arg-type]
        self.service(selector if selector is not None else {"app": "edge"})

    def service(self, selector: dict[str, str] | None) -> None:
        spec: dict[str, Any] = {"ports": [{"port": 80}]}
        if selector is not None:
            spec["selector"] = selector
        self.ctrl.informers["Service"].store.upsert({"metadata": {"name": "edge", "namespace": NS}, "spec": spec})

    def pod(self, obj: dict[str, Any]) -> None:
        self.ctrl.informers["Pod"].store.upsert(self.api.put(PODS, obj))

    def slice(self, obj: dict[str, Any]) -> None:
        self.ctrl.informers["EndpointSlice"].store.upsert(obj)

    def poked(self) -> list[str]:
        return sorted(c["name"] for c in self.api.writes("pods")
                      if POKE_ANNOTATION in c["body"]["metadata"]["annotations"])


def test_the_pod_informer_watches_the_data_plane_namespace_without_a_label_selector() -> None:
    c = Cluster()
    (r,) = c.ctrl.informers["Pod"].reflectors
    assert r.namespace == NS and r.label_selector is None and r.field_selector is None


def test_pods_with_any_labels_are_poked_stamped_and_probed() -> None:
    c = Cluster()
    c.pod(_pod("edge-0", "10.0.0.1", {"app": "edge"}))
    c.pod(_pod("edge-1", "10.0.0.2", {"app": "edge"}))
    c.pod(_pod("controller-0", "10.0.0.7", {"app.kubernetes.io/name": "titanium-gateway"}))
    c.pod(_pod("titanium-0", "10.0.0.8", {"app.kubernetes.io/name": "titanium",
                                           "app.kubernetes.io/component": "data-plane"}))  # another release's
    c.slice(_slice([_ep("10.0.0.1", "edge-0"), _ep("10.0.0.2", "edge-1", ready=False)]))
    res = c.ctrl.reconcile()
    assert res is not None
    assert c.poked() == ["edge-0", "edge-1"]  # a pod that is not ready yet is poked too
    assert [(e.pod, e.address) for e in c.prober.calls[-1][0]] == [("edge-0", "10.0.0.1")]
    # the listener stamp of the Service's pods counts: no "not in the pod cache" for them
    c.prober.answer = ProbeResult(res.config_hash)
    c.ctrl.reconcile()
    assert c.ctrl.snapshot().confirmed_config_hash == res.config_hash


def test_endpoints_without_target_ref_are_matched_by_address() -> None:
    c = Cluster(selector={})  # a Service without selector, with a hand-made EndpointSlice
    c.pod(_pod("raw-0", "10.0.0.1", {}))
    c.pod(_pod("other", "10.0.0.5", {}))
    c.slice(_slice([_ep("10.0.0.1", None)]))
    c.ctrl.reconcile()
    assert c.poked() == ["raw-0"]
    assert c.prober.calls[-1][0] == [Endpoint("raw-0", "10.0.0.1")]


def test_a_service_whose_selector_changes_pokes_the_new_pods() -> None:
    c = Cluster(deployment=False, selector={"track": "blue"})
    c.pod(_pod("blue-0", None, {"track": "blue"}))
    c.pod(_pod("green-0", None, {"track": "green"}))
    c.ctrl.reconcile()
    assert c.poked() == ["blue-0"]
    c.service({"track": "green"})
    c.ctrl.informers["Namespace"].store.upsert({"metadata": {"name": "x", "resourceVersion": "1"}})  # re-render
    c.ctrl.reconcile()
    assert c.poked() == ["blue-0", "green-0"]


def test_the_chart_labels_still_work() -> None:
    chart = {"app.kubernetes.io/name": "titanium", "app.kubernetes.io/component": "data-plane",
             "app.kubernetes.io/instance": "titanium-gateway"}
    c = Cluster(selector=chart)
    c.pod(_pod("edge-0", "10.0.0.1", chart))
    c.slice(_slice([_ep("10.0.0.1", "edge-0")]))
    c.ctrl.reconcile()
    assert c.poked() == ["edge-0"] and c.prober.calls[-1][0] == [Endpoint("edge-0", "10.0.0.1")]


def test_no_ready_endpoint_reaches_programmed_with_its_reason() -> None:
    c = Cluster(deployment=False)
    c.pod(_pod("edge-0", "10.0.0.1", {"app": "edge"}))
    c.slice(_slice([_ep("10.0.0.1", "edge-0", ready=False)]))
    c.ctrl.prober = Prober(9901, "t", registry=Registry())  # no endpoint: it sends nothing
    c.ctrl.reconcile()
    c.ctrl.reconcile()  # the message reaches Programmed at once
    assert _programmed_of(c.ctrl.last_result)["message"] == (
        "no ready data-plane endpoint: none of the 1 endpoints of the data-plane Service gw/edge is ready "
        "(pod edge-0); a data-plane pod turns ready once it has loaded a config")


def test_only_the_data_planes_pods_trigger_a_reconcile() -> None:
    c = Cluster()
    c.slice(_slice([_ep("10.0.0.1", "edge-0"), _ep("10.0.0.3", None)]))
    calls: list[Any] = []
    c.ctrl.trigger.trigger = lambda *a, **kw: calls.append(a)  # type: ignore[method-assign]

    def triggers(old: dict[str, Any] | None, new: dict[str, Any]) -> bool:
        """Whether the pod's add and delete (or this update) trigger; never only one of them."""
        calls.clear()
        if old is None:
            c.ctrl.events.on_pod_add(new)
            c.ctrl.events.on_pod_delete(new)
            assert len(calls) in (0, 2)
            return len(calls) == 2
        c.ctrl.events.on_pod_update(old, new)
        return len(calls) == 1

    edge0 = _pod("edge-0", "10.0.0.1", {})
    assert triggers(None, edge0)  # in the slices by targetRef
    assert triggers(None, _pod("raw", "10.0.0.3", {}))  # by address
    assert triggers(None, _pod("edge-9", None, {"app": "edge"}))  # the selector
    ctl = _pod("controller-0", "10.0.0.7", {"app": "ctl"})
    assert not triggers(None, ctl)
    assert not triggers(ctl, {**ctl, "status": {"podIP": "10.0.0.8"}})
    # a pod leaving the selector (its labels changed) still triggers: it was the data plane's
    moved = _pod("edge-9", None, {"app": "edge"})
    assert triggers(moved, _pod("edge-9", None, {"app": "moved"}))
