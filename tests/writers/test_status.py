from __future__ import annotations

import threading
import time
from typing import Any

from titanium_gateway.kinds import GATEWAYS, HTTPROUTES
from titanium_gateway.kube.api import INGRESSES, ApiError
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
    assert reg.value("titanium_status_conflicts_total", kind="HTTPRoute") == 1


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


def test_429_pauses_every_status_write_until_retry_after() -> None:
    """One 429 with Retry-After holds back the writes still queued (they are not sent) and
    reports the wait, so the reconcile is retried no sooner; afterwards all are written."""
    api = RecordingApi()
    names = [f"r{i}" for i in range(8)]
    for n in names:
        api.put(GATEWAYS, {"metadata": {"name": n, "namespace": "apps"}, "status": {}})
    w = StatusWriter(api, controller_name=OURS, guard=LeaderGuard(), registry=Registry(), workers=1,
                     current=lambda kind, ns, name: api.find(GATEWAYS, ns, name))  # one worker: a fixed order
    api.fail_next("patch", "gateways", ApiError(429, "TooManyRequests", "slow down", retry_after=30.0))
    want = [ObjectStatus("gateway.networking.k8s.io/v1", "Gateway", "apps", n, {"conditions": [cond("Accepted")]})
            for n in names]
    rep = w.write_all(want)
    assert len(api.writes("gateways")) == 1, "writes were sent after the server asked to wait"
    assert len(rep.errors) == len(names) and rep.retry_after is not None and 25.0 < rep.retry_after <= 30.0
    assert w.write_all(want).written == 0 and len(api.writes("gateways")) == 1  # still paused
    w._paused_until = 0.0  # the Retry-After has passed
    rep = w.write_all(want)
    assert rep.written == len(names) and not rep.errors and rep.retry_after is None
    w.close()


def test_guard_is_checked_again_after_a_conflict() -> None:
    """A guarded write (release a status only while it is still ours) re-checks the guard on the
    object re-read after a 409: a status another controller wrote meanwhile is left alone."""
    api = RecordingApi()
    theirs = {"conditions": [{**cond("Accepted"), "message": "theirs"}]}
    api.put(GATEWAYS, {"metadata": {"name": "web", "namespace": "apps"}, "status": theirs})
    cached = {"metadata": {"name": "web", "namespace": "apps", "resourceVersion": "1"},
              "status": {"conditions": [cond("Accepted")]}}  # the cache still shows ours
    w = StatusWriter(api, controller_name=OURS, guard=LeaderGuard(), registry=Registry(),
                     current=lambda kind, ns, name: cached)
    api.fail_next("patch", "gateways", ApiError(409, "Conflict", "stale"))
    release = ObjectStatus("gateway.networking.k8s.io/v1", "Gateway", "apps", "web",
                           {"conditions": [cond("Accepted", "Unknown")]})

    def still_ours(cur: Any) -> bool:
        return (cur.get("status") or {}).get("conditions") == [cond("Accepted")]

    rep = w.write_all([release], {release.key: still_ours})
    assert rep.conflicts == 1 and not rep.errors and rep.written == 0
    assert len(api.writes("gateways")) == 1  # the refused patch only
    assert api.obj(GATEWAYS, "apps", "web")["status"] == theirs
    assert w.write_all([release], {release.key: lambda cur: False}).unchanged == 1
    assert len(api.writes("gateways")) == 1
    w.close()


def test_null_and_empty_status_fields_compare_equal() -> None:
    """{"loadBalancer": {"ingress": null}} is written once, then seen as done (no write loop)."""
    api = RecordingApi()
    api.put(INGRESSES, {"metadata": {"name": "shop", "namespace": "apps"},
                        "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.7"}]}}})
    w = writer(api)
    st = ObjectStatus("networking.k8s.io/v1", "Ingress", "apps", "shop", {"loadBalancer": {"ingress": None}})
    assert w.write_all([st]).written == 1
    assert not (api.obj(INGRESSES, "apps", "shop")["status"].get("loadBalancer") or {}).get("ingress")
    assert w.write_all([st]).unchanged == 1
    w.close()


def test_a_new_transition_time_alone_is_not_a_change() -> None:
    """A later render stamps a transition its cache has not seen yet with a newer time; the
    object already carries the earlier (true) one: nothing to write, not even after a 409."""
    api = RecordingApi()
    api.put(GATEWAYS, {"metadata": {"name": "web", "namespace": "apps"}})
    stale = api.obj(GATEWAYS, "apps", "web")  # what the informer still shows
    w = StatusWriter(api, controller_name=OURS, guard=LeaderGuard(), current=lambda *a: stale, registry=Registry())
    first = {"conditions": [cond("Accepted")]}
    assert w.write_all([ObjectStatus("v1", "Gateway", "apps", "web", first)]).written == 1
    later = {"conditions": [cond("Accepted") | {"lastTransitionTime": "2026-01-01T00:00:09Z"}]}
    rep = w.write_all([ObjectStatus("v1", "Gateway", "apps", "web", later)])
    assert rep.written == 0 and len(api.writes("gateways")) == 1
    changed = {"conditions": [cond("Accepted", "False") | {"lastTransitionTime": "2026-01-01T00:00:09Z"}]}
    assert w.write_all([ObjectStatus("v1", "Gateway", "apps", "web", changed)]).written == 1


def test_the_echo_of_our_own_write_is_recognised_and_nothing_else_is() -> None:
    """``echoes``: the informer's update carrying exactly the status we wrote onto the version
    the render saw (nothing else changed) needs no reconcile; another writer's status, a spec or
    label change, or an object we never wrote are not echoes."""
    import copy

    api = RecordingApi()
    api.put(HTTPROUTES, {"metadata": {"name": "r", "namespace": "apps", "generation": 1, "labels": {"a": "b"}},
                         "spec": {"hostnames": ["x"]}, "status": {"parents": [parent("gw", "other.io/x")]}})
    old = copy.deepcopy(api.obj(HTTPROUTES, "apps", "r"))
    reg = Registry()
    w = writer(api, reg)
    assert not w.echoes("HTTPRoute", old, old)  # nothing written yet
    st = ObjectStatus("gateway.networking.k8s.io/v1", "HTTPRoute", "apps", "r", {"parents": [parent("gw")]})
    assert w.write_all([st], seen={st.key: old["metadata"]["resourceVersion"]}).written == 1
    new = copy.deepcopy(api.obj(HTTPROUTES, "apps", "r"))
    new["metadata"]["resourceVersion"] = "99"
    new["metadata"]["managedFields"] = [{"manager": "titanium-gateway"}]
    assert w.echoes("HTTPRoute", old, new)
    later = copy.deepcopy(new)  # a later transition time alone is still our status
    later["status"]["parents"][1]["conditions"][0]["lastTransitionTime"] = "2026-01-02T00:00:00Z"
    assert w.echoes("HTTPRoute", old, later)
    assert reg.value("titanium_status_echoes_total", kind="HTTPRoute") == 2

    other = copy.deepcopy(new)  # another controller changed its own entry
    other["status"]["parents"][0]["conditions"][0]["status"] = "False"
    spec = copy.deepcopy(new)
    spec["spec"]["hostnames"] = ["y"]
    spec["metadata"]["generation"] = 2
    label = copy.deepcopy(new)
    label["metadata"]["labels"] = {"a": "c"}
    extra = copy.deepcopy(new)
    extra["metadata"]["annotations"] = {"k": "v"}
    for changed in (other, spec, label, extra):
        assert not w.echoes("HTTPRoute", old, changed)
    assert not w.echoes("Gateway", old, new)  # keyed by kind too
    assert not w.echoes("Service", old, new)  # not a kind whose status we write
    moved = copy.deepcopy(old)  # an update from another version than the one we wrote onto
    moved["metadata"]["resourceVersion"] = "50"
    assert not w.echoes("HTTPRoute", moved, new)
    w.close()


def test_a_status_written_onto_another_version_than_the_render_saw_is_no_echo() -> None:
    """The render's wish may be stale for a newer version of the object (a Gateway moved to
    another class meanwhile: our status must then be released by a reconcile), so neither a
    write onto a version the cache moved on to nor one after a 409 re-read counts as an echo."""
    import copy

    api = RecordingApi()
    api.put(GATEWAYS, {"metadata": {"name": "web", "namespace": "apps"}, "spec": {"gatewayClassName": "ours"}})
    seen_rv = api.obj(GATEWAYS, "apps", "web")["metadata"]["resourceVersion"]
    api.put(GATEWAYS, {"metadata": {"name": "web", "namespace": "apps"}, "spec": {"gatewayClassName": "other"}})
    moved = copy.deepcopy(api.obj(GATEWAYS, "apps", "web"))
    w = writer(api)
    st = ObjectStatus("gateway.networking.k8s.io/v1", "Gateway", "apps", "web", {"conditions": [cond("Accepted")]})
    assert w.write_all([st], seen={st.key: seen_rv}).written == 1
    echo = copy.deepcopy(api.obj(GATEWAYS, "apps", "web"))
    assert not w.echoes("Gateway", moved, echo)
    # the same write onto the version the render saw is an echo
    w2 = writer(api)
    st2 = ObjectStatus("gateway.networking.k8s.io/v1", "Gateway", "apps", "web", {"conditions": [cond("Programmed")]})
    base = copy.deepcopy(api.obj(GATEWAYS, "apps", "web"))
    assert w2.write_all([st2], seen={st2.key: base["metadata"]["resourceVersion"]}).written == 1
    assert w2.echoes("Gateway", base, copy.deepcopy(api.obj(GATEWAYS, "apps", "web")))
    # a 409: re-read and written onto the newer version: not an echo
    stale = copy.deepcopy(api.obj(GATEWAYS, "apps", "web"))
    w3 = StatusWriter(api, controller_name=OURS, guard=LeaderGuard(), current=lambda *a: stale, registry=Registry())
    api.put(GATEWAYS, {**copy.deepcopy(stale), "spec": {"gatewayClassName": "again"}})
    reread = copy.deepcopy(api.obj(GATEWAYS, "apps", "web"))
    st3 = ObjectStatus("gateway.networking.k8s.io/v1", "Gateway", "apps", "web", {"conditions": [cond("Ready")]})
    rep = w3.write_all([st3], seen={st3.key: stale["metadata"]["resourceVersion"]})
    assert rep.written == 1 and rep.conflicts == 1
    assert not w3.echoes("Gateway", reread, copy.deepcopy(api.obj(GATEWAYS, "apps", "web")))
    for x in (w, w2, w3):
        x.close()


def test_a_status_being_sent_is_an_echo_before_the_answer_arrives() -> None:
    """The server's watch event can reach the informer before the PATCH answer reaches the
    writer: the status in flight counts as ours; once the write failed it no longer does."""
    import copy

    api = RecordingApi()
    api.put(GATEWAYS, {"metadata": {"name": "web", "namespace": "apps"}})
    old = copy.deepcopy(api.obj(GATEWAYS, "apps", "web"))
    w = writer(api)
    seen: list[bool] = []
    orig = api.patch

    def patch(res: Any, ns: Any, name: str, body: Any, **kw: Any) -> Any:
        echo = copy.deepcopy(old)
        echo["status"] = body["status"]
        echo["metadata"]["resourceVersion"] = "1000"
        seen.append(w.echoes("Gateway", old, echo))
        if len(seen) == 1:
            return orig(res, ns, name, body, **kw)
        raise ApiError(500, "InternalError", "boom")

    api.patch = patch  # type: ignore[method-assign]
    st = ObjectStatus("gateway.networking.k8s.io/v1", "Gateway", "apps", "web", {"conditions": [cond("Accepted")]})
    assert w.write_all([st], seen={st.key: old["metadata"]["resourceVersion"]}).written == 1
    api.put(GATEWAYS, {"metadata": {"name": "web", "namespace": "apps"}})  # someone reset it
    old = copy.deepcopy(api.obj(GATEWAYS, "apps", "web"))
    w.write_all([ObjectStatus("gateway.networking.k8s.io/v1", "Gateway", "apps", "web",
                              {"conditions": [cond("Programmed")]})], seen={st.key: old["metadata"]["resourceVersion"]})
    assert seen == [True, True]
    failed = copy.deepcopy(old)
    failed["status"] = {"conditions": [cond("Programmed")]}
    assert not w.echoes("Gateway", old, failed)  # never written: not ours
    w.close()
