"""Listener rollout (R7), certificate-rotation poke (R2) and no stamp on a fresh install (R5),
through the reconcile pass with a fake render and a recording API."""

from __future__ import annotations

import dataclasses
from typing import Any

from tests.controller.test_reconciler import NS, FakeRender, ScriptedProber, setup
from tests.writers.fakes import RecordingApi
from titanium_gateway.controller.options import parse_options
from titanium_gateway.controller.reconciler import Controller
from titanium_gateway.controller.wiring import build_controller
from titanium_gateway.kinds import GATEWAYS
from titanium_gateway.kube.api import CONFIG_MAPS, DEPLOYMENTS, PODS, SECRETS
from titanium_gateway.metrics import Registry
from titanium_gateway.prober.prober import ProbeResult
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.result import ListenerKey, RenderResult
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.writers.deployment import LISTENERS_ANNOTATION
from titanium_gateway.writers.pods import POKE_ANNOTATION

BOTH = frozenset({ListenerKey(8080, False), ListenerKey(8443, True)})


class ListenerRender(FakeRender):
    """FakeRender with a settable listener set and TLS files."""

    def __init__(self) -> None:
        super().__init__()
        self.listeners: frozenset[ListenerKey] = frozenset({ListenerKey(8080, False)})
        self.tls_files: dict[str, bytes] = {"apps.c.pfx": b"pfx"}

    def __call__(self, snap: Snapshot, opts: RenderOptions) -> RenderResult:
        res = super().__call__(snap, opts)
        shared = dataclasses.replace(res.shared, listeners=self.listeners, tls_files=dict(self.tls_files))
        return dataclasses.replace(res, planes=(shared, *res.planes[1:]))


def _gateway_programmed(api: RecordingApi) -> dict[str, Any]:
    return next(c for c in api.obj(GATEWAYS, "apps", "web")["status"]["conditions"] if c["type"] == "Programmed")


def _pod(stamp: str | None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": "p0", "namespace": NS, "uid": "u0"}
    if stamp is not None:
        md["annotations"] = {LISTENERS_ANNOTATION: stamp}
    return {"metadata": md, "status": {"podIP": "10.0.0.9"}}


def _input_changed(ctrl: Controller, n: int = 0) -> None:
    """A cached object changed (the fake render's output was changed by the test)."""
    ctrl.informers["Namespace"].store.upsert({"metadata": {"name": f"ns-{n}", "resourceVersion": str(n)}})


def _with_render(render: ListenerRender, **kw: Any) -> tuple[Controller, RecordingApi, ScriptedProber]:
    ctrl, api, _, prober = setup(**kw)
    ctrl.render_fn = render
    return ctrl, api, prober


def test_programmed_waits_for_pods_created_with_the_new_listener_set() -> None:
    render = ListenerRender()
    ctrl, api, prober = _with_render(render)
    res = ctrl.reconcile()
    assert res is not None
    prober.answer = ProbeResult(res.config_hash)
    ctrl.reconcile()
    ctrl.reconcile()
    assert ctrl.status_writer.wait_idle(10) and _gateway_programmed(api)["status"] == "True"
    # an HTTPS listener: the old pod reloads the new twp.yaml (the prober would confirm the hash)
    # but it was started with 8080/http only: not confirmed until the rollout replaced it
    render.config = b"listeners: [8080, 8443]\n"
    render.listeners = BOTH
    _input_changed(ctrl)
    calls = len(prober.calls)
    res = ctrl.reconcile()
    assert res is not None
    ann = api.obj(DEPLOYMENTS, NS, "tp")["spec"]["template"]["metadata"]["annotations"]
    assert ann[LISTENERS_ANNOTATION] == "8080/http,8443/https"
    prober.answer = ProbeResult(res.config_hash)
    for _ in range(3):
        ctrl.reconcile()
    assert ctrl.status_writer.wait_idle(10)
    cond = _gateway_programmed(api)
    assert cond["status"] == "False"
    assert "p0" in cond["message"] and "rollout" in cond["message"]
    assert len(prober.calls) == calls  # not confirmed whatever /version says
    # the rollout: a pod created from the stamped template (same address here)
    ctrl.informers["Pod"].store.upsert(_pod("8080/http,8443/https"))
    ctrl.reconcile()
    ctrl.reconcile()
    assert ctrl.status_writer.wait_idle(10)
    assert _gateway_programmed(api)["status"] == "True"
    assert len(prober.calls) > calls


def test_without_a_deployment_only_the_hash_is_checked() -> None:
    api = RecordingApi()
    for name in ("tp", "tp-part-1"):
        api.put(CONFIG_MAPS, {"metadata": {"name": name, "namespace": NS}})
    api.put(SECRETS, {"metadata": {"name": "tp-tls", "namespace": NS}})
    pod = api.put(PODS, _pod(None))  # no stamp: nothing stamps the pods without --data-plane-deployment
    gw = api.put(GATEWAYS, {"metadata": {"name": "web", "namespace": "apps"}})
    opts = parse_options([f"--data-plane-service={NS}/tp", f"--data-plane-namespace={NS}", "--config-parts=1",
                          "--identity=me"], {})
    render, prober = ListenerRender(), ScriptedProber()
    ctrl = build_controller(opts, api, render_fn=render, registry=Registry(), prober=prober)  # type: ignore[arg-type]
    ctrl.informers["Pod"].store.upsert(pod)
    ctrl.informers["Gateway"].store.upsert(gw)
    ctrl.informers["EndpointSlice"].store.upsert({
        "metadata": {"name": "tp-a", "namespace": NS, "labels": {"kubernetes.io/service-name": "tp"}},
        "endpoints": [{"addresses": ["10.0.0.9"], "conditions": {"ready": True}}]})
    res = ctrl.reconcile()
    assert res is not None and len(prober.calls) == 1
    assert prober.calls[0][0][0].pod == "p0"  # named after the Pod with the endpoint's address
    prober.answer = ProbeResult(res.config_hash)
    ctrl.reconcile()
    ctrl.reconcile()
    assert ctrl.status_writer.wait_idle(10) and _gateway_programmed(api)["status"] == "True"
    assert api.writes("deployments") == []


def test_certificate_rotation_pokes_the_pods() -> None:
    render = ListenerRender()
    ctrl, api, prober = _with_render(render)
    res = ctrl.reconcile()
    assert res is not None
    first = api.obj(PODS, NS, "p0")["metadata"]["annotations"][POKE_ANNOTATION]
    ctrl.informers["Pod"].store.upsert(api.obj(PODS, NS, "p0"))  # type: ignore[arg-type]
    pokes = len(api.writes("pods"))
    render.tls_files = {"apps.c.pfx": b"rotated pfx"}  # same twp.yaml, new certificate bytes
    _input_changed(ctrl)
    res2 = ctrl.reconcile()
    assert res2 is not None and res2.config_hash == res.config_hash
    assert len(api.writes("secrets")) == 2
    assert len(api.writes("pods")) == pokes + 1
    assert api.obj(PODS, NS, "p0")["metadata"]["annotations"][POKE_ANNOTATION] != first


def test_fresh_install_without_listeners_does_not_roll_the_data_plane() -> None:
    render = ListenerRender()
    render.listeners = frozenset()
    ctrl, api, prober = _with_render(render)
    ctrl.informers["Pod"].store.upsert(_pod(None))  # created from the chart's template: no stamp
    for _ in range(2):
        ctrl.reconcile()
    assert api.writes("deployments") == []
    render.listeners = frozenset({ListenerKey(8080, False)})  # the first Gateway
    _input_changed(ctrl)
    ctrl.reconcile()
    assert len(api.writes("deployments")) == 1
