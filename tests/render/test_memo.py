"""The translation memo (render/memo.py) changes how much work a render does, never its result.

Every check renders the same snapshot with a cache that has seen earlier renders and without
any cache, and requires identical results (config bytes, parts, statuses, events, TLS files,
certificates, listeners).
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import workload
from benchmarks.bench_render import converged_objects
from titanium_gateway.offline.snapshot import build_snapshot
from titanium_gateway.render import RenderCache, render
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.snapshot import Snapshot

from .conftest import case_names, case_objects, case_options

NOW_1 = "2026-01-01T00:00:00Z"
NOW_2 = "2026-01-01T00:05:00Z"


def _versioned(objs: Any) -> list[dict[str, Any]]:
    """The case's objects as an API server returns them: with a uid and a resourceVersion."""
    out = []
    for n, obj in enumerate(objs):
        obj = copy.deepcopy(dict(obj))
        meta = obj.setdefault("metadata", {})
        if isinstance(meta, dict):
            meta.setdefault("uid", f"uid-{n}")
            meta.setdefault("resourceVersion", str(100 + n))
        out.append(obj)
    return out


def _same(a: Any, b: Any) -> None:
    assert a.config == b.config
    assert a.config_hash == b.config_hash
    assert a.parts == b.parts
    assert a.statuses == b.statuses
    assert a.events == b.events
    assert dict(a.tls_files) == dict(b.tls_files)
    assert a.certificates == b.certificates
    assert a.listeners == b.listeners
    assert a.delivery_error == b.delivery_error
    assert [p.key for p in a.planes] == [p.key for p in b.planes]
    for pa, pb in zip(a.planes, b.planes, strict=True):  # each data plane's (render/planes.py)
        assert (pa.config, pa.parts, pa.certificates, pa.listeners, pa.gateway, pa.gateways) == \
            (pb.config, pb.parts, pb.certificates, pb.listeners, pb.gateway, pb.gateways)
        assert dict(pa.tls_files) == dict(pb.tls_files)


@pytest.mark.parametrize("case", case_names())
def test_every_golden_case_renders_the_same_with_a_warm_cache(case: str) -> None:
    options, snap_kwargs = case_options(case)
    snap_kwargs.pop("confirmed_config_hash", None)
    objs = _versioned(case_objects(case))
    snap = build_snapshot(objs, **snap_kwargs)
    cache = RenderCache()
    fresh = render(snap, options)
    _same(render(snap, options, cache), fresh)
    _same(render(snap, options, cache), fresh)  # replayed
    # a later render (another "now") of the same objects: recordings that stamped "now" were not kept
    later = build_snapshot(objs, **{**snap_kwargs, "now": NOW_2})
    _same(render(later, options, cache), render(later, options))


def test_unchanged_routes_are_replayed_and_endpoint_changes_re_resolve_clusters() -> None:
    w = workload.build(50)
    objs = [copy.deepcopy(o) for o in w.objects]
    options = _options()
    cache = RenderCache()
    snap = workload.snapshot(objs, now=NOW_1)
    _same(render(snap, options, cache), render(snap, options))
    assert cache.misses == 50 and cache.hits == 0 and not cache.routes  # new conditions stamp "now"
    objs = converged_objects(objs, options, render)  # the status writer's work: every route changes once
    snap = workload.snapshot(objs, now=NOW_1)
    _same(render(snap, options, cache), render(snap, options))
    first_misses = cache.misses
    assert first_misses == 100 and cache.hits == 0 and len(cache.routes) == 50
    # an EndpointSlice changes: no route is translated again, the cluster shows the new address
    eps = next(o for o in objs if o["kind"] == "EndpointSlice")
    eps["endpoints"][0]["addresses"] = ["172.16.9.9"]
    _bump(eps)
    snap = workload.snapshot(objs, now=NOW_2)
    got = render(snap, options, cache)
    _same(got, render(snap, options))
    assert b"172.16.9.9" in got.config + b"".join(b for _, b in got.parts)
    assert cache.hits == 50 and cache.misses == first_misses
    assert cache.ingress_hits == 1


def _options(mode: str = "shared") -> RenderOptions:
    from benchmarks import bench_render

    return dataclasses.replace(bench_render.render_options(), data_plane_mode=mode)


def _bump(obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 100000)


def _find(objs: list[dict[str, Any]], kind: str, n: int = 0) -> dict[str, Any]:
    return [o for o in objs if o["kind"] == kind][n]


def _change_route_path(objs: list[dict[str, Any]]) -> None:
    r = _find(objs, "HTTPRoute", 3)
    r["spec"]["rules"][0]["matches"][0]["path"] = {"type": "PathPrefix", "value": "/changed"}
    _bump(r)


def _delete_service(objs: list[dict[str, Any]]) -> None:
    svc = _find(objs, "Service", 2)  # 0 is the data-plane Service
    objs.remove(svc)


def _gateway_listener_hostname(objs: list[dict[str, Any]]) -> None:
    gw = _find(objs, "Gateway", 0)
    gw["spec"]["listeners"][0]["hostname"] = "nothing.example.org"
    _bump(gw)


def _gateway_status_only(objs: list[dict[str, Any]]) -> None:
    gw = _find(objs, "Gateway", 1)
    gw["status"] = {"conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "",
                                    "observedGeneration": 1, "lastTransitionTime": NOW_1}]}
    _bump(gw)


def _namespace_label(objs: list[dict[str, Any]]) -> None:
    gw = _find(objs, "Gateway", 0)
    gw["spec"]["listeners"][0]["allowedRoutes"] = {"namespaces": {"from": "Selector", "selector": {
        "matchLabels": {"team": "a"}}}}
    _bump(gw)
    ns = [o for o in objs if o["kind"] == "Namespace" and o["metadata"]["name"] == "app-00"][0]
    ns["metadata"].setdefault("labels", {})["team"] = "a"
    _bump(ns)


def _ingress_change(objs: list[dict[str, Any]]) -> None:
    ing = _find(objs, "Ingress", 5)
    ing["spec"]["rules"][0]["http"]["paths"][0]["path"] = "/moved"
    _bump(ing)


def _route_status_written(objs: list[dict[str, Any]]) -> None:
    r = _find(objs, "HTTPRoute", 7)
    r["status"] = {"parents": []}
    _bump(r)


def _route_deleted(objs: list[dict[str, Any]]) -> None:
    objs.remove(_find(objs, "HTTPRoute", 9))


def _secret_changed(objs: list[dict[str, Any]]) -> None:
    sec = _find(objs, "Secret", 0)
    sec["data"] = dict(_find(objs, "Secret", 1)["data"])
    _bump(sec)


def _route_without_version(objs: list[dict[str, Any]]) -> None:
    r = _find(objs, "HTTPRoute", 11)
    del r["metadata"]["resourceVersion"]


CHANGES = [_change_route_path, _delete_service, _gateway_status_only, _gateway_listener_hostname,
           _namespace_label, _ingress_change, _route_status_written, _route_deleted, _secret_changed,
           _route_without_version]


@pytest.mark.parametrize("mode", ["shared", "per-gateway"])
def test_a_sequence_of_changes_renders_as_without_a_cache(mode: str) -> None:
    objs = [copy.deepcopy(o) for o in workload.build(40).objects]
    options = _options(mode)
    cache = RenderCache()
    objs = converged_objects(objs, options, render)
    for step, change in enumerate([None, *CHANGES]):
        if change is not None:
            change(objs)
        snap = workload.snapshot(objs, now=f"2026-01-01T00:{step:02d}:00Z")
        _same(render(snap, options, cache), render(snap, options))


def test_a_route_whose_status_changes_is_not_replayed_with_an_old_now() -> None:
    objs = [copy.deepcopy(o) for o in workload.build(10).objects]
    options = _options()
    cache = RenderCache()
    a = workload.snapshot(objs, now=NOW_1)
    render(a, options, cache)
    b = workload.snapshot(objs, now=NOW_2)
    got = render(b, options, cache)
    _same(got, render(b, options))
    stamped = [s for s in got.statuses if s.kind == "HTTPRoute"]
    assert stamped and all(c["lastTransitionTime"] == NOW_2
                           for s in stamped for p in s.status["parents"] for c in p["conditions"])


def test_objects_without_resource_versions_are_never_memoized() -> None:
    case = "conf-httproute-simple-same-namespace" if "conf-httproute-simple-same-namespace" in case_names() \
        else case_names()[0]
    snap: Snapshot = build_snapshot(case_objects(case))
    cache = RenderCache()
    render(snap, RenderOptions(), cache)
    render(snap, RenderOptions(), cache)
    assert cache.hits == 0 and not cache.routes and cache.ingress is None


def test_cache_holds_only_the_last_render() -> None:
    objs = [copy.deepcopy(o) for o in workload.build(20).objects]
    options = _options()
    cache = RenderCache()
    objs = converged_objects(objs, options, render)
    render(workload.snapshot(objs, now=NOW_1), options, cache)
    assert len(cache.routes) == 20
    objs = [o for o in objs if not (o["kind"] == "HTTPRoute" and o["metadata"]["name"].endswith(("1", "3")))]
    render(workload.snapshot(objs, now=NOW_1), options, cache)
    assert len(cache.routes) == len([o for o in objs if o["kind"] == "HTTPRoute"])
    assert all(isinstance(k, str) for k in cache.routes)
    assert all(isinstance(v, tuple) and isinstance(v[1].routes, list) for v in cache.routes.values())
    assert isinstance(cache.routes, Mapping)


def _edit_slice(objs: list[dict[str, Any]], i: int) -> None:
    eps = [o for o in objs if o["kind"] == "EndpointSlice"]
    if eps:
        e = eps[i % len(eps)]
        e["endpoints"] = e["endpoints"][: 1 + i % 3]
        e["endpoints"][0]["addresses"] = [f"172.16.1.{i % 250 + 1}"]
        e["endpoints"][0].setdefault("conditions", {})["ready"] = i % 4 != 0
        _bump(e)


def _edit_route(objs: list[dict[str, Any]], i: int) -> None:
    routes = [o for o in objs if o["kind"] == "HTTPRoute"]
    if routes:
        r = routes[i % len(routes)]
        rule = r["spec"]["rules"][i % len(r["spec"]["rules"])]
        rule["matches"][0]["path"] = {"type": ("Exact", "PathPrefix")[i % 2], "value": f"/e{i}"}
        if i % 3 == 0:
            rule["backendRefs"] = [{"name": "missing-svc", "port": 8080}]
        _bump(r)


def _drop(kind: str) -> Any:
    def drop(objs: list[dict[str, Any]], i: int) -> None:
        found = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] != workload.DATA_PLANE_SERVICE]
        if found:
            objs.remove(found[i % len(found)])
    return drop


def _copy_route(objs: list[dict[str, Any]], i: int) -> None:
    routes = [o for o in objs if o["kind"] == "HTTPRoute"]
    if routes:
        r = copy.deepcopy(routes[i % len(routes)])
        r["metadata"]["name"] += f"-copy{i}"
        r["metadata"]["uid"] += f"-copy{i}"
        r["metadata"].pop("creationTimestamp", None)
        r.pop("status", None)
        objs.append(r)


def _listener(objs: list[dict[str, Any]], i: int) -> None:
    gws = [o for o in objs if o["kind"] == "Gateway"]
    if gws:
        gw = gws[i % len(gws)]
        li = gw["spec"]["listeners"][i % len(gw["spec"]["listeners"])]
        if i % 2:
            li["hostname"] = f"*.c{i % 3}.gw{i % 2}.example.com"
        else:
            li["allowedRoutes"] = {"namespaces": {"from": "Same"}}
        _bump(gw)


def _edit_ingress(objs: list[dict[str, Any]], i: int) -> None:
    ings = [o for o in objs if o["kind"] == "Ingress"]
    if ings:
        ing = ings[i % len(ings)]
        path = ing["spec"]["rules"][0]["http"]["paths"][i % 2]
        path["path"] = f"/i{i % 4}"  # small: collisions with the other path and other Ingresses
        ann = ing["metadata"].setdefault("annotations", {})
        if i % 3 == 0:
            ann["titanium.io/limit-rps"] = str(1 + i % 50)
        elif i % 3 == 1:
            ann.pop("titanium.io/limit-rps", None)
        _bump(ing)


_CANARY_VERSIONS = itertools.count(900000)


def _canary(objs: list[dict[str, Any]], i: int) -> None:
    """A canary Ingress for another Ingress's host and path (or one that matches nothing)."""
    ings = [o for o in objs if o["kind"] == "Ingress" and "canary" not in o["metadata"]["name"]]
    if ings:
        primary = ings[i % len(ings)]
        c = copy.deepcopy(primary)
        c["metadata"]["name"] += f"-canary{i % 3}"
        c["metadata"]["uid"] += f"-canary{i % 3}"
        c["metadata"]["resourceVersion"] = str(next(_CANARY_VERSIONS))  # (each write a new one, as on a server)
        c["metadata"]["annotations"] = {"titanium.io/canary": "true", "titanium.io/canary-weight": str(i % 100)}
        if i % 2:
            c["metadata"]["annotations"]["titanium.io/canary-by-header"] = "x-canary"
        c.pop("status", None)
        objs[:] = [o for o in objs if not (o["kind"] == "Ingress" and o["metadata"]["name"] == c["metadata"]["name"])]
        objs.append(c)


OPS = [_edit_slice, _edit_route, _drop("HTTPRoute"), _drop("Service"), _drop("EndpointSlice"), _drop("Ingress"),
       _copy_route, _listener, _edit_ingress, _canary]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(OPS) - 1), st.integers(0, 1000)), min_size=1, max_size=8),
       st.sampled_from(["shared", "per-gateway"]))
def test_any_sequence_of_changes_renders_as_without_a_cache(steps: list[tuple[int, int]], mode: str) -> None:
    objs = [copy.deepcopy(o) for o in _BASE]
    options = _options(mode)
    cache = RenderCache()
    render(workload.snapshot(objs, now=NOW_2), options, cache)
    for n, (op, i) in enumerate(steps):
        OPS[op](objs, i)
        snap = workload.snapshot(objs, now=f"2026-01-02T00:{n:02d}:00Z")
        _same(render(snap, options, cache), render(snap, options))


def _base() -> list[dict[str, Any]]:
    objs = [copy.deepcopy(o) for o in workload.build(12).objects]
    objs = converged_objects(objs, _options(), render)
    return objs


_BASE = _base()


def test_a_render_that_fails_leaves_an_empty_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    from titanium_gateway.twp import emit as emit_module

    objs = [copy.deepcopy(o) for o in _BASE]
    options = _options()
    cache = RenderCache()
    render(workload.snapshot(objs, now=NOW_2), options, cache)
    assert cache.routes

    def boom(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("emit failed")

    with monkeypatch.context() as m:
        m.setattr(emit_module, "emit", boom)
        with pytest.raises(RuntimeError):
            render(workload.snapshot(objs, now=NOW_2), options, cache)
    assert not cache.routes and cache.ingress is None and not cache.clusters and not cache.text.routes
    snap = workload.snapshot(objs, now=NOW_2)
    _same(render(snap, options, cache), render(snap, options))


def test_an_ingress_edit_replays_the_other_ingresses_paths() -> None:
    objs = [copy.deepcopy(o) for o in _BASE]
    options = _options()
    cache = RenderCache()
    render(workload.snapshot(objs, now=NOW_2), options, cache)
    kept = dict(cache.ingress_paths)
    assert kept
    _edit_ingress(objs, 3)
    snap = workload.snapshot(objs, now=NOW_2)
    _same(render(snap, options, cache), render(snap, options))
    same = [rid for rid, v in cache.ingress_paths.items() if kept.get(rid) is v]
    assert len(same) >= len(kept) - 3  # only the edited Ingress's paths were recorded again


def _plane_service(namespace: str, name: str, gateway: str, port: int) -> dict[str, Any]:
    """A Service as the controller makes it for a Gateway's own data plane."""
    from titanium_gateway.render import planes

    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": "5000",
                         "labels": {planes.MANAGED_BY_LABEL: planes.MANAGED_BY, planes.GATEWAY_NAME_LABEL: gateway}},
            "spec": {"type": "LoadBalancer", "ports": [{"name": "http", "port": port, "targetPort": 8080}]}}



@pytest.mark.parametrize("mode", ["shared", "per-gateway"])
@pytest.mark.parametrize("named", [False, True])
def test_data_plane_services_count_only_once_a_route_names_them(mode: str, named: bool) -> None:
    """A Gateway's own data-plane Service appearing, getting its address or changing: the render
    is the one without a cache; the routes are replayed, unless a route looked that Service up
    (here while it did not exist yet): then they are translated again."""
    objs = [copy.deepcopy(o) for o in workload.build(30).objects]
    options = _options(mode)
    route = _find(objs, "HTTPRoute", 5)
    ns = route["metadata"]["namespace"]
    if named:
        route["spec"]["rules"][0]["backendRefs"] = [{"name": "gw-plane-named", "port": 80}]
    objs = converged_objects(objs, options, render)
    objs = converged_objects(objs, options, render)  # (the route's ResolvedRefs=False, written)
    cache = RenderCache()
    for _ in range(2):
        snap = workload.snapshot(objs, now=NOW_2)
        _same(render(snap, options, cache), render(snap, options))
    routes = len([o for o in objs if o["kind"] == "HTTPRoute"])
    assert f"{ns}/{route['metadata']['name']}" in cache.routes  # recorded (the Service missing, if named)

    def appear(objs: list[dict[str, Any]]) -> None:
        objs.append(_plane_service(ns, "gw-plane-named", "gw-00", 80))
        objs.append(_plane_service(ns, "gw-plane-other", "gw-01", 80))

    def address(objs: list[dict[str, Any]]) -> None:
        for name in ("gw-plane-named", "gw-plane-other"):
            svc = next(o for o in objs if o["metadata"]["name"] == name)
            svc["status"] = {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}
            _bump(svc)

    def port(objs: list[dict[str, Any]]) -> None:
        svc = next(o for o in objs if o["metadata"]["name"] == "gw-plane-named")
        svc["spec"]["ports"][0]["port"] = 81
        _bump(svc)

    def other(objs: list[dict[str, Any]]) -> None:
        svc = next(o for o in objs if o["metadata"]["name"] == "gw-plane-other")
        svc["spec"]["ports"][0]["port"] = 82
        _bump(svc)

    for n, (change, looked_up) in enumerate([(appear, named), (address, named), (port, named), (other, False)]):
        change(objs)
        hits, misses = cache.hits, cache.misses
        snap = workload.snapshot(objs, now=f"2026-01-01T01:{n:02d}:00Z")
        got = render(snap, options, cache)
        _same(got, render(snap, options))
        translated = routes if looked_up else 0
        assert (cache.hits - hits, cache.misses - misses) == (routes - translated, translated), change.__name__


@pytest.mark.parametrize("mode", ["shared", "per-gateway"])
def test_blocks_of_a_few_routes_replay_as_the_routes_one_by_one(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The HTTPRoutes are replayed in blocks (render/memo.py, ~64 routes at scale): with blocks
    of ~4 routes here, every change of every kind, one after another, renders as without a
    cache, and a block without a change is replayed whole."""
    from titanium_gateway.render import memo

    monkeypatch.setattr(memo, "_BLOCK_END_BITS", 3)
    objs = [copy.deepcopy(o) for o in _BASE]
    options = _options(mode)
    cache = RenderCache()
    render(workload.snapshot(objs, now=NOW_2), options, cache)
    render(workload.snapshot(objs, now=NOW_2), options, cache)
    assert len(cache.route_blocks) > 1
    for n, (op, i) in enumerate([(op, i) for i in (1, 7, 12) for op in range(len(OPS))]):
        OPS[op](objs, i)
        snap = workload.snapshot(objs, now=f"2026-01-03T00:{n:02d}:00Z")
        before = dict(cache.route_blocks)
        _same(render(snap, options, cache), render(snap, options))
        if OPS[op] is _edit_route:  # one route changed: the other blocks are the very same
            assert len([k for k, b in cache.route_blocks.items() if before.get(k) is b]) >= len(before) - 2


@pytest.mark.parametrize("mode", ["shared", "per-gateway"])
def test_an_ingress_sharing_no_path_is_translated_alone_and_the_others_replayed(mode: str) -> None:
    """An Ingress edit that shares no host and path with another Ingress, before and after,
    translates that Ingress alone (render/memo.py); one that comes to share a path with another
    (RouteConflict), a canary and a deletion translate them all: each renders as
    without a cache."""
    objs = [copy.deepcopy(o) for o in _BASE]
    options = _options(mode)
    cache = RenderCache()
    render(workload.snapshot(objs, now=NOW_2), options, cache)
    ings = [o for o in objs if o["kind"] == "Ingress"]
    first, second = ings[2], ings[3]

    def alone(objs: list[dict[str, Any]]) -> None:
        first["spec"]["rules"][0]["http"]["paths"][0]["path"] = "/only-mine"
        _bump(first)

    def shared(objs: list[dict[str, Any]]) -> None:
        second["spec"]["rules"][0]["host"] = first["spec"]["rules"][0]["host"]
        _bump(second)

    def apart(objs: list[dict[str, Any]]) -> None:
        second["spec"]["rules"][0]["host"] = "apart.example.com"
        _bump(second)

    def tls(objs: list[dict[str, Any]]) -> None:
        first["spec"]["tls"] = [{"hosts": [first["spec"]["rules"][0]["host"]], "secretName": "missing"}]
        _bump(first)

    def annotation(objs: list[dict[str, Any]]) -> None:
        first["metadata"].setdefault("annotations", {})["titanium.io/limit-rps"] = "9"
        _bump(first)

    def deleted(objs: list[dict[str, Any]]) -> None:
        objs.remove(second)

    for n, (change, translated_alone) in enumerate([(alone, True), (shared, False), (apart, False), (alone, True),
                                                    (annotation, True), (tls, True), (deleted, False),
                                                    (_canary, False)]):
        if change is _canary:
            change(objs, 2)
        else:
            change(objs)
        parts = cache.ingress_parts
        kept = dict(parts.recordings) if parts is not None else {}
        snap = workload.snapshot(objs, now=f"2026-01-04T00:{n:02d}:00Z")
        _same(render(snap, options, cache), render(snap, options))
        same = [k for k, v in cache.ingress_parts.recordings.items() if kept.get(k) is v] \
            if cache.ingress_parts is not None else []
        assert (len(same) == len(kept) - 1) == translated_alone, change.__name__
