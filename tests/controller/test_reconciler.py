"""The reconcile pass with a fake render and a recording API (no informer threads)."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable
from typing import Any

from tests.writers.fakes import RecordingApi
from titanium_gateway.controller.options import parse_options
from titanium_gateway.controller.reconciler import Controller
from titanium_gateway.controller.wiring import build_controller
from titanium_gateway.kinds import GATEWAYS
from titanium_gateway.kube.api import CONFIG_MAPS, DEPLOYMENTS, PODS, SECRETS
from titanium_gateway.metrics import Registry
from titanium_gateway.prober.prober import Endpoint, ProbeResult
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.result import (
    EventRecord,
    GatewayOutcome,
    ListenerKey,
    ObjectStatus,
    RenderResult,
)
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.render.status import programmed

NS = "gw"


class ScriptedProber:
    def __init__(self) -> None:
        self.answer: ProbeResult | None = None
        self.calls: list[tuple[list[Endpoint], str]] = []
        self.no_endpoints = ""

    def probe(self, endpoints: Iterable[Endpoint], expected: str, *, no_endpoints: str = "") -> ProbeResult:
        eps = list(endpoints)
        self.calls.append((eps, expected))
        self.no_endpoints = no_endpoints
        return self.answer or ProbeResult(None, "pod p0 runs config old")


class FakeRender:
    def __init__(self) -> None:
        self.config = b"routes: []\n"
        self.delivery_error = ""
        self.parts: tuple[tuple[str, bytes], ...] = ()
        self.snapshots: list[Snapshot] = []

    def __call__(self, snap: Snapshot, opts: RenderOptions) -> RenderResult:
        self.snapshots.append(snap)
        h = hashlib.sha256(self.config).hexdigest()
        state = programmed.delivery(h, self.delivery_error, assume_programmed=opts.assume_programmed,
                                    confirmed_hash=snap.confirmed_config_hash, probe_message=snap.probe_message)
        # (as the render does: the Gateway's outcome, its status built with the delivery)
        outcome = GatewayOutcome("gateway.networking.k8s.io/v1", "Gateway", "apps", "web", 1, (),
                                 (True, "Accepted", "Gateway is accepted"), True, "", listeners=None)
        return RenderResult.of_config(
            self.config, h, parts=self.parts, tls_files={"apps.c.pfx": b"pfx"},
            statuses=(programmed.status(outcome, state, snap.now),),
            events=(EventRecord("Ingress", "apps", "i", "Warning", "InvalidPath", "bad"),),
            listeners=frozenset({ListenerKey(8080, False)}), delivery_error=self.delivery_error,
            gateway_outcomes=(outcome,))


def setup(leader: bool = True, clock: Any = None) -> tuple[Controller, RecordingApi, FakeRender, ScriptedProber]:
    api = RecordingApi()
    api.put(CONFIG_MAPS, {"metadata": {"name": "tp", "namespace": NS}})
    api.put(CONFIG_MAPS, {"metadata": {"name": "tp-part-1", "namespace": NS}})
    api.put(SECRETS, {"metadata": {"name": "tp-tls", "namespace": NS}})
    api.put(DEPLOYMENTS, {"metadata": {"name": "tp", "namespace": NS}})
    # created from the template stamped with the render's listener set (see test_rollout.py)
    pod = api.put(PODS, {"metadata": {"name": "p0", "namespace": NS, "uid": "u0",
                                      "annotations": {"gateway.titaniumproxy.com/listeners": "8080/http"}},
                         "status": {"podIP": "10.0.0.9"}})
    gw = api.put(GATEWAYS, {"metadata": {"name": "web", "namespace": "apps"}})
    opts = parse_options([f"--data-plane-service={NS}/tp", f"--data-plane-namespace={NS}", "--config-parts=1",
                          "--data-plane-deployment=tp", "--identity=me"], {})
    render, prober = FakeRender(), ScriptedProber()
    flag = {"leader": leader}
    extra: dict[str, Any] = {"clock": clock} if clock is not None else {}
    ctrl = build_controller(opts, api, is_leader=lambda: flag["leader"], render_fn=render, registry=Registry(),
                      prober=prober, **extra)  # type: ignore[arg-type]
    ctrl.informers["Pod"].store.upsert(pod)
    ctrl.informers["Gateway"].store.upsert(gw)
    ctrl.informers["EndpointSlice"].store.upsert({
        "metadata": {"name": "tp-a", "namespace": NS, "labels": {"kubernetes.io/service-name": "tp"}},
        "endpoints": [{"addresses": ["10.0.0.9"], "conditions": {"ready": True}, "targetRef": {"name": "p0"}}]})
    return ctrl, api, render, prober


def first_pass(ctrl: Controller) -> None:
    """The first pass of a term writes the config and probes the pods before any status (what
    they run was unknown): statuses and Events come with the pass the probe triggers."""
    assert ctrl.reconcile() is not None
    assert ctrl.trigger.pending()


def write_order(api: RecordingApi) -> list[tuple[str, str]]:
    return [(c["plural"], c.get("name") or c["body"]["metadata"]["name"]) for c in api.writes()]


def test_follower_renders_and_writes_nothing() -> None:
    ctrl, api, render, prober = setup(leader=False)
    assert ctrl.reconcile() is None
    assert api.writes() == [] and render.snapshots == [] and prober.calls == []


def test_leader_writes_in_order_then_probes() -> None:
    ctrl, api, render, prober = setup()
    res = ctrl.reconcile()
    assert res is not None
    order = write_order(api)
    assert order[:4] == [("secrets", "tp-tls"), ("configmaps", "tp"), ("pods", "p0"), ("deployments", "tp")]
    # the first pass probes before any status: what the pods run was unknown
    assert prober.calls == [([Endpoint("p0", "10.0.0.9")], res.config_hash)]
    assert ctrl.status_writer.wait_idle(10)
    assert ("gateways", "web") not in write_order(api)
    # the probe message reaches Programmed at once (pending: then a poll is scheduled)
    assert ctrl.trigger.pending()
    ctrl.reconcile()
    assert render.snapshots[-1].now.endswith("Z") and len(render.snapshots) == 1
    assert ctrl.status_writer.wait_idle(10)  # statuses: the status worker's, meanwhile
    order = write_order(api)
    assert ("gateways", "web") in order and ("events", "i") in [(p, n.split(".")[0]) for p, n in order]
    gw = api.obj(GATEWAYS, "apps", "web")
    assert _brief(_programmed_in(gw)) == ("Programmed", "False", "Pending", "pod p0 runs config old")
    assert len(prober.calls) == 2  # one probe a pass


def test_confirmation_flips_programmed_and_triggers_at_once() -> None:
    ctrl, api, render, prober = setup()
    res = ctrl.reconcile()
    assert res is not None
    prober.answer = ProbeResult(res.config_hash)
    ctrl.reconcile()
    assert ctrl.trigger.pending() and ctrl.trigger.next_run_at() is not None
    ctrl.reconcile()  # Programmed decided again on the last result: no second render
    assert len(render.snapshots) == 1 and ctrl.reprograms == 2  # (the first probe's message, then this)
    assert _programmed_of(ctrl.last_result)["status"] == "True"
    assert ctrl.status_writer.wait_idle(10)
    gw = api.obj(GATEWAYS, "apps", "web")
    assert _programmed_in(gw)["status"] == "True"


def _brief(cond: dict[str, Any]) -> tuple[str, str, str, str]:
    return cond["type"], cond["status"], cond["reason"], cond["message"]


def _programmed_in(obj: dict[str, Any]) -> dict[str, Any]:
    """The Programmed condition of a Gateway object's status."""
    return next(c for c in obj["status"]["conditions"] if c["type"] == "Programmed")


def _programmed_of(result: RenderResult | None) -> dict[str, Any]:
    assert result is not None
    gateway = next(st for st in result.statuses if st.kind == "Gateway")
    return next(c for c in gateway.status["conditions"] if c["type"] == "Programmed")


def _programmed_writes(api: RecordingApi) -> list[dict[str, Any]]:
    return [c for cond in (((w.get("body") or {}).get("status") or {}).get("conditions") or []
                           for w in api.writes("gateways")) for c in cond if c.get("type") == "Programmed"]


def test_a_new_term_probes_before_any_status_and_keeps_programmed_true() -> None:
    """A failover: the previous leader wrote the config the pods serve and Programmed True. The
    new leader forgot what was confirmed (a peer may have written since), so it probes before it
    writes any status: Programmed never goes False/Pending in between."""
    ctrl, api, render, prober = setup()
    h = hashlib.sha256(render.config).hexdigest()
    prober.answer = ProbeResult(h)
    first_pass(ctrl)
    ctrl.reconcile()
    assert ctrl.status_writer.wait_idle(10)
    assert [c["status"] for c in _programmed_writes(api)] == ["True"]
    ctrl.informers["Gateway"].store.upsert(api.obj(GATEWAYS, "apps", "web"))  # the informer sees it
    n_probes, n_writes = len(prober.calls), len(api.writes("gateways"))

    ctrl.on_started_leading()  # the next term (as after a failover to this replica)
    assert ctrl.reconcile() is not None
    assert len(prober.calls) == n_probes + 1  # probed in the term's first pass ...
    assert ctrl.status_writer.wait_idle(10)
    assert len(api.writes("gateways")) == n_writes  # ... and no status before that probe's answer is in
    assert ctrl.trigger.pending()  # the pass that writes them, at once
    ctrl.reconcile()
    assert _programmed_of(ctrl.last_result)["status"] == "True"
    assert ctrl.status_writer.wait_idle(10)
    assert all(c["status"] == "True" for c in _programmed_writes(api))
    assert _programmed_in(api.obj(GATEWAYS, "apps", "web"))["status"] == "True"


def test_a_new_term_whose_pods_do_not_confirm_writes_pending_with_the_probe_message_first() -> None:
    ctrl, api, render, prober = setup()
    ctrl.on_started_leading()
    first_pass(ctrl)  # prober: "pod p0 runs config old"
    assert ctrl.status_writer.wait_idle(10)
    assert api.writes("gateways") == []
    ctrl.reconcile()
    assert ctrl.status_writer.wait_idle(10)
    # the first status written already says why (not the render's default "waiting for ..." first)
    assert [_brief(c) for c in _programmed_writes(api)] == [("Programmed", "False", "Pending", "pod p0 runs config old")]
    assert ctrl.reconcile() is not None  # later passes of the term: statuses as usual, one probe each
    assert len(prober.calls) == 3


def test_only_the_first_pass_of_a_term_holds_statuses_back() -> None:
    """After the term's first probe a new config is written and its statuses go out in the same
    pass (Pending: the pods have not loaded it yet), as before."""
    ctrl, api, render, prober = setup()
    h = hashlib.sha256(render.config).hexdigest()
    prober.answer = ProbeResult(h)
    first_pass(ctrl)
    ctrl.reconcile()
    assert ctrl.status_writer.wait_idle(10)
    render.config = b"routes: [new]\n"
    ctrl.informers["Gateway"].store.upsert({**api.obj(GATEWAYS, "apps", "web"), "spec": {"changed": True}})
    n = len(api.writes("gateways"))
    ctrl.reconcile()
    assert ctrl.status_writer.wait_idle(10)
    assert len(api.writes("gateways")) == n + 1
    assert _programmed_writes(api)[-1]["status"] == "False"


def test_noop_reconcile_writes_nothing() -> None:
    ctrl, api, render, prober = setup()
    ctrl.reconcile()
    prober.answer = ProbeResult(render(Snapshot(), RenderOptions()).config_hash)
    ctrl.reconcile()
    assert ctrl.status_writer.wait_idle(10)
    # refresh the informer's Gateway (as the watch would) and the pod's poke annotation
    ctrl.informers["Gateway"].store.upsert(api.obj(GATEWAYS, "apps", "web"))  # type: ignore[arg-type]
    ctrl.informers["Pod"].store.upsert(api.obj(PODS, NS, "p0"))  # type: ignore[arg-type]
    ctrl.reconcile()
    assert ctrl.status_writer.wait_idle(10)
    n = len(api.writes())
    ctrl.reconcile()
    ctrl.reconcile()
    assert ctrl.status_writer.wait_idle(10)
    assert len(api.writes()) == n


def test_delivery_error_keeps_the_old_config_but_writes_status() -> None:
    ctrl, api, render, prober = setup()
    render.delivery_error = "the config needs 9 parts, the pods mount 8"
    ctrl.reconcile()
    assert ctrl.status_writer.wait_idle(10)
    plurals = {p for p, _ in write_order(api)}
    assert "configmaps" not in plurals and "secrets" not in plurals and "gateways" in plurals
    assert prober.calls == []


def test_losing_leadership_mid_reconcile_stops_writes() -> None:
    ctrl, api, render, prober = setup()
    calls: dict[str, Any] = {"n": 0}

    def flaky() -> bool:
        calls["n"] += 1
        return calls["n"] <= 2  # leader for the first checks only

    ctrl.guard._is_leader = flaky
    try:
        ctrl.reconcile()
        raise AssertionError("expected NotLeader")
    except Exception as e:
        assert type(e).__name__ == "NotLeader"
    assert len(api.writes()) == 1  # the Secret, then the check before the ConfigMap failed



def test_health_alive_turns_false_when_a_reconcile_is_stuck() -> None:
    import threading
    import time

    ctrl, api, render, prober = setup()
    gate = threading.Event()

    def stuck(snap: Snapshot, opts: RenderOptions) -> RenderResult:
        gate.wait(10)
        return render(snap, opts)

    ctrl.render_fn = stuck
    ctrl.stuck_after = 0.2
    ctrl.start()
    try:
        assert ctrl.informers.wait_for_sync(5)
        ctrl.informers.stop()
        deadline = time.monotonic() + 5
        while ctrl.alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not ctrl.alive()
        gate.set()
        deadline = time.monotonic() + 5
        while not ctrl.alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ctrl.alive()
    finally:
        gate.set()
        ctrl.stop()


def _fail_then_retry(ctrl: Controller) -> float:
    try:
        ctrl.reconcile()
    except Exception as e:  # noqa: BLE001 - the worker's catch-all
        return ctrl.schedule_retry(e)
    raise AssertionError("the reconcile did not fail")


def test_429_on_a_writer_defers_the_retry_by_retry_after_even_when_changes_arrive() -> None:
    from titanium_gateway.kube.api import ApiError
    from titanium_gateway.kube.clock import FakeClock

    clock = FakeClock()
    ctrl, api, render, prober = setup(clock=clock)
    api.fail_next("replace", "configmaps", ApiError(429, "TooManyRequests", "wait", retry_after=3.0))
    assert _fail_then_retry(ctrl) == 3.0  # the back-off alone would be 0.5 s
    ctrl.trigger.done()
    ctrl.trigger.trigger()  # an informer event arrives meanwhile
    assert ctrl.trigger.next_run_at() == clock.now() + 3.0
    clock.step(2.9)
    assert ctrl.trigger.wait(0) is False
    clock.step(0.1)
    assert ctrl.trigger.wait(0) is True


def test_429_on_a_status_write_pauses_the_status_worker_not_the_config_path() -> None:
    import time

    from titanium_gateway.kube.api import ApiError

    ctrl, api, render, prober = setup()
    first_pass(ctrl)
    sent: list[float] = []
    orig = api.patch

    def patch(res: Any, *a: Any, **kw: Any) -> Any:
        if res.plural == "gateways":
            sent.append(time.monotonic())
        return orig(res, *a, **kw)

    api.patch = patch  # type: ignore[method-assign]
    api.fail_next("patch", "gateways", ApiError(429, "TooManyRequests", "wait", retry_after=1.0))
    assert ctrl.reconcile() is not None  # the reconcile does not fail: statuses are the worker's
    assert ctrl.trigger.deferred_until() is None
    assert api.obj(CONFIG_MAPS, NS, "tp")["data"]  # the config was written
    assert ctrl.status_writer.wait_idle(10)
    assert len(sent) == 2 and sent[1] - sent[0] >= 1.0  # held back until Retry-After, then sent once
    assert _programmed_in(api.obj(GATEWAYS, "apps", "web"))["type"] == "Programmed"


def test_a_config_change_during_a_status_storm_is_written_without_waiting() -> None:
    import threading

    from titanium_gateway.kinds import HTTPROUTES

    ctrl, api, render, prober = setup()
    first_pass(ctrl)
    gate = threading.Event()
    blocked = threading.Event()
    orig = api.patch

    def patch(res: Any, *a: Any, **kw: Any) -> Any:
        if kw.get("subresource") == "status":
            blocked.set()
            gate.wait(30)
        return orig(res, *a, **kw)

    api.patch = patch  # type: ignore[method-assign]
    storm = tuple(ObjectStatus("gateway.networking.k8s.io/v1", "HTTPRoute", "apps", f"r{i}",
                               {"parents": [{"parentRef": {"name": "web"}, "controllerName": ctrl.opts.controller_name,
                                             "conditions": []}]}) for i in range(200))
    for i in range(200):
        ctrl.informers["HTTPRoute"].store.upsert(api.put(HTTPROUTES, {"metadata": {"name": f"r{i}", "namespace": "apps"}}))
    base = render.__call__

    def with_storm(snap: Snapshot, opts: RenderOptions) -> RenderResult:
        res = base(snap, opts)
        return RenderResult.of_config(res.config, res.config_hash, tls_files=res.tls_files,
                                      statuses=res.statuses + storm, events=res.events, listeners=res.listeners,
                                      gateway_outcomes=res.gateway_outcomes)

    ctrl.render_fn = with_storm
    try:
        ctrl.reconcile()
        assert blocked.wait(10)  # the status worker is busy writing (blocked)
        render.config = b"routes: [changed]\n"
        ctrl.informers["Service"].store.upsert({"metadata": {"name": "s", "namespace": "apps"}})
        ctrl.reconcile()  # returns although every status write is still blocked
        assert api.obj(CONFIG_MAPS, NS, "tp")["data"]["twp.yaml"] == "routes: [changed]\n"
        assert api.writes("httproutes") == []  # none got through yet
    finally:
        gate.set()
    assert ctrl.status_writer.wait_idle(30)
    assert len(api.writes("httproutes")) == 200  # one write per route: the second pass's are unchanged


def test_status_worker_latest_wins_and_checks_the_leader() -> None:
    import threading

    ctrl, api, render, prober = setup()
    w = ctrl.status_writer
    gate = threading.Event()
    entered = threading.Event()
    orig = api.patch

    def patch(res: Any, *a: Any, **kw: Any) -> Any:
        entered.set()
        gate.wait(30)
        return orig(res, *a, **kw)

    api.patch = patch  # type: ignore[method-assign]

    def st(msg: str) -> ObjectStatus:
        return ObjectStatus("gateway.networking.k8s.io/v1", "Gateway", "apps", "web",
                            {"conditions": [{"type": "Accepted", "status": "True", "message": msg}]})

    try:
        w.submit([st("one")])
        assert entered.wait(10)
        for msg in ("two", "three", "four"):
            w.submit([st(msg)])
        assert w.pending() == 1
    finally:
        gate.set()
    assert w.wait_idle(10)
    msgs = [c["body"]["status"]["conditions"][0]["message"] for c in api.writes("gateways")]
    assert msgs[0] == "one" and set(msgs) == {"one", "four"}  # "two" and "three" were superseded
    assert api.obj(GATEWAYS, "apps", "web")["status"]["conditions"][0]["message"] == "four"
    n = len(msgs)
    # not the leader: nothing is written, nothing kept pending
    ctrl.guard._is_leader = lambda: False
    w.submit([st("five")])
    assert w.wait_idle(10) and w.pending() == 0
    assert len(api.writes("gateways")) == n


def test_error_without_retry_after_keeps_the_exponential_back_off() -> None:
    from titanium_gateway.kube.api import ApiError
    from titanium_gateway.kube.clock import FakeClock

    clock = FakeClock()
    ctrl, api, render, prober = setup(clock=clock)
    delays = []
    for _ in range(3):
        api.fail_next("replace", "configmaps", ApiError(500, "InternalError", "boom"))
        delays.append(_fail_then_retry(ctrl))
        ctrl.trigger.done()
    assert delays == [0.5, 1.0, 2.0]
    ctrl.trigger.trigger()
    assert ctrl.trigger.next_run_at() is not None and ctrl.trigger.deferred_until() is None


def test_429_on_an_event_defers_the_next_reconcile() -> None:
    from titanium_gateway.kube.api import ApiError
    from titanium_gateway.kube.clock import FakeClock

    clock = FakeClock()
    ctrl, api, render, prober = setup(clock=clock)
    first_pass(ctrl)
    api.fail_next("create", "events", ApiError(429, "TooManyRequests", "wait", retry_after=2.0))
    ctrl.reconcile()
    assert ctrl.trigger.deferred_until() == clock.now() + 2.0
    assert not [c for c in api.writes("events") if c["verb"] == "create"][1:]


def test_a_reconcile_is_scheduled_when_an_event_bump_is_due() -> None:
    """In a quiet cluster nothing triggers a reconcile: the 30-minute bump must still happen."""
    from titanium_gateway.kube.clock import FakeClock
    from titanium_gateway.writers.events import REPEAT_INTERVAL

    clock = FakeClock()
    ctrl, api, render, prober = setup(clock=clock)
    prober.answer = ProbeResult(hashlib.sha256(render.config).hexdigest(), "")
    first_pass(ctrl)  # the config is confirmed: one more reconcile at once
    assert ctrl.trigger.wait(0)
    ctrl.reconcile()  # posts the Event
    ctrl.trigger.done()
    posted_at = clock.now()
    clock.step(1)
    assert ctrl.trigger.wait(0) is False
    at = ctrl.trigger.next_run_at()
    assert at is not None and at == posted_at + REPEAT_INTERVAL
    clock.step(REPEAT_INTERVAL)
    assert ctrl.trigger.wait(0)
    ctrl.reconcile()
    assert [c for c in api.writes("events") if c["verb"] == "patch" and c["body"].get("series")]


def test_gc_tuning_freezes_after_sync_relist_or_a_large_batch_only() -> None:
    import gc

    from titanium_gateway.controller import reconciler

    ctrl, api, render, prober = setup()
    ctrl.gc_tuning = True
    try:
        ctrl._maybe_freeze_gc()
        first = ctrl._frozen_at
        assert first is not None and gc.get_freeze_count() > 0
        ctrl.informers["Gateway"].store.upsert({"metadata": {"name": "other", "namespace": "apps"}})
        ctrl._maybe_freeze_gc()
        assert ctrl._frozen_at == first  # one change: not worth a collection
        store = ctrl.informers["Service"].store
        for i in range(reconciler.FREEZE_AFTER_CHANGES):
            store.upsert({"metadata": {"name": f"s{i}", "namespace": "apps"}})
        ctrl._maybe_freeze_gc()
        assert ctrl._frozen_at is not None and ctrl._frozen_at[0] > first[0]
        mark = ctrl._frozen_at
        ctrl.informers["Service"].reflectors[0].lists += 1  # a relist
        ctrl._maybe_freeze_gc()
        assert ctrl._frozen_at != mark
    finally:
        gc.unfreeze()


def test_store_changes_count_every_mutation() -> None:
    from titanium_gateway.kube.store import Store

    s = Store()
    assert s.changes == 0
    s.upsert({"metadata": {"name": "a", "resourceVersion": "1"}})
    s.upsert({"metadata": {"name": "a", "resourceVersion": "2"}})
    s.delete("a")
    assert s.changes == 3
    s.delete("a")  # absent: nothing changed
    s.replace([{"metadata": {"name": "b", "resourceVersion": "3"}}], "3")
    assert s.changes == 4


def test_unchanged_inputs_reprobe_without_rendering_again() -> None:
    ctrl, api, render, prober = setup()
    ctrl.reconcile()  # the probe reports "pod p0 runs config old": Programmed's message changes
    ctrl.reconcile()  # ... decided again on the last result, without a render
    assert len(render.snapshots) == 1 and ctrl.renders == 1 and ctrl.reprograms == 1
    assert _programmed_of(ctrl.last_result)["message"] == "pod p0 runs config old"
    writes = len(api.writes())
    for _ in range(3):  # the Programmed poll: nothing the render reads changed
        assert ctrl.reconcile() is ctrl.last_result
    assert len(render.snapshots) == 1 and len(prober.calls) == 5 and ctrl.reprograms == 1
    assert len(api.writes()) == writes
    # a pod update is not a render input either
    ctrl.informers["Pod"].store.upsert({"metadata": {"name": "p1", "namespace": NS, "uid": "u1"}})
    ctrl.reconcile()
    assert len(render.snapshots) == 1
    # any cached object the render reads renders again
    ctrl.informers["Service"].store.upsert({"metadata": {"name": "s", "namespace": "apps"}})
    ctrl.reconcile()
    assert len(render.snapshots) == 2
    # a new probe message or a confirmation decides Programmed again, without a render
    prober.answer = ProbeResult(None, "pod p0 is not ready")
    ctrl.reconcile()
    ctrl.reconcile()
    assert len(render.snapshots) == 2 and ctrl.reprograms == 2
    assert _programmed_of(ctrl.last_result)["message"] == "pod p0 is not ready"
    ctrl.reconcile()
    assert len(render.snapshots) == 2 and ctrl.reprograms == 2


def test_a_new_term_or_a_failed_pass_renders_again() -> None:
    from titanium_gateway.kube.api import ApiError

    ctrl, api, render, prober = setup()
    ctrl.reconcile()
    ctrl.reconcile()  # (only the probe message changed: no render)
    ctrl.on_started_leading()
    ctrl.reconcile()
    assert len(render.snapshots) == 2
    # another replica wrote meanwhile: the new term must write the root again, and that fails
    api.put(CONFIG_MAPS, {"metadata": {"name": "tp", "namespace": NS}, "data": {"twp.yaml": "older"}})
    api.fail_next("replace", "configmaps", ApiError(500, "InternalError", "boom"))
    ctrl.on_started_leading()
    try:
        ctrl.reconcile()
        raise AssertionError("expected the write to fail")
    except ApiError:
        pass
    ctrl.reconcile()
    assert len(render.snapshots) == 4
    assert api.obj(CONFIG_MAPS, NS, "tp")["data"]["twp.yaml"] == render.config.decode()


def test_failure_back_off_uses_the_controller_rate_limiter_and_counts_retries() -> None:
    from titanium_gateway.kube.api import ApiError
    from titanium_gateway.kube.clock import FakeClock

    clock = FakeClock()
    ctrl, api, render, prober = setup(clock=clock)
    assert 'workqueue_adds_total{name="reconcile"}' in ctrl.registry.render_text()
    for _ in range(2):
        api.fail_next("replace", "configmaps", ApiError(500, "InternalError", "boom"))
        _fail_then_retry(ctrl)
        ctrl.trigger.done()
    assert ctrl._rate_limiter.num_requeues("reconcile") == 2
    assert ctrl.registry.value("workqueue_retries_total", name="reconcile") == 2
    assert ctrl.trigger.wait(0) is False
    clock.step(1.0)
    assert ctrl.trigger.wait(0) is True  # the second retry: after 1 s
    ctrl.reconcile()
    ctrl._rate_limiter.forget("reconcile")  # what the worker does after a success
    ctrl.trigger.done()
    render.config = b"routes: [changed]\n"  # a change: the ConfigMap must be written again
    ctrl.informers["Service"].store.upsert({"metadata": {"name": "s", "namespace": "apps"}})
    api.fail_next("replace", "configmaps", ApiError(500, "InternalError", "boom"))
    clock.step(1.0)
    assert _fail_then_retry(ctrl) == 0.5  # back to the first step
    assert ctrl.registry.value("workqueue_work_duration_seconds_count", name="reconcile") == 1


def test_written_part_bytes_are_released_and_never_needed_again() -> None:
    ctrl, api, render, prober = setup()
    render.parts = (("twp.part-1.yaml", b"routes:\n- id: a\nclusters: []\n"),)
    ctrl.reconcile()
    assert api.obj(CONFIG_MAPS, NS, "tp-part-1")["data"] == {"twp.part-1.yaml": "routes:\n- id: a\nclusters: []\n"}
    assert ctrl.last_result is not None and ctrl.last_result.parts == (("twp.part-1.yaml", b""),)
    ctrl.reconcile()  # the probe message is an input: renders once more, releases again
    writes, renders = len(api.writes()), len(render.snapshots)
    assert ctrl.reconcile() is ctrl.last_result  # reused without its part bytes: nothing to write
    assert len(api.writes()) == writes and len(render.snapshots) == renders
    ctrl.on_started_leading()  # the writer forgets what it wrote: the reuse is off, it renders again
    ctrl.reconcile()
    assert len(render.snapshots) == renders + 1
    assert api.obj(CONFIG_MAPS, NS, "tp-part-1")["data"] == {"twp.part-1.yaml": "routes:\n- id: a\nclusters: []\n"}


def test_the_echo_of_our_own_status_write_triggers_no_reconcile() -> None:
    """1000 route statuses must not re-render the cluster while they are being written: an
    informer update that only carries the status we wrote triggers nothing; any other update of
    the same object does."""
    import copy

    ctrl, api, render, prober = setup()
    first_pass(ctrl)
    ctrl.reconcile()
    assert ctrl.status_writer.wait_idle(10)
    old = ctrl.informers["Gateway"].get("apps", "web")
    echo = copy.deepcopy(api.obj(GATEWAYS, "apps", "web"))
    assert echo["status"] and echo["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"]
    fanout = ctrl.informers["Gateway"]._fanout
    n = ctrl.trigger.triggers
    fanout.on_update(old, echo)
    assert ctrl.trigger.triggers == n
    for change in ({"labels": {"x": "y"}}, {"annotations": {"k": "v"}}):
        other = copy.deepcopy(echo)
        other["metadata"].update(change)
        fanout.on_update(old, other)
        assert ctrl.trigger.triggers == n + 1
        n += 1
    foreign = copy.deepcopy(echo)
    foreign["status"]["conditions"][0]["message"] = "written by someone else"
    fanout.on_update(old, foreign)
    assert ctrl.trigger.triggers == n + 1
    # an update of a kind whose status we do not write always triggers
    ctrl.informers["Service"]._fanout.on_update({"metadata": {"name": "s"}}, {"metadata": {"name": "s", "x": 1}})
    assert ctrl.trigger.triggers == n + 2


def test_the_echo_of_our_own_status_write_is_no_change_of_the_render_input() -> None:
    """The cache does not count the echo of our status write: the pass after it (the pods
    confirmed the config) decides Programmed again on the last result instead of rendering every
    route again; a status someone else wrote is a change, and renders."""
    import copy

    ctrl, api, render, prober = setup()
    first_pass(ctrl)
    ctrl.reconcile()
    assert ctrl.status_writer.wait_idle(10)
    renders = len(render.snapshots)
    store = ctrl.informers["Gateway"].store
    before = store.changes
    store.upsert(copy.deepcopy(api.obj(GATEWAYS, "apps", "web")))  # what the reflector stores on the echo
    assert store.changes == before
    prober.answer = ProbeResult(hashlib.sha256(render.config).hexdigest(), "")
    ctrl.reconcile()  # the probe at its end: the pods confirmed
    ctrl.reconcile()
    assert len(render.snapshots) == renders and ctrl.reprograms >= 1
    assert _programmed_of(ctrl.last_result)["status"] == "True"
    assert ctrl.status_writer.wait_idle(10)
    foreign = copy.deepcopy(api.obj(GATEWAYS, "apps", "web"))
    foreign["metadata"]["resourceVersion"] = "999"
    foreign["status"]["conditions"][0]["message"] = "written by someone else"
    store.upsert(foreign)
    assert store.changes == before + 1
    ctrl.reconcile()
    assert len(render.snapshots) == renders + 1


def test_a_new_probe_message_reaches_programmed_at_once_not_at_the_next_poll() -> None:
    """The probe message is Programmed's: a changed message asks for a reconcile at once (within
    the coalescing window); an unchanged one waits for the poll."""
    import time

    ctrl, api, render, prober = setup()
    ctrl.reconcile()  # "" -> "pod p0 runs config old"
    assert ctrl.trigger.next_run_at() <= time.monotonic() + 0.1  # type: ignore[operator]
    assert ctrl.trigger.wait(1)
    ctrl.trigger.done()
    ctrl.reconcile()  # same message: the poll
    assert ctrl.trigger.next_run_at() >= time.monotonic() + ctrl.opts.probe_interval - 1  # type: ignore[operator]
    prober.answer = ProbeResult(None, "pod p0 is not ready")
    ctrl.reconcile()
    assert ctrl.trigger.next_run_at() <= time.monotonic() + ctrl.trigger.min_interval + 0.1  # type: ignore[operator]
    assert _programmed_of(ctrl.last_result)["message"] == "pod p0 runs config old"


def _run_when_due(ctrl: Controller, clock: Any) -> float:
    """Move the fake clock to the next requested reconcile and run it; the time it ran at."""
    at = ctrl.trigger.next_run_at()
    assert at is not None
    clock.step(max(0.0, at - clock.now()))
    assert ctrl.trigger.wait(0)
    try:
        ctrl.reconcile()
    finally:
        ctrl.trigger.done()
    return clock.now()


def test_a_pod_still_behind_after_its_poke_is_poked_again_when_due_and_not_once_it_confirmed() -> None:
    """The kubelet may project the old ConfigMap on the poke (the pod event reached it first):
    a pod that has not confirmed the written hash 3 s after its poke is poked again; the
    controller asks for a reconcile for that moment (sooner than the 5 s poll)."""
    from titanium_gateway.kube.clock import FakeClock
    from titanium_gateway.writers.pods import POKE_ANNOTATION, poke_value

    clock = FakeClock()
    ctrl, api, render, prober = setup(clock=clock)
    h = hashlib.sha256(render.config).hexdigest()
    value = poke_value(h, {"apps.c.pfx": b"pfx"})
    behind = ProbeResult(None, f"pod p0 (10.0.0.9) runs config {'0' * 12}, waiting for {h[:12]}", True)
    prober.answer = behind
    t0 = clock.now()
    first_pass(ctrl)
    assert api.obj(PODS, NS, "p0")["metadata"]["annotations"][POKE_ANNOTATION] == value
    _run_when_due(ctrl, clock)  # the probe message rendered at once; the re-poke is not due yet
    assert len(api.writes("pods")) == 1
    assert ctrl.trigger.next_run_at() == t0 + 3.0
    _run_when_due(ctrl, clock)
    assert api.obj(PODS, NS, "p0")["metadata"]["annotations"][POKE_ANNOTATION] == f"{value}/1"
    assert len(api.writes("pods")) == 2
    assert ctrl.trigger.next_run_at() == clock.now() + 5.0  # next re-poke in 6 s: the poll comes first
    prober.answer = ProbeResult(h, "", True, frozenset({"p0"}))  # it loaded the config
    _run_when_due(ctrl, clock)
    _run_when_due(ctrl, clock)  # Programmed True
    assert _programmed_of(ctrl.last_result)["status"] == "True"
    at = ctrl.trigger.next_run_at()  # nothing more to do (no poll, no re-poke) but the Event's bump
    assert at is not None and at - clock.now() > 1000
    clock.step(3600)
    ctrl.reconcile()
    assert len(api.writes("pods")) == 2


def test_no_re_poke_without_a_probe_of_the_pods_nor_by_a_follower() -> None:
    from titanium_gateway.kube.clock import FakeClock

    clock = FakeClock()
    ctrl, api, render, prober = setup(clock=clock)
    prober.answer = ProbeResult(None, "pod p0 awaits the data-plane rollout")  # not examined pod by pod
    first_pass(ctrl)
    for _ in range(5):
        clock.step(10)
        ctrl.reconcile()
    assert len(api.writes("pods")) == 1
    prober.answer = ProbeResult(None, "pod p0 runs config old", True)
    ctrl.guard = type(ctrl.guard)(lambda: False)  # a follower: reconcile() does nothing
    ctrl.poker.guard = ctrl.guard
    clock.step(10)
    assert ctrl.reconcile() is None
    assert len(api.writes("pods")) == 1


def test_a_pass_that_decides_programmed_again_submits_only_the_statuses_it_changed() -> None:
    """The route statuses of a result are submitted once; a pass that only decides Programmed
    again submits the Gateways' statuses it built anew, not every route's again. After the first
    pass of a term (which submits nothing), everything is submitted."""
    ctrl, api, render, prober = setup()
    submitted: list[tuple[list[tuple[str, str, str]], bool]] = []
    real = ctrl.status_writer.submit

    def spy(statuses: Any, guards: Any = None, seen: Any = None, *, complete: bool = True) -> None:
        statuses = list(statuses)
        submitted.append(([st.key for st in statuses], complete))
        real(statuses, guards, seen, complete=complete)

    ctrl.status_writer.submit = spy  # type: ignore[method-assign]
    route_status = ObjectStatus("gateway.networking.k8s.io/v1", "HTTPRoute", "apps", "shop", {"parents": []})
    fake = ctrl.render_fn
    ctrl.render_fn = lambda snap, opts: dataclasses.replace(  # type: ignore[assignment]
        (r := fake(snap, opts)), statuses=(*r.statuses, route_status))
    first_pass(ctrl)  # nothing submitted: the pods were probed first
    assert submitted == []
    ctrl.reconcile()  # the probe's message: Programmed decided again, and everything submitted
    assert submitted[-1][1] is True and {("Gateway", "apps", "web"), route_status.key} <= set(submitted[-1][0])
    prober.answer = ProbeResult(None, "pod p0 is not ready")
    ctrl.reconcile()
    ctrl.reconcile()
    assert ctrl.reprograms >= 2 and len(render.snapshots) == 1
    keys, complete = submitted[-1]
    assert keys == [("Gateway", "apps", "web")] and complete is False
    assert _programmed_of(ctrl.last_result)["message"] == "pod p0 is not ready"
