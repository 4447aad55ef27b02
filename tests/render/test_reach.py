"""Unreachable rules (render/reach.py) and accepted routes that are not served.

The detector's table of covered / not covered pairs is checked against the contract's own
matching (a brute-force check over sample requests for every pair said to be covered), then the
render: the upstream simple-http-https pattern (a redirect route beside the HTTPS route for the
same host), an Ingress path shadowed by an HTTPRoute, a route attached only to a listener whose
certificate Secret is missing, the offline summary, determinism.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.bench_render import converged_objects
from titanium_gateway.contract import routing
from titanium_gateway.offline.snapshot import build_snapshot
from titanium_gateway.offline.summary import summary
from titanium_gateway.render import RenderCache, render
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.reach import covers, find_unreachable
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.twp.model import Behavior, DirectResponse, Forward, Match, Route, Source

from .core_fixtures import endpoints, gateway, gatewayclass, listener, route, service, tls_secret

A = Source("HTTPRoute", "apps", "a")
B = Source("HTTPRoute", "apps", "b")
FWD = Behavior(Forward("c"))


def m(path: str | None = None, kind: str | None = None, **kw: Any) -> Match:
    if path is not None and kind is None:
        kind = "Prefix"
    return Match(path, kind, **kw)


# (covering host, covering match, covered host, covered match, covered?)
COVER_TABLE = [
    # paths: segment prefixes
    ("h", m("/a"), "h", m("/a"), True),
    ("h", m("/a"), "h", m("/a/b"), True),
    ("h", m("/a"), "h", m("/ab"), False),
    ("h", m("/ab"), "h", m("/a"), False),
    ("h", m("/a/b"), "h", m("/a"), False),
    ("h", m("/"), "h", m("/anything"), True),
    ("h", m(), "h", m("/x", "Exact"), True),
    ("h", m("/a"), "h", m("/a", "Exact"), True),
    ("h", m("/a"), "h", m("/a/", "Exact"), True),
    ("h", m("/a"), "h", m("/ab", "Exact"), False),
    ("h", m("/a", "Exact"), "h", m("/a"), False),  # the prefix also takes /a/b
    ("h", m("/a", "Exact"), "h", m("/a", "Exact"), True),
    ("h", m("/a", "Exact"), "h", m("/a/", "Exact"), False),
    ("h", m("/a"), "h", m(), False),  # any path
    ("h", m("/"), "h", m(), True),
    # regular expressions: never certain, except a covering route that takes every path
    ("h", m("/a.*", "Regex"), "h", m("/a/b"), False),
    ("h", m("/a", "Regex"), "h", m("/a", "Regex"), False),
    ("h", m("/"), "h", m("/a.*", "Regex"), True),
    ("h", m("/a"), "h", m("/a.*", "Regex"), False),
    # hosts: exact, wildcard (one or more labels, not the apex), none
    (None, m(), "h.example.com", m("/x"), True),
    ("*.example.com", m(), "h.example.com", m(), True),
    ("*.example.com", m(), "a.b.example.com", m(), True),
    ("*.example.com", m(), "example.com", m(), False),
    ("*.example.com", m(), "*.example.com", m(), True),
    ("*.example.com", m(), "*.a.example.com", m(), True),
    ("*.a.example.com", m(), "*.example.com", m(), False),
    ("h.example.com", m(), "*.example.com", m(), False),
    ("h.example.com", m(), "g.example.com", m(), False),
    ("h.example.com", m(), None, m(), False),
    ("*.example.com", m(), "h.notexample.com", m(), False),
    # method
    ("h", m(method="GET"), "h", m(method="GET"), True),
    ("h", m(method="GET"), "h", m(), False),
    ("h", m(), "h", m(method="POST"), True),
    ("h", m(method="GET"), "h", m(method="POST"), False),
    # headers: the covering route's a subset of the covered one's (values case-insensitive)
    ("h", m(headers=(("x-env", "canary"),)), "h", m(headers=(("x-env", "Canary"), ("x-b", "1"))), True),
    ("h", m(headers=(("x-env", "canary"),)), "h", m(), False),
    ("h", m(headers=(("x-env", "canary"),)), "h", m(headers=(("x-env", "stable"),)), False),
    ("h", m(headers=(("x-env", "canary"), ("x-b", "1"))), "h", m(headers=(("x-env", "canary"),)), False),
    ("h", m(), "h", m(headers=(("x-env", "canary"),)), True),
    # query (case-sensitive values); queryRegex only when the very same pattern
    ("h", m(query=(("q", "v"),)), "h", m(query=(("q", "v"), ("r", "1"))), True),
    ("h", m(query=(("q", "v"),)), "h", m(query=(("q", "V"),)), False),
    ("h", m(query=(("q", "v"),)), "h", m(), False),
    ("h", m(query=(("q", "a b&c"),)), "h", m(query=(("q", "a b&c"),)), True),
    ("h", m(query_regex=(("id", "^[0-9]+$"),)), "h", m(query_regex=(("id", "^[0-9]+$"),)), True),
    ("h", m(query_regex=(("id", "^[0-9]+$"),)), "h", m(query=(("id", "7"),)), False),
    ("h", m(query_regex=(("id", "^[0-9]+$"),)), "h", m(query_regex=(("id", "^[0-9]*$"),)), False),
]


@pytest.mark.parametrize(("w_host", "w", "r_host", "r", "expected"), COVER_TABLE)
def test_covers(w_host: str | None, w: Match, r_host: str | None, r: Match, expected: bool) -> None:
    assert covers(w_host, w, r_host, r) is expected


def _requests(host: str | None, match: Match) -> list[routing.Request]:
    """Requests the route (host, match) accepts, built from its own values (and variants)."""
    hosts = ["other.test"] if host is None else [host.replace("*", "x"), host.replace("*", "x.y")]
    paths = ["/", "/zz"]
    if match.path is not None and match.path_kind in ("Exact", "Prefix"):
        paths = [match.path] + ([match.path.rstrip("/") + "/more", match.path.rstrip("/") + "/"]
                                if match.path_kind == "Prefix" else [])
    headers = tuple(match.headers)
    query = "&".join(f"{k}={v}" for k, v in match.query)
    methods = [match.method] if match.method else ["GET", "POST"]
    return [routing.Request(method, h, p, query, headers) for h in hosts for p in paths for method in methods]


def _contract_route(host: str | None, match: Match) -> Any:
    """The route as the data plane has it: the very model value (without query regexes)."""
    return Route("w", host, dataclasses.replace(match, query_regex=()), Behavior(DirectResponse(200, "")), "",
                 Source("", "", ""), 0, 0)


@pytest.mark.parametrize(("w_host", "w", "r_host", "r", "expected"),
                         [c for c in COVER_TABLE if c[4] and not c[1].query_regex and not c[3].query_regex
                          and c[3].path_kind != "Regex"])
def test_covered_pairs_agree_with_the_contract(w_host: str | None, w: Match, r_host: str | None, r: Match,
                                               expected: bool) -> None:
    covering, covered = _contract_route(w_host, w), _contract_route(r_host, r)
    for request in _requests(r_host, r):
        if routing.matches(covered, request):
            assert routing.matches(covering, request), request


def r(rid: str, source: Source, rule: int, match: Match, host: str | None = "h", index: int = 0,
      behavior: Behavior = FWD) -> Route:
    return Route(rid, host, match, behavior, "", source, rule, index)


def test_a_rule_is_unreachable_only_when_all_its_routes_are_covered() -> None:
    routes = [  # (in precedence order: a covering route comes first with the same host and path)
        r("a0m0", A, 0, m("/x")),
        r("a0m1", A, 0, m("/y/"), index=1),
        r("a1", A, 1, m("/z")),
        r("b0m0", B, 0, m("/x")),
        r("b0m1", B, 0, m("/y"), index=1),  # the same prefix as /y/
        r("b1m0", B, 1, m("/z")),
        r("b1other", B, 1, m("/z"), host="g"),  # the same rule on a host nobody else serves
    ]
    found = find_unreachable(routes)
    assert [(u.source, u.rule_index) for u in found] == [(B, 0)]
    assert [t.source for t in found[0].takers] == [A]
    assert found[0].message() == "rule 0 is unreachable: every request it matches is taken first by HTTPRoute apps/a rule 0"


def test_routes_of_the_same_rule_never_shadow_each_other_and_same_object_rules_do() -> None:
    routes = [
        r("a0m0", A, 0, m("/x")),
        r("a0m1", A, 0, m("/x"), index=1),  # covered by its own rule: that rule still answers
        r("a1", A, 1, m("/x")),
    ]
    found = find_unreachable(routes)
    assert [(u.source, u.rule_index) for u in found] == [(A, 1)]
    assert found[0].same_object_only
    assert found[0].message().endswith("taken first by rule 0 of this HTTPRoute")


def test_not_covered_when_unsure_or_only_partly() -> None:
    routes = [
        r("a0", A, 0, m("/a", "Regex")),
        r("a1", A, 1, m("/q", "Exact")),
        r("a2", A, 2, m("/h", headers=(("x", "1"),))),
        r("a3", A, 3, m("/m", method="GET")),
        r("b0", B, 0, m("/a", "Regex")),  # a regular expression never covers
        r("b1", B, 1, m("/q")),  # the prefix /q also takes /q/x: not covered by Exact /q
        r("b2", B, 2, m("/h")),  # no header needed
        r("b3", B, 3, m("/m")),  # any method
        r("b4", B, 4, m("/m", method="GET"), host="other"),
    ]
    assert find_unreachable(routes) == ()


def test_equivalent_matches_any_path_and_the_default_backend() -> None:
    ing = Source("Ingress", "apps", "ing")
    routes = [
        r("a0", A, 0, m("/"), host=None),
        r("b0", B, 0, m(), host=None),  # no path = the prefix /
        r("d", ing, -1, m(), host=None),  # the defaultBackend
    ]
    found = find_unreachable(routes)
    assert [(u.source, u.rule_index) for u in found] == [(B, 0), (ing, -1)]
    assert found[1].message() == ("the default backend is unreachable: every request it matches is taken first by "
                                  "HTTPRoute apps/a rule 0")


def test_rules_answering_500_are_not_reported() -> None:
    err = Behavior(DirectResponse(500, "UnsupportedValue: x"))
    assert find_unreachable([r("a0", A, 0, m("/x")), r("b0", B, 0, m("/x"), behavior=err)]) == ()


def test_takers_are_named_in_route_order_each_once() -> None:
    c = Source("Ingress", "apps", "c")
    routes = [
        r("a0", A, 0, m("/x")),
        r("c0", c, 0, m("/y"), index=2),
        r("b0m0", B, 0, m("/x")),
        r("b0m1", B, 0, m("/y"), index=1),
        r("b0m2", B, 0, m("/x"), host="h2"),
        r("a0h2", A, 0, m("/x"), host="h2"),  # (after b0m2: it does not cover it)
    ]
    assert find_unreachable(routes) == ()
    del routes[-2]
    (u,) = find_unreachable(routes)
    assert [t.source for t in u.takers] == [A, c]
    assert u.message() == ("rule 0 is unreachable: every request it matches is taken first by HTTPRoute apps/a rule 0"
                           " and Ingress apps/c path /y of host h (rule 0 path 2)")


def test_many_routes_of_one_host() -> None:
    routes = [r(f"a{i}", A, i, m(f"/p{i}")) for i in range(3000)]
    routes += [r(f"b{i}", B, i, m(f"/p{i}/")) for i in range(3000)]
    found = find_unreachable(routes)
    assert len(found) == 3000 and all(u.source == B for u in found)


# -- through the render ------------------------------------------------------------------------
def _render(objects: list[dict[str, Any]], cache: RenderCache | None = None, **options: Any) -> Any:
    return render(build_snapshot(objects), RenderOptions(**{"assume_programmed": True, **options}), cache)


def _status(result: Any, kind: str, name: str, ns: str = "apps") -> dict[str, Any]:
    return next(s.status for s in result.statuses if s.key == (kind, ns, name))


def _accepted(status: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for p in status["parents"] for c in p["conditions"] if c["type"] == "Accepted"]


def _simple_http_https(redirect_created: str) -> list[dict[str, Any]]:
    """The upstream examples/standard/simple-http-https pattern: an HTTP listener whose route
    redirects to HTTPS, beside the HTTPS listener's routes for the same hosts."""
    gw = gateway(listeners=[
        listener("http", 80, "HTTP", hostname="*.example.com"),
        listener("https", 443, "HTTPS", hostname="*.example.com",
                 tls={"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": "example-com"}]}),
    ])
    foo = route("foo", parents=[{"name": "web", "sectionName": "https"}], hostnames=["foo.example.com"],
                rules=[{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                        "backendRefs": [{"name": "api", "port": 8080}]},
                       {"matches": [{"path": {"type": "PathPrefix", "value": "/orders"}}],
                        "backendRefs": [{"name": "api", "port": 8080}]}],
                created="2024-01-02T00:00:00Z")
    bar = route("bar", parents=[{"name": "web", "sectionName": "https"}], hostnames=["bar.example.com"],
                created="2024-01-02T00:00:00Z")
    redirect = route("tls-redirect", parents=[{"name": "web", "sectionName": "http"}],
                     hostnames=["foo.example.com", "bar.example.com"],
                     rules=[{"filters": [{"type": "RequestRedirect",
                                          "requestRedirect": {"scheme": "https", "port": 443}}]}],
                     created=redirect_created)
    return [gatewayclass(), gw, tls_secret("example-com", cn="example.com"), service(), endpoints(), foo, bar,
            redirect]


def test_simple_http_https_the_newer_redirect_never_answers() -> None:
    result = _render(_simple_http_https("2024-01-03T00:00:00Z"))
    (u,) = result.unreachable
    assert (u.source, u.rule_index) == (Source("HTTPRoute", "apps", "tls-redirect"), 0)
    assert [t.source.name for t in u.takers] == ["bar", "foo"]  # bar.example.com sorts first
    message = ("rule 0 is unreachable: every request it matches is taken first by HTTPRoute apps/bar rule 0"
               " and HTTPRoute apps/foo rule 0")
    events = [e for e in result.events if e.reason == "ShadowedRule"]
    assert [(e.kind, e.name, e.type, e.message) for e in events] == [("HTTPRoute", "tls-redirect", "Warning", message)]
    assert events[0].api_version == "gateway.networking.k8s.io/v1" and events[0].uid
    (accepted,) = _accepted(_status(result, "HTTPRoute", "tls-redirect"))
    assert (accepted["status"], accepted["reason"]) == ("True", "Accepted")
    assert accepted["message"] == f"the route is accepted; {message}"
    for name in ("foo", "bar"):
        assert [c["message"] for c in _accepted(_status(result, "HTTPRoute", name))] == ["the route is accepted"]


def test_simple_http_https_the_older_redirect_takes_the_https_routes() -> None:
    result = _render(_simple_http_https("2024-01-01T00:00:00Z"))
    found = {(u.source.name, u.rule_index): [t.source.name for t in u.takers] for u in result.unreachable}
    # foo's /orders rule is more specific than the redirect's any path: it still answers
    assert found == {("bar", 0): ["tls-redirect"], ("foo", 0): ["tls-redirect"]}
    assert sorted(e.name for e in result.events if e.reason == "ShadowedRule") == ["bar", "foo"]
    (accepted,) = _accepted(_status(result, "HTTPRoute", "foo"))
    assert accepted["message"].startswith("the route is accepted; rule 0 is unreachable: ")
    assert accepted["status"] == "True"


def _ingress(name: str, path: str, created: str, host: str = "shop.example.com") -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": "apps", "creationTimestamp": created, "uid": f"uid-{name}"},
            "spec": {"ingressClassName": "titanium",
                     "rules": [{"host": host, "http": {"paths": [
                         {"path": path, "pathType": "Prefix",
                          "backend": {"service": {"name": "api", "port": {"number": 8080}}}}]}}]}}


INGRESS_CLASS = {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "titanium"},
                 "spec": {"controller": "titanium.io/ingress-controller"}}


def test_an_ingress_path_shadowed_by_an_older_httproute() -> None:
    objects = [gatewayclass(), gateway(), service(), endpoints(), INGRESS_CLASS,
               route("older", hostnames=["shop.example.com"], created="2024-01-01T00:00:00Z",
                     rules=[{"matches": [{"path": {"type": "PathPrefix", "value": "/api"}}],
                             "backendRefs": [{"name": "api", "port": 8080}]}]),
               _ingress("newer", "/api/", "2024-01-05T00:00:00Z"),  # (the same prefix as /api)
               _ingress("other", "/apix", "2024-01-05T00:00:00Z"),  # not under the prefix /api
               _ingress("sub", "/api/v1", "2024-01-05T00:00:00Z")]  # a longer path ranks first
    result = _render(objects)
    events = [e for e in result.events if e.reason == "ShadowedRule"]
    assert [(e.kind, e.name, e.uid, e.api_version) for e in events] == [
        ("Ingress", "newer", "uid-newer", "networking.k8s.io/v1")]
    assert events[0].message == ("path /api of host shop.example.com (rule 0 path 0) is unreachable: every request"
                                 " it matches is taken first by HTTPRoute apps/older rule 0")


def test_an_ingress_route_conflict_is_not_reported_twice() -> None:
    objects = [gatewayclass(), service(), endpoints(), INGRESS_CLASS,
               _ingress("first", "/api", "2024-01-01T00:00:00Z"), _ingress("second", "/api", "2024-01-02T00:00:00Z")]
    result = _render(objects)
    assert [e.reason for e in result.events if e.name == "second"] == ["RouteConflict"]
    assert result.unreachable == ()


def _unresolved_tls(extra_listener: bool) -> list[dict[str, Any]]:
    listeners = [listener("https", 443, "HTTPS",
                          tls={"certificateRefs": [{"kind": "Secret", "name": "missing"}]})]
    if extra_listener:
        listeners.append(listener("http", 80, "HTTP"))
    return [gatewayclass(), gateway(listeners=listeners), service(), endpoints(), route("shop")]


def test_a_route_on_an_unprogrammed_listener_only_is_accepted_but_not_served() -> None:
    result = _render(_unresolved_tls(extra_listener=False))
    assert result.document.routes == ()
    (accepted,) = _accepted(_status(result, "HTTPRoute", "shop"))
    assert (accepted["status"], accepted["reason"]) == ("True", "Accepted")  # the route is valid
    why = 'listener "https" of Gateway apps/web is not programmed (Secret apps/missing not found)'
    assert accepted["message"] == f"the route is accepted, but not served: {why}"
    (event,) = [e for e in result.events if e.reason == "NotServed"]
    assert (event.kind, event.name, event.type, event.message) == ("HTTPRoute", "shop", "Warning",
                                                                   f"the route is not served: {why}")
    text = summary(result)
    assert f"Accepted but not served (1):\n  HTTPRoute apps/shop: {why}" in text


def test_a_route_with_one_programmed_listener_is_served_without_warning() -> None:
    result = _render(_unresolved_tls(extra_listener=True))
    assert len(result.document.routes) == 1
    assert [c["message"] for c in _accepted(_status(result, "HTTPRoute", "shop"))] == ["the route is accepted"]
    assert not [e for e in result.events if e.reason in ("NotServed", "ShadowedRule")]
    assert "not served" not in summary(result)


def test_a_route_without_rules_is_not_served() -> None:
    result = _render([gatewayclass(), gateway(), route("empty", rules=[])])
    (accepted,) = _accepted(_status(result, "HTTPRoute", "empty"))
    assert accepted["message"] == "the route is accepted, but not served: it has no rules"


def test_an_ingress_without_paths_is_not_served() -> None:
    bad = _ingress("bad", "/x", "2024-01-01T00:00:00Z", host="bad host!")
    empty = {**_ingress("empty", "/x", "2024-01-01T00:00:00Z"), "spec": {"ingressClassName": "titanium"}}
    result = _render([service(), endpoints(), INGRESS_CLASS, bad, empty])
    got = {e.name: e.message for e in result.events if e.reason == "NotServed"}
    assert got == {"bad": "the Ingress is not served: none of its paths is valid (InvalidPath events say why)",
                   "empty": "the Ingress is not served: it has no rule paths and no defaultBackend"}


def test_summary_lists_unreachable_rules() -> None:
    text = summary(_render(_simple_http_https("2024-01-03T00:00:00Z")))
    assert ("Unreachable rules (1):\n  HTTPRoute apps/tls-redirect rule 0 is unreachable: every request it matches"
            " is taken first by HTTPRoute apps/bar rule 0 and HTTPRoute apps/foo rule 0") in text


def test_deterministic_in_any_input_order_and_with_a_cache() -> None:
    tls_gw = gateway("tls", listeners=[listener("https", 443, "HTTPS",
                                                tls={"certificateRefs": [{"kind": "Secret", "name": "missing"}]})])
    objects = _simple_http_https("2024-01-01T00:00:00Z") + [
        tls_gw, route("unserved", parents=[{"name": "tls"}], created="2024-01-04T00:00:00Z"),
        route("other", parents=[{"name": "web", "namespace": "apps"}], hostnames=["foo.example.com"],
              created="2024-01-04T00:00:00Z")]
    for obj in objects:  # (the offline loader numbers objects without a uid in input order)
        obj["metadata"]["uid"] = f"uid-{obj['kind']}-{obj['metadata']['name']}"
    first = _render(objects)
    again = _render(list(reversed(objects)))
    assert first == again and first.unreachable == again.unreachable
    assert [e.dedupe_key for e in first.events] == [e.dedupe_key for e in again.events]
    cache = RenderCache()
    warm = [render(build_snapshot(objects), RenderOptions(assume_programmed=True), cache) for _ in range(3)]
    assert all(w == first and w.unreachable == first.unreachable for w in warm)
    assert {e.reason for e in first.events} == {"ShadowedRule", "NotServed", "InvalidListener"}


def test_a_warm_cache_renders_the_same() -> None:
    # (the cache replays HTTPRoutes with a resourceVersion: give them one)
    objects = _simple_http_https("2024-01-03T00:00:00Z")
    for i, obj in enumerate(objects):
        obj["metadata"]["resourceVersion"] = str(i + 1)
        obj["metadata"].setdefault("uid", f"u{i}")
    cache = RenderCache()
    snap = Snapshot.from_objects(objects)
    cold = render(snap, RenderOptions(assume_programmed=True))
    assert render(snap, RenderOptions(assume_programmed=True), cache) == cold
    assert render(snap, RenderOptions(assume_programmed=True), cache) == cold


def test_a_warm_cache_reuses_the_answer_only_for_the_very_same_routes(monkeypatch: pytest.MonkeyPatch) -> None:
    from titanium_gateway.render import reach

    calls: list[int] = []
    real = reach.find_unreachable

    def counting(routes: Any) -> Any:
        calls.append(len(routes))
        return real(routes)

    monkeypatch.setattr(reach, "find_unreachable", counting)
    objects = _simple_http_https("2024-01-03T00:00:00Z")
    for i, obj in enumerate(objects):
        obj["metadata"]["resourceVersion"] = str(i + 1)
        obj["metadata"].setdefault("uid", f"u{i}")
    options = RenderOptions(assume_programmed=True)
    # converged: the statuses the render wants are written (else conditions are stamped anew)
    objects = converged_objects(objects, options, render)
    cache = RenderCache()
    render(Snapshot.from_objects(objects), options, cache)
    calls.clear()
    # an EndpointSlice change: the routes replayed are the very objects of the last render
    slices = [o for o in objects if o["kind"] == "EndpointSlice"]
    slices[0]["endpoints"][0]["addresses"] = ["10.0.0.9"]
    slices[0]["metadata"]["resourceVersion"] = "100"
    warm = render(Snapshot.from_objects(objects), options, cache)
    assert calls == [] and cache.hits == 3
    cold = render(Snapshot.from_objects(objects), options)
    assert warm == cold and warm.unreachable == cold.unreachable != ()
    assert [e.message for e in warm.events] == [e.message for e in cold.events]
    # the redirect route made older: new route objects, found again (now it shadows the HTTPS routes)
    redirect = next(o for o in objects if o["metadata"]["name"] == "tls-redirect")
    redirect["metadata"]["creationTimestamp"] = "2024-01-01T00:00:00Z"
    redirect["metadata"]["resourceVersion"] = "101"
    warm = render(Snapshot.from_objects(objects), options, cache)
    assert len(calls) == 1  # (the cold render above: the cache searched the keys of the changed routes only)
    assert {(u.source.name, u.rule_index) for u in warm.unreachable} == {("bar", 0), ("foo", 0)}
    assert warm == render(Snapshot.from_objects(objects), options)


_SOURCES = [A, B, Source("Ingress", "apps", "c")]
_MATCHES = [m("/x"), m("/x/"), m("/x", "Exact"), m("/y"), m(), m("/x", "Regex"), m("/x", method="GET"),
            m("/y", headers=(("x", "1"),))]
_route_spec = st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, len(_MATCHES) - 1),
                        st.sampled_from(["h", "g", None]), st.sampled_from(["", "gw"]), st.integers(0, 9),
                        st.booleans())


def _made(n: int, spec: tuple[Any, ...]) -> Route:
    src, rule, match, host, plane, key, err = spec
    return Route(f"r{n}", host, _MATCHES[match], Behavior(DirectResponse(500, "x")) if err else FWD, f"k{key}",
                 _SOURCES[src], rule, n % 2, plane=plane)


@settings(max_examples=200, deadline=None)
@given(st.lists(_route_spec, max_size=30), st.lists(st.tuples(st.booleans(), st.integers(0, 100), _route_spec),
                                                     max_size=8))
def test_the_search_of_the_keys_changed_only_finds_what_the_whole_search_finds(
        first: list[tuple[Any, ...]], edits: list[tuple[bool, int, tuple[Any, ...]]]) -> None:
    """The render's cache searches again only the keys of the routes gone or new since the last
    render (render/memo.py): after each change its answer is find_unreachable's."""
    from titanium_gateway.render.builder import route_order
    from titanium_gateway.render.memo import UnreachableMemo

    memo = UnreachableMemo()
    routes = sorted((_made(n, spec) for n, spec in enumerate(first)), key=route_order)
    made = len(routes)
    assert memo.find(tuple(routes), route_order) == find_unreachable(routes)
    for add, at, spec in edits:
        if add or not routes:
            made += 1
            routes = sorted([*routes, _made(made, spec)], key=route_order)
        else:
            del routes[at % len(routes)]
        assert memo.find(tuple(routes), route_order) == find_unreachable(routes)
