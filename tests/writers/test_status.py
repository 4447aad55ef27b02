from __future__ import annotations

import threading
import time
from typing import Any

from titanium_gateway.kube.api import GATEWAYS, HTTPROUTES, INGRESSES, ApiError
from titanium_gateway.metrics import Registry
from titanium_gateway.render.result import ObjectStatus
from titanium_gateway.writers.base import LeaderGuard
from titanium_gateway.writers.status import StatusWriter, merged_status

from .fakes import RecordingApi

OURS = "titaniumproxy.com/gateway-controller"


def cond(t: str, s: str = "True") -> dict[str, Any]:
    return {"type": t, "status": s, "reason": t, "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}


def parent(gw: str, ctrl: str = OURS) -> dict[str, Any]:
    return {"parentRef": {"name": gw}, "controllerName": ctrl, "conditions": [cond("Accepted")]}


def writer(api: RecordingApi, reg: Registry | None = None, leader: bool = True) -> StatusWriter:
    def current(kind: str, ns: str, name: str) -> Any:
        res = {"Gateway": GATEWAYS, "HTTPRoute": HTTPROUTES, "Ingress": INGRESSES}[kind]
        return api.find(res, ns, name)

    return StatusWriter(api, controller_name=OURS, guard=LeaderGuard(lambda: leader), current=current,
                        registry=reg or Registry())


def test_merge_keeps_other_controllers_and_drops_our_stale_entries() -> None:
    cur = {"status": {"parents": [parent("a", "other.io/x"), parent("old"), parent("b")]}}
    out = merged_status("HTTPRoute", cur, {"parents": [parent("b"), parent("c")]}, OURS)
    assert [(p["parentRef"]["name"], p["controllerName"]) for p in out["parents"]] == [
        ("a", "other.io/x"), ("b", OURS), ("c", OURS)]


def test_writes_only_changes_through_status_subresource_with_merge_patch() -> None:
    api = RecordingApi()
    api.put(GATEWAYS, {"metadata": {"name": "web", "namespace": "apps"}, "status": {"conditions": [cond("Accepted")]}})
    w = writer(api)
    same = ObjectStatus("gateway.networking.k8s.io/v1", "Gateway", "apps", "web", {"conditions": [cond("Accepted")]})
    assert w.write_all([same]).unchanged == 1 and api.writes() == []
    new = ObjectStatus("gateway.networking.k8s.io/v1", "Gateway", "apps", "web",
                       {"conditions": [cond("Accepted"), cond("Programmed", "False")]})
    rep = w.write_all([new])
    assert rep.written == 1
    (call,) = api.writes()
    assert call["subresource"] == "status" and call["patch_type"] == "merge"
    assert call["body"]["metadata"]["resourceVersion"]
    assert api.obj(GATEWAYS, "apps", "web")["status"]["conditions"][1]["type"] == "Programmed"


def test_conflict_rereads_and_retries_keeping_other_controllers() -> None:
    api = RecordingApi()
    api.put(HTTPROUTES, {"metadata": {"name": "r", "namespace": "apps"}, "status": {"parents": []}})
    stale = api.obj(HTTPROUTES, "apps", "r")
    # another controller wrote its entry after our informer saw the object
    api.put(HTTPROUTES, {"metadata": {"name": "r", "namespace": "apps"},
                         "status": {"parents": [parent("x", "other.io/x")]}})
    reg = Registry()
    w = StatusWriter(api, controller_name=OURS, guard=LeaderGuard(), current=lambda *a: stale, registry=reg)
    rep = w.write_all([ObjectStatus("gateway.networking.k8s.io/v1", "HTTPRoute", "apps", "r",
                                    {"parents": [parent("web")]})])
    assert rep.written == 1 and rep.conflicts == 1
    assert [p["controllerName"] for p in api.obj(HTTPROUTES, "apps", "r")["status"]["parents"]] == ["other.io/x", OURS]
    assert reg.get("titanium_status_conflicts_total").value(kind="HTTPRoute") == 1  # type: ignore[union-attr]


def test_missing_object_and_rejections_are_not_errors() -> None:
    api = RecordingApi()
    api.put(GATEWAYS, {"metadata": {"name": "bad", "namespace": "apps"}})
    api.fail_next("patch", "gateways", ApiError(422, "Invalid", "spec is invalid"))
    w = writer(api)
    rep = w.write_all([
        ObjectStatus("v1", "Gateway", "apps", "gone", {"conditions": [cond("Accepted")]}),
        ObjectStatus("v1", "Gateway", "apps", "bad", {"conditions": [cond("Accepted")]}),
    ])
    assert rep.missing == 1 and rep.errors == []
    api.fail_next("patch", "gateways", ApiError(503, "ServiceUnavailable"))
    rep = w.write_all([ObjectStatus("v1", "Gateway", "apps", "bad", {"conditions": [cond("Accepted")]})])
    assert len(rep.errors) == 1


def test_a_thousand_statuses_in_parallel_within_seconds() -> None:
    class SlowApi(RecordingApi):
        def __init__(self) -> None:
            super().__init__()
            self.active = 0
            self.peak = 0
            self._m = threading.Lock()

        def patch(self, *a: Any, **kw: Any) -> Any:
            with self._m:
                self.active += 1
                self.peak = max(self.peak, self.active)
            try:
                time.sleep(0.01)  # a 10 ms round trip
                return super().patch(*a, **kw)
            finally:
                with self._m:
                    self.active -= 1

    api = SlowApi()
    for i in range(1000):
        api.put(HTTPROUTES, {"metadata": {"name": f"r{i}", "namespace": "apps"}})
    w = writer(api)
    t0 = time.monotonic()
    rep = w.write_all([ObjectStatus("v1", "HTTPRoute", "apps", f"r{i}", {"parents": [parent("web")]})
                       for i in range(1000)])
    took = time.monotonic() - t0
    assert rep.written == 1000
    assert took < 5.0  # serial would be >= 10 s
    assert 1 < api.peak <= w.workers


def test_lost_leadership_stops_status_writes() -> None:
    api = RecordingApi()
    api.put(GATEWAYS, {"metadata": {"name": "web", "namespace": "apps"}})
    w = writer(api, leader=False)
    try:
        w.write_all([ObjectStatus("v1", "Gateway", "apps", "web", {"conditions": [cond("Accepted")]})])
        raise AssertionError("expected NotLeader")
    except Exception as e:
        assert type(e).__name__ == "NotLeader"
    assert api.writes() == []


def test_fields_the_render_no_longer_sets_are_removed() -> None:
    api = RecordingApi()
    api.put(GATEWAYS, {"metadata": {"name": "web", "namespace": "apps"},
                       "status": {"conditions": [cond("Accepted")], "addresses": [{"value": "1.2.3.4"}]}})
    rep = writer(api).write_all([ObjectStatus("v1", "Gateway", "apps", "web", {"conditions": [cond("Accepted")]})])
    assert rep.written == 1
    assert "addresses" not in api.obj(GATEWAYS, "apps", "web")["status"]
    assert writer(api).write_all([ObjectStatus("v1", "Gateway", "apps", "web",
                                               {"conditions": [cond("Accepted")]})]).unchanged == 1
