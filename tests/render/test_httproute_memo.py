"""The per-render memos of the HTTPRoute translator (matches by content, backendRefs lists by
content, a parent's conditions by what they are made of) and emit's text tables (a rule's
behavior written once) give exactly what building and writing everything anew gives."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.render.core_fixtures import base_objects, route, run
from titanium_gateway.render.httproute import backendrefs as backendrefs_module
from titanium_gateway.render.httproute import filters as filters_module
from titanium_gateway.render.httproute import matches as matches_module
from titanium_gateway.render.httproute import status as status_module
from titanium_gateway.render.httproute.matches import build_match, match_key
from titanium_gateway.render.status.routes import RouteParents
from titanium_gateway.twp import emit

# values of every JSON type, and the strings the translator treats specially
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.floats(allow_nan=False, width=16),
                     st.sampled_from(["", "/", "/a", "/a/", "a", "GET", "get", "x-h", "Exact", "PathPrefix",
                                      "RegularExpression", "^/a.*$", "(", "bad name", "v\n"]))
_NAMED = st.dictionaries(st.sampled_from(["name", "value", "type", "other"]), _SCALARS, max_size=4)
_FIELD = st.one_of(_SCALARS, st.lists(st.one_of(_NAMED, _SCALARS), max_size=3),
                   st.dictionaries(st.sampled_from(["type", "value", "x"]), _SCALARS, max_size=3))
_MATCHES = st.dictionaries(st.sampled_from(["path", "method", "headers", "queryParams", "other"]), _FIELD, max_size=4)


def _made(raw: Any) -> tuple[Any, ...]:
    m = build_match(raw)
    return m.match, m.degraded, m.problems, m.ranks


@settings(max_examples=1500, deadline=None)
@given(a=_MATCHES, b=_MATCHES)
def test_matches_with_equal_keys_make_the_same_match(a: dict[str, Any], b: dict[str, Any]) -> None:
    ka, kb = match_key(a), match_key(b)
    if ka is not None and ka == kb:
        assert _made(a) == _made(b)
    if ka is not None:
        assert _made(a) == _made(copy.deepcopy(a))


def test_match_keys_tell_types_apart() -> None:
    assert match_key({"method": True}) is None and match_key({"headers": [{"name": "h", "value": 1}]}) is None
    a, b = {"path": {"value": "/"}}, {"path": {"value": "/", "type": None}}  # read alike: one key
    assert match_key(a) == match_key(b) and _made(a) == _made(b)
    assert match_key({"path": {}}) != match_key({})  # an empty path matches nothing, no path matches /
    assert match_key({"path": {}}) != match_key({"path": {"type": None}})  # the latter is PathPrefix /
    assert _made({"path": {}}) != _made({"path": {"type": None}})
    assert match_key({"path": {"type": "Exact"}}) != match_key({"path": {"type": "Exact", "value": None}})
    assert match_key({"headers": "x"}) is None and match_key({"path": None}) is None
    assert match_key([]) is None and match_key({"other": 1}) is None


_WEIRD = st.sampled_from([True, 1, 1.0, 0, False, None, "1", "", "x-a", "v", ["x"], {"a": 1}])
_HEADER_ITEMS = st.lists(st.fixed_dictionaries({"name": st.sampled_from(["x-a", "x-b"]) | _WEIRD,
                                                "value": st.sampled_from(["1", "two words", "#1"]) | _WEIRD}),
                         max_size=2)
_MODIFIER = st.fixed_dictionaries({}, optional={"set": _HEADER_ITEMS, "add": _HEADER_ITEMS,
                                                "remove": st.lists(st.sampled_from(["x-c", "x-d"]) | _WEIRD, max_size=2)})
_FILTERS = st.lists(st.one_of(
    st.builds(lambda m: {"type": "RequestHeaderModifier", "requestHeaderModifier": m}, _MODIFIER),
    st.builds(lambda m: {"type": "ResponseHeaderModifier", "responseHeaderModifier": m}, _MODIFIER),
    st.builds(lambda p: {"type": "RequestMirror", "requestMirror": {"backendRef": {"name": "api", "port": 8080},
                                                                     "percent": p}}, _WEIRD | st.integers(0, 100)),
), max_size=2)
_REFS = st.lists(st.fixed_dictionaries({"name": st.sampled_from(["api", "missing"]) | _WEIRD,
                                        "port": st.sampled_from([8080, 1]) | _WEIRD},
                                       optional={"weight": st.integers(0, 3) | _WEIRD}), max_size=2)


def _mirror(percent: Any) -> list[dict[str, Any]]:
    return [{"type": "RequestMirror", "requestMirror": {"backendRef": {"name": "api", "port": 8080}, "percent": percent}}]


@settings(max_examples=80, deadline=None)
@example(rules=[{"matches": [], "backendRefs": [{"name": "api", "port": True}]},
                {"matches": [], "backendRefs": [{"name": "api", "port": 1}]},
                {"matches": [], "backendRefs": [{"name": "api", "port": 8080, "weight": True}, {"name": "api", "port": 1}]},
                {"matches": [], "backendRefs": [{"name": "api", "port": 8080, "weight": 1}, {"name": "api", "port": 1}]}])
@example(rules=[{"matches": [], "filters": _mirror(True)}, {"matches": [], "filters": _mirror(1)},
                {"matches": [], "filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {
                    "set": [{"name": "x", "value": "1"}]}}]},
                {"matches": [], "filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {
                    "set": [{"name": "x", "value": 1}]}}]}])
@given(rules=st.lists(st.fixed_dictionaries({"matches": st.lists(_MATCHES, max_size=3)},
                                            optional={"filters": _FILTERS, "backendRefs": _REFS}),
                      min_size=1, max_size=3))
def test_a_render_with_the_memos_is_the_render_without_them(rules: list[dict[str, Any]]) -> None:
    """The memos of matches, filters (by key, and the last list by equality) and backendRefs
    lists off: the same render. True, 1 and 1.0 compare equal but are not the same port,
    weight or percent."""
    for r in rules:
        r.setdefault("backendRefs", [{"name": "api", "port": 8080}])
    # routes one and three hold the very same lists (as the compacted informer caches do), two copies
    objs = [*base_objects(), route("one", rules=rules), route("two", rules=copy.deepcopy(rules)),
            route("three", rules=rules)]
    with_memo = run(copy.deepcopy(objs), now="2026-01-01T00:00:00Z")
    def match(self: Any, raw: Any) -> Any:  # every match, filter list and backendRefs list made anew
        return matches_module.build_match(raw) if isinstance(raw, dict) else matches_module.MALFORMED

    def filters(self: Any, raw: Any, matches: Any, one_port: Any, backends: Any, ns: Any) -> Any:
        return filters_module.rule_filters(raw, [m.match.path_kind for m in matches], one_port, (backends, ns)), None

    def backends(self: Any, refs: Any, ns: Any, settings: Any) -> Any:
        return self._make(refs, ns, settings), None

    with pytest.MonkeyPatch.context() as m:
        m.setattr(matches_module.Matches, "of", match)
        m.setattr(filters_module.Filters, "of", filters)
        m.setattr(backendrefs_module.Backends, "of", backends)
        without = run(copy.deepcopy(objs), now="2026-01-01T00:00:00Z")
    assert with_memo.config == without.config and with_memo.parts == without.parts
    assert [(s.key, dict(s.status)) for s in with_memo.statuses] == [(s.key, dict(s.status)) for s in without.statuses]


def test_route_ids_of_any_names_read_back_as_written() -> None:
    """Ids of routes whose names are plain are written without the quoting check; any other
    name (possible in an offline render) is still quoted as needed."""
    from tests.render.core_fixtures import config

    names = ["shop", "a.b-c_d", "x: y", "true", "1e3", "#c", "null", "é", "a b", "-x", "[x]"]
    objs = [*base_objects(), *(route(n) for n in names)]
    got = {r["id"] for r in config(run(objs))["routes"]}
    assert {f"httproute/apps/{n}/r0m0" for n in names} <= got


def test_rule_tails_written_by_parts_are_the_routes_written_whole(monkeypatch: Any) -> None:
    """A rule's behavior (backends, transforms...) is written once per render and shared by its
    routes; without that (every route written whole as plain data by the generic writer) the
    bytes are the same."""
    from tests.render.core_fixtures import endpoints, service

    refs = [{"name": "api", "port": 8080, "weight": 3}, {"name": "other", "port": 8080, "weight": 1}]
    filters = [{"type": "RequestHeaderModifier", "requestHeaderModifier": {
        "set": [{"name": "x-a", "value": "1"}], "add": [{"name": "x-b", "value": "two words"}], "remove": ["x-c"]}},
        {"type": "ResponseHeaderModifier", "responseHeaderModifier": {"set": [{"name": "x-r", "value": "#1"}]}}]
    match = {"path": {"type": "PathPrefix", "value": "/p"}}
    rules = [{"matches": [match, {"method": "GET"}], "filters": filters, "backendRefs": refs},
             {"matches": [match], "filters": filters, "backendRefs": refs},
             {"matches": [match], "filters": filters, "backendRefs": [{"name": "api", "port": 8080}]},
             {"matches": [match], "backendRefs": refs},
             {"matches": [match], "filters": filters, "backendRefs": [{"name": "missing", "port": 8080}]},
             {"matches": [match], "filters": [{"type": "URLRewrite", "urlRewrite": {"hostname": "h.example"}}],
              "backendRefs": refs},
             {"matches": [match], "filters": filters, "backendRefs": refs, "timeouts": {"request": "5s"}}]
    objs = [*base_objects(), service("other"), endpoints("other", addresses=("10.0.0.7",)),
            route("one", rules=rules), route("two", rules=rules), route("three", rules=copy.deepcopy(rules))]
    by_parts = run(copy.deepcopy(objs), now="2026-01-01T00:00:00Z")
    def whole_route(self: Any, route: Any) -> Any:
        raise emit._Fallback  # (every route through the generic writer)

    monkeypatch.setattr(emit._Writer, "route", whole_route)
    whole = run(copy.deepcopy(objs), now="2026-01-01T00:00:00Z")
    assert by_parts.config == whole.config and by_parts.parts == whole.parts
    assert b'x-b, value: "two words"' in by_parts.config and b"clusterId: svc-apps.other.8080, weight: 1" in by_parts.config


class _Forgetful(dict):  # type: ignore[type-arg]
    """A memo that never remembers."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass


def test_route_conditions_made_once_are_the_conditions_made_each_time(monkeypatch: Any) -> None:
    """Routes with the same generation, previous conditions (one shared list, or equal copies,
    or other ones) and outcome get the conditions made once per render; without that memo every
    status is the same, and so is what the RenderCache may replay."""
    from titanium_gateway.render import RenderCache, render
    from titanium_gateway.render.options import RenderOptions
    from titanium_gateway.render.snapshot import Snapshot

    controller = RenderOptions().controller_name
    ref = {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "web"}
    old = [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "", "observedGeneration": 2,
            "lastTransitionTime": "2025-01-01T00:00:00Z"},
           {"type": "ResolvedRefs", "status": "True", "reason": "ResolvedRefs", "message": "",
            "observedGeneration": 2, "lastTransitionTime": "2025-01-01T00:00:01Z"}]
    stale = [dict(old[0], status="False", reason="NotAllowedByListeners")]

    def status(conds: Any) -> dict[str, Any]:
        return {"parents": [{"parentRef": ref, "controllerName": controller, "conditions": conds}]}

    objs = [*base_objects()]
    for i, conds in enumerate([old, old, copy.deepcopy(old), stale, stale, None, None, "garbage"]):
        meta = {"resourceVersion": str(10 + i), "uid": f"u{i}"}
        obj = route(f"r{i}", status=status(conds) if conds is not None else None)
        obj["metadata"].update(meta)
        objs.append(obj)
    objs.append(route("bad", rules=[{"backendRefs": [{"name": "missing", "port": 1}]}]))

    def statuses(result: Any) -> list[Any]:
        return [(s.key, copy.deepcopy(dict(s.status))) for s in result.statuses]

    now = "2026-01-01T00:00:00Z"
    cache = RenderCache()
    with_memo = [render(Snapshot.from_objects(objs, now=now), RenderOptions(), cache) for _ in range(2)]
    original = status_module.Statuses.__init__
    original_parents = RouteParents.__init__

    def init(self: Any, *a: Any, **kw: Any) -> None:
        original(self, *a, **kw)
        self._echoes = _Forgetful()

    def init_parents(self: Any, *a: Any, **kw: Any) -> None:
        original_parents(self, *a, **kw)
        self._conditions = _Forgetful()

    monkeypatch.setattr(status_module.Statuses, "__init__", init)
    monkeypatch.setattr(RouteParents, "__init__", init_parents)
    cache = RenderCache()
    without = [render(Snapshot.from_objects(objs, now=now), RenderOptions(), cache) for _ in range(2)]
    assert [statuses(r) for r in with_memo] == [statuses(r) for r in without]
    assert [r.config for r in with_memo] == [r.config for r in without]
    conds = {s.name: s.status["parents"][0]["conditions"] for s in with_memo[0].statuses if s.kind == "HTTPRoute"}
    assert conds["r0"][0]["lastTransitionTime"] == "2025-01-01T00:00:00Z" and conds["r3"][0]["lastTransitionTime"] == now
    assert conds["bad"][1]["status"] == "False"


def test_a_parent_ref_shared_by_routes_of_two_namespaces_is_read_in_each() -> None:
    """One parentRef object without a namespace (the compacted informer caches share equal
    ones) names the Gateway of each route's own namespace: the render with the shared object is
    the render with copies."""
    shared = [{"name": "web"}, {"name": "web", "namespace": "apps", "sectionName": "http"}]
    objs = [*base_objects(), route("one", parents=shared), route("two", ns="other", parents=shared),
            route("three", parents=shared)]
    same = run(objs, now="2026-01-01T00:00:00Z")
    copies = run([copy.deepcopy(o) for o in objs], now="2026-01-01T00:00:00Z")  # (one by one: nothing shared)
    assert same.config == copies.config
    assert [(s.key, s.status) for s in same.statuses] == [(s.key, s.status) for s in copies.statuses]
    # route two's first parentRef names other/web, which is not a Gateway of ours: not reported
    two = next(s for s in same.statuses if s.key == ("HTTPRoute", "other", "two"))
    assert [p["parentRef"].get("namespace") for p in two.status["parents"]] == ["apps"]
