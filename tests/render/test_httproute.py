from __future__ import annotations

import re
from typing import Any

import pytest

from tests.render.core_fixtures import (
    CONTROLLER,
    base_objects,
    config,
    endpoints,
    gateway,
    gatewayclass,
    grant,
    listener,
    listener_status,
    parent_cond,
    route,
    route_by_id,
    routes,
    run,
    service,
    status_of,
)
from titanium_gateway.render.httproute import (
    check_regex,
    parse_duration_ms,
    prefix_rewrite_transforms,
    timespan,
)
from titanium_gateway.render.result import Released

BACKEND = [{"name": "api", "port": 8080}]


def rule(**kw: Any) -> dict[str, Any]:
    return {"backendRefs": BACKEND, **kw}


def one(rules: list[dict[str, Any]], *extra: Any, hostnames: list[str] | None = None, **opts: Any):  # type: ignore[no-untyped-def]
    return run(base_objects() + [route(rules=rules, hostnames=hostnames), *extra], **opts)


# -- helpers -----------------------------------------------------------------------------------
def test_durations_and_timespans() -> None:
    assert parse_duration_ms("10s") == 10_000
    assert parse_duration_ms("500ms") == 500
    assert parse_duration_ms("1h30m") == 5_400_000
    assert parse_duration_ms("0s") == 0
    for bad in ("", "10", "1.5s", "1d", "1s1s", "123456s", 5, None):
        assert parse_duration_ms(bad) is None, bad
    assert timespan(500) == "00:00:00.500"
    assert timespan(5_400_000) == "01:30:00"
    assert timespan(90_061_001) == "1.01:01:01.001"


def test_regex_checks() -> None:
    assert check_regex("^/[0-9]+$") == ""
    assert "compile" in check_regex("([a-z")
    assert "catastrophic" in check_regex("(a+)+$")
    for risky in ("(a|aa)*$", "(a|a?)+$", "(\\w+\\s?)*$", "(?:a|b|ab)*c", "(.*a){20}", "((a{1,10}){1,10}){1,10}"):
        assert "catastrophic" in check_regex(risky), risky
    for fine in ("^/(foo|bar)$", "[(]+", "\\(a+\\)+", "(ab){2}", "(a)?", "^/users/[0-9]{1,6}$"):
        assert check_regex(fine) == "", fine
    assert "longer" in check_regex("a" * 1025)
    assert "backreference" in check_regex(r"(a)\1")
    assert "does not support" in check_regex("(?P<x>a)")
    assert "does not support" in check_regex("(?a)b")
    assert check_regex("(?i)^/[a-z]+(?:/[0-9]+)?$") == ""


def _apply(transforms: list[Any], path: str) -> str:
    for t in transforms:  # (model transforms, or parsed ones)
        p = t["parameters"] if isinstance(t, dict) else {"pattern": t.pattern, "replacement": t.replacement}
        # the data plane replaces the first match, literal replacement; empty result -> /
        path = re.sub(p["pattern"], lambda _m, r=p["replacement"]: r, path, count=1) or "/"
    return path


@pytest.mark.parametrize(("prefix", "repl", "path", "want"), [
    ("/foo", "/bar", "/foo", "/bar"),
    ("/foo", "/bar", "/foo/x", "/bar/x"),
    ("/foo", "/bar", "/foo/", "/bar/"),
    ("/foo", "/bar/", "/foo", "/bar/"),
    ("/foo", "/bar/", "/foo/x", "/bar/x"),
    ("/foo/", "/bar", "/foo/x", "/bar/x"),
    ("/foo", "/", "/foo", "/"),
    ("/foo", "/", "/foo/", "/"),
    ("/foo", "/", "/foo/bar", "/bar"),
    ("/", "/bar", "/x", "/bar/x"),
    ("/", "/bar", "/", "/bar"),
    ("/", "/bar/", "/x", "/bar/x"),
    ("/a.b", "/c", "/a.b/d", "/c/d"),
])
def test_replace_prefix_match_table(prefix: str, repl: str, path: str, want: str) -> None:
    assert _apply(prefix_rewrite_transforms(prefix, repl), path) == want


# -- matches -----------------------------------------------------------------------------------
def test_quickstart_shape() -> None:
    objs = base_objects() + [service("api-canary"), endpoints("api-canary", addresses=("10.0.0.9",)),
                             service("frontend"), endpoints("frontend", addresses=("10.0.1.1",))]
    r = route(hostnames=["shop.example.com"], rules=[
        {"matches": [{"path": {"type": "PathPrefix", "value": "/api"}}],
         "backendRefs": [{"name": "api", "port": 8080, "weight": 9}, {"name": "api-canary", "port": 8080, "weight": 1}]},
        {"backendRefs": [{"name": "frontend", "port": 8080}]},
    ])
    res = run(objs + [r])
    assert routes(res) == [
        {"id": "httproute/apps/shop/r0m0", "order": 1,
         "match": {"host": "shop.example.com", "path": "/api", "pathKind": "Prefix"},
         "clusters": [{"clusterId": "svc-apps.api.8080", "weight": 9},
                      {"clusterId": "svc-apps.api-canary.8080", "weight": 1}]},
        {"id": "httproute/apps/shop/r1m0", "order": 2,
         "match": {"host": "shop.example.com", "path": "/", "pathKind": "Prefix"},
         "clusterId": "svc-apps.frontend.8080"},
    ]
    assert parent_cond(res, "Accepted")["status"] == "True"
    assert parent_cond(res, "ResolvedRefs")["status"] == "True"
    assert listener_status(res, "http")["attachedRoutes"] == 1
    parent = status_of(res, "HTTPRoute", "apps", "shop").status["parents"][0]
    assert parent["parentRef"] == {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "web"}
    assert parent["controllerName"] == CONTROLLER
    assert parent_cond(res, "Accepted")["observedGeneration"] == 2


def test_match_fields_normalized() -> None:
    res = one([rule(matches=[{
        "path": {"type": "PathPrefix", "value": "/v1/"}, "method": "GET",
        "headers": [{"name": "X-Env", "value": "Canary"}, {"name": "x-env", "value": "ignored"}],
        "queryParams": [{"name": "q", "value": "1"}, {"name": "id", "type": "RegularExpression", "value": "^[0-9]+$"}],
    }, {"path": {"type": "Exact", "value": "/exact/"}}, {"path": {"type": "RegularExpression", "value": "/r/[a-z]+"}}])])
    assert route_by_id(res, "httproute/apps/shop/r0m0")["match"] == {
        "path": "/v1", "pathKind": "Prefix", "method": "GET", "headers": {"x-env": "Canary"},
        "query": {"q": "1"}, "queryRegex": {"id": "^[0-9]+$"}}
    assert route_by_id(res, "httproute/apps/shop/r0m1")["match"] == {"path": "/exact/", "pathKind": "Exact"}
    assert route_by_id(res, "httproute/apps/shop/r0m2")["match"] == {"path": "/r/[a-z]+", "pathKind": "Regex"}
    # Exact before RegularExpression before PathPrefix
    assert [r["id"][-4:] for r in routes(res)] == ["r0m1", "r0m2", "r0m0"]


def test_precedence_across_routes_and_rules() -> None:
    objs = base_objects() + [
        route("older", rules=[rule(matches=[{"path": {"value": "/a"}}])], created="2020-01-01T00:00:00Z"),
        route("newer", rules=[rule(matches=[{"path": {"value": "/a"}}])], created="2021-01-01T00:00:00Z"),
        route("deep", rules=[rule(matches=[{"path": {"value": "/a/b"}}])], created="2022-01-01T00:00:00Z"),
        route("hosted", rules=[rule()], hostnames=["x.example.com"], created="2023-01-01T00:00:00Z"),
        route("wild", rules=[rule()], hostnames=["*.example.com"], created="2019-01-01T00:00:00Z"),
    ]
    assert [r["id"].split("/")[2] for r in routes(run(objs))] == ["hosted", "wild", "deep", "older", "newer"]


def test_hostname_intersection_and_no_match() -> None:
    gw = gateway(listeners=[listener("a", 80, hostname="*.example.com")])
    objs = [gatewayclass(), gw, service(), endpoints()]
    res = run(objs + [route(hostnames=["a.example.com", "other.org"])])
    assert [r["match"]["host"] for r in routes(res)] == ["a.example.com"]
    assert [r["id"] for r in routes(res)] == ["httproute/apps/shop/r0m0"]
    none = run(objs + [route(hostnames=["other.org"])])
    assert parent_cond(none, "Accepted")["reason"] == "NoMatchingListenerHostname"
    assert routes(none) == []
    inherit = run(objs + [route()])
    assert [r["match"]["host"] for r in routes(inherit)] == ["*.example.com"]
    multi = run([gatewayclass(), gateway(), service(), endpoints(), route(hostnames=["b.com", "A.com"])])
    assert [r["id"] for r in routes(multi)] == ["httproute/apps/shop/r0m0/a.com", "httproute/apps/shop/r0m0/b.com"]


def test_section_name_and_port_parent_refs() -> None:
    gw = gateway(listeners=[listener("a", 80), listener("b", 8080)])
    objs = [gatewayclass(), gw, service(), endpoints()]
    res = run(objs + [route(parents=[{"name": "web", "sectionName": "b"}])])
    assert listener_status(res, "a")["attachedRoutes"] == 0
    assert listener_status(res, "b")["attachedRoutes"] == 1
    parent = status_of(res, "HTTPRoute", "apps", "shop").status["parents"][0]
    assert parent["parentRef"]["sectionName"] == "b"
    bad = run(objs + [route(parents=[{"name": "web", "sectionName": "a", "port": 8080}])])
    assert parent_cond(bad, "Accepted")["reason"] == "NoMatchingParent"
    port = run(objs + [route(parents=[{"name": "web", "port": 80}])])
    assert listener_status(port, "a")["attachedRoutes"] == 1
    assert listener_status(port, "b")["attachedRoutes"] == 0


def test_stale_parent_entry_removed_and_foreign_parent_never_reported() -> None:
    old = {"parents": [{"parentRef": {"name": "gone"}, "controllerName": CONTROLLER, "conditions": []},
                       {"parentRef": {"name": "x"}, "controllerName": "other/controller", "conditions": []}]}
    res = run([gatewayclass(), route(parents=[{"name": "missing"}], status=old)])
    assert all(s.kind != "HTTPRoute" for s in res.statuses)  # not ours: released
    assert [(r.key, r.status) for r in res.released] == [(("HTTPRoute", "apps", "shop"), {"parents": []})]
    assert type(res.released[0]) is Released
    clean = run([gatewayclass(), route(parents=[{"name": "missing"}])])
    assert all(s.kind != "HTTPRoute" for s in clean.statuses) and not clean.released


# -- backends ----------------------------------------------------------------------------------
def test_backend_errors_and_mixed_shares() -> None:
    mixed = one([{"backendRefs": [{"name": "api", "port": 8080, "weight": 3}, {"name": "gone", "port": 80, "weight": 1}]}])
    r = routes(mixed)[0]
    assert r["clusters"] == [{"clusterId": "svc-apps.api.8080", "weight": 3}, {"clusterId": "invalid-backend", "weight": 1}]
    assert {"id": "invalid-backend", "destinations": []} in config(mixed)["clusters"]
    assert parent_cond(mixed, "ResolvedRefs")["reason"] == "BackendNotFound"
    assert parent_cond(mixed, "Accepted")["status"] == "True"
    kind = one([{"backendRefs": [{"name": "api", "port": 8080, "kind": "Bucket", "group": "example.com"}]}])
    assert routes(kind)[0]["directResponse"]["status"] == 500
    assert parent_cond(kind, "ResolvedRefs")["reason"] == "InvalidKind"
    cross = one([{"backendRefs": [{"name": "api", "namespace": "other", "port": 8080}]}])
    assert parent_cond(cross, "ResolvedRefs")["reason"] == "RefNotPermitted"
    granted = run(base_objects() + [service(ns="other"), endpoints(ns="other"), grant("other", "HTTPRoute", "apps", "Service"),
                                    route(rules=[{"backendRefs": [{"name": "api", "namespace": "other", "port": 8080}]}])])
    assert routes(granted)[0]["clusterId"] == "svc-other.api.8080"


def test_weights_zero_and_no_backends() -> None:
    zero = one([{"backendRefs": [{"name": "api", "port": 8080, "weight": 0}]}])
    assert routes(zero)[0]["directResponse"]["status"] == 500
    assert parent_cond(zero, "ResolvedRefs")["status"] == "True"
    some = one([{"backendRefs": [{"name": "api", "port": 8080, "weight": 0}, {"name": "api", "port": 8080}]}])
    assert routes(some)[0]["clusterId"] == "svc-apps.api.8080"
    none = one([{}])
    assert routes(zero)[0]["directResponse"] == routes(none)[0]["directResponse"] == {"status": 500, "body": "NoBackends"}


def test_no_ready_endpoints_is_empty_cluster() -> None:
    res = run([gatewayclass(), gateway(), service(), endpoints(ready=False), route()])
    assert config(res)["clusters"] == [{"id": "svc-apps.api.8080", "destinations": []}]


# -- filters -----------------------------------------------------------------------------------
def test_header_modifiers_to_transforms() -> None:
    res = one([rule(filters=[
        {"type": "RequestHeaderModifier", "requestHeaderModifier": {
            "set": [{"name": "X-Set", "value": "1"}], "add": [{"name": "X-Add", "value": "2"}], "remove": ["X-Rm"]}},
        {"type": "ResponseHeaderModifier", "responseHeaderModifier": {"add": [{"name": "Set-Cookie", "value": "a=b"}]}},
    ])])
    assert routes(res)[0]["transforms"] == [
        {"kind": "RequestHeaderSet", "parameters": {"name": "X-Set", "value": "1"}},
        {"kind": "RequestHeaderAppend", "parameters": {"name": "X-Add", "value": "2"}},
        {"kind": "RequestHeaderRemove", "parameters": {"name": "X-Rm"}},
        {"kind": "ResponseHeaderAppend", "parameters": {"name": "Set-Cookie", "value": "a=b"}},
    ]


def test_url_rewrite() -> None:
    res = one([rule(matches=[{"path": {"value": "/foo"}}], filters=[{"type": "URLRewrite", "urlRewrite": {
        "hostname": "internal", "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}}]),
        rule(matches=[{"path": {"value": "/full"}}], filters=[{"type": "URLRewrite", "urlRewrite": {
            "path": {"type": "ReplaceFullPath", "replaceFullPath": "/x"}}}])])
    foo = route_by_id(res, "httproute/apps/shop/r0m0")
    assert foo["transforms"][0] == {"kind": "HostSet", "parameters": {"host": "internal"}}
    assert foo["transforms"][1]["kind"] == "PathRegexReplace"
    assert route_by_id(res, "httproute/apps/shop/r1m0")["transforms"] == [{"kind": "PathSet", "parameters": {"path": "/x"}}]
    bad = one([rule(matches=[{"path": {"type": "Exact", "value": "/foo"}}], filters=[{"type": "URLRewrite", "urlRewrite": {
        "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}}])])
    assert routes(bad)[0]["directResponse"]["status"] == 500
    assert parent_cond(bad, "Accepted")["reason"] == "UnsupportedValue"


def test_redirects() -> None:
    res = one([
        {"matches": [{"path": {"value": "/a"}}], "filters": [{"type": "RequestRedirect", "requestRedirect": {
            "hostname": "new.example.com", "statusCode": 301, "scheme": "https", "port": 443}}]},
        {"matches": [{"path": {"value": "/b"}}], "filters": [{"type": "RequestRedirect", "requestRedirect": {
            "hostname": "x", "path": {"type": "ReplaceFullPath", "replaceFullPath": "/y"}}}]},
        {"matches": [{"path": {"value": "/c"}}], "filters": [{"type": "RequestRedirect", "requestRedirect": {
            "hostname": "x", "port": 8443}}]},
    ])
    assert route_by_id(res, "httproute/apps/shop/r0m0")["redirect"] == {"statusCode": 301, "scheme": "https",
                                                                       "host": "new.example.com"}
    # no scheme and one listener port 80 (http): the default port is left out
    assert route_by_id(res, "httproute/apps/shop/r1m0")["redirect"] == {"statusCode": 302, "host": "x", "path": "/y"}
    assert route_by_id(res, "httproute/apps/shop/r2m0")["redirect"] == {"statusCode": 302, "host": "x", "port": 8443}


def test_redirect_listener_port_when_not_default() -> None:
    gw = gateway(listeners=[listener("h", 8080)])
    r = route(rules=[{"filters": [{"type": "RequestRedirect", "requestRedirect": {"hostname": "x"}}]}])
    res = run([gatewayclass(), gw, r])
    assert routes(res)[0]["redirect"] == {"statusCode": 302, "host": "x", "port": 8080}


def test_redirect_without_hostname_per_route_hostname() -> None:
    redirect = [{"filters": [{"type": "RequestRedirect", "requestRedirect": {"scheme": "https"}}]}]
    res = one(redirect, hostnames=["a.com", "*.b.com"])
    by_host = {r["match"]["host"]: r for r in routes(res)}
    assert by_host["a.com"]["redirect"] == {"statusCode": 302, "scheme": "https", "host": "a.com"}
    assert by_host["*.b.com"]["directResponse"]["status"] == 500
    assert parent_cond(res, "Accepted")["reason"] == "UnsupportedValue"
    nohost = one(redirect)
    assert routes(nohost)[0]["directResponse"]["status"] == 500


@pytest.mark.parametrize("filters", [
    [{"type": "RequestRedirect", "requestRedirect": {"hostname": "x", "statusCode": 307}}],
    [{"type": "RequestRedirect", "requestRedirect": {"hostname": "x", "path": {
        "type": "ReplacePrefixMatch", "replacePrefixMatch": "/y"}}}],
    [{"type": "ExtensionRef", "extensionRef": {"group": "x", "kind": "y", "name": "z"}}],
    [{"type": "RequestMirror", "requestMirror": {"backendRef": BACKEND[0]}}] * 2,
])
def test_unsupported_filters_answer_500_for_their_rule_only(filters: list[dict[str, Any]]) -> None:
    res = one([rule(matches=[{"path": {"value": "/bad"}}], filters=filters), rule()])
    bad = route_by_id(res, "httproute/apps/shop/r0m0")
    assert bad["directResponse"]["status"] == 500
    assert bad["directResponse"]["body"] == "UnsupportedValue"
    assert bad["match"] == {"path": "/bad", "pathKind": "Prefix"}
    assert route_by_id(res, "httproute/apps/shop/r1m0")["clusterId"] == "svc-apps.api.8080"
    assert parent_cond(res, "Accepted")["reason"] == "UnsupportedValue"


def test_header_regex_is_degraded_and_never_shadows() -> None:
    res = one([rule(matches=[{"path": {"value": "/x"}, "headers": [{"name": "a", "type": "RegularExpression",
                                                                      "value": "b.*"}]}]),
               rule(matches=[{"path": {"value": "/x"}}])])
    ids = [r["id"] for r in routes(res)]
    assert ids == ["httproute/apps/shop/r1m0", "httproute/apps/shop/r0m0"]
    assert route_by_id(res, "httproute/apps/shop/r0m0")["directResponse"]["status"] == 500
    assert parent_cond(res, "Accepted")["reason"] == "UnsupportedValue"


def test_bad_regexes_rejected() -> None:
    res = one([rule(matches=[{"path": {"type": "RegularExpression", "value": "(a+)+"}}])])
    assert routes(res)[0]["directResponse"]["status"] == 500
    res = one([rule(matches=[{"queryParams": [{"name": "q", "type": "RegularExpression", "value": "("}]}])])
    assert routes(res)[0]["directResponse"]["status"] == 500


def test_mirror() -> None:
    objs = [service("shadow"), endpoints("shadow", addresses=("10.9.9.9",))]
    res = one([rule(filters=[{"type": "RequestMirror", "requestMirror": {
        "backendRef": {"name": "shadow", "port": 8080}, "fraction": {"numerator": 1, "denominator": 4}}}])], *objs)
    assert routes(res)[0]["mirror"] == {"clusterId": "svc-apps.shadow.8080", "percent": 25.0}
    default = one([rule(filters=[{"type": "RequestMirror", "requestMirror": {
        "backendRef": {"name": "shadow", "port": 8080}}}])], *objs)
    assert routes(default)[0]["mirror"]["percent"] == 100.0
    cross = one([rule(filters=[{"type": "RequestMirror", "requestMirror": {
        "backendRef": {"name": "shadow", "namespace": "x", "port": 8080}}}])])
    assert "mirror" not in routes(cross)[0]
    assert parent_cond(cross, "ResolvedRefs")["reason"] == "RefNotPermitted"


def test_timeouts() -> None:
    res = one([rule(timeouts={"request": "10s", "backendRequest": "500ms"})])
    r = routes(res)[0]
    assert r["limits"] == {"requestTimeout": "00:00:10"}
    assert r["clusterId"].startswith("svc-apps.api.8080-")
    cluster = next(c for c in config(res)["clusters"] if c["id"] == r["clusterId"])
    assert cluster["httpClient"] == {"requestTimeout": "00:00:00.500"}
    zero = one([rule(timeouts={"request": "0s", "backendRequest": "0s"})])
    assert "limits" not in routes(zero)[0] and routes(zero)[0]["clusterId"] == "svc-apps.api.8080"
    bad = one([rule(timeouts={"request": "ten seconds"})])
    assert routes(bad)[0]["directResponse"]["status"] == 500
    assert parent_cond(bad, "Accepted")["reason"] == "UnsupportedValue"
    longer = one([rule(timeouts={"request": "1s", "backendRequest": "2s"})])
    assert parent_cond(longer, "Accepted")["reason"] == "UnsupportedValue"


def test_cross_namespace_parent_not_allowed() -> None:
    res = run([gatewayclass(), gateway(), route(ns="team", parents=[{"name": "web", "namespace": "apps"}])])
    entry = status_of(res, "HTTPRoute", "team", "shop").status["parents"][0]
    assert entry["parentRef"] == {"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "apps",
                                  "name": "web"}
    assert parent_cond(res, "Accepted", ns="team")["reason"] == "NotAllowedByListeners"
    assert routes(res) == []


def test_malformed_rule_or_match_never_becomes_a_normal_catch_all() -> None:
    res = one(["junk", rule(matches=[{"path": {"value": "/ok"}}, 7])])
    junk = route_by_id(res, "httproute/apps/shop/r0m0")
    assert junk["directResponse"]["status"] == 500
    assert junk["match"] == {}
    # degraded routes come last, after every normal route
    assert [r["id"] for r in routes(res)][-2:] == ["httproute/apps/shop/r0m0", "httproute/apps/shop/r1m1"]
    assert route_by_id(res, "httproute/apps/shop/r1m0")["directResponse"]["status"] == 500
    assert parent_cond(res, "Accepted")["reason"] == "UnsupportedValue"


def test_replace_prefix_match_per_match() -> None:
    res = one([rule(matches=[{"path": {"value": "/a"}}, {"path": {"value": "/b/"}}], filters=[
        {"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/x"}}}])])
    a = route_by_id(res, "httproute/apps/shop/r0m0")["transforms"]
    b = route_by_id(res, "httproute/apps/shop/r0m1")["transforms"]
    assert a == [{"kind": "PathRegexReplace", "parameters": {"pattern": "^/a", "replacement": "/x"}}]
    assert b == [{"kind": "PathRegexReplace", "parameters": {"pattern": "^/b", "replacement": "/x"}}]
    default = one([rule(filters=[{"type": "URLRewrite", "urlRewrite": {"path": {
        "type": "ReplacePrefixMatch", "replacePrefixMatch": "/x"}}}])])
    assert _apply(routes(default)[0]["transforms"], "/y") == "/x/y"


def test_regex_escape_minimal() -> None:
    from titanium_gateway.render.httproute import regex_escape

    assert regex_escape("/strip-prefix/a.b(c)") == "/strip-prefix/a\\.b\\(c\\)"
    assert re.fullmatch(regex_escape("/x+y[1]{2}$^|?*\\"), "/x+y[1]{2}$^|?*\\")


def test_two_parents_status_in_spec_order_and_union_of_hosts() -> None:
    a = gateway("a", listeners=[listener("http", 80, hostname="a.example.com")])
    b = gateway("b", listeners=[listener("http", 80, hostname="b.example.com")])
    closed = gateway("c", listeners=[listener("http", 80, hostname="c.example.com")])
    r = route(parents=[{"name": "b"}, {"name": "a", "sectionName": "http"}, {"name": "c", "sectionName": "nope"}],
              hostnames=["a.example.com", "b.example.com", "c.example.com"])
    res = run([gatewayclass(), a, b, closed, service(), endpoints(), r])
    parents = status_of(res, "HTTPRoute", "apps", "shop").status["parents"]
    assert [(p["parentRef"]["name"], p["conditions"][0]["reason"]) for p in parents] == [
        ("b", "Accepted"), ("a", "Accepted"), ("c", "NoMatchingParent")]
    assert [r["match"]["host"] for r in routes(res)] == ["a.example.com", "b.example.com"]


def test_old_entry_for_dropped_parent_is_not_listed() -> None:
    old = {"parents": [
        {"parentRef": {"name": "gone"}, "controllerName": CONTROLLER, "conditions": []},
        {"parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "web"},
         "controllerName": CONTROLLER,
         "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "lastTransitionTime": "old"}]}]}
    res = run(base_objects() + [route(status=old)], now="new")
    parents = status_of(res, "HTTPRoute", "apps", "shop").status["parents"]
    assert [p["parentRef"]["name"] for p in parents] == ["web"]
    assert parent_cond(res, "Accepted")["lastTransitionTime"] == "old"
    assert parent_cond(res, "ResolvedRefs")["lastTransitionTime"] == "new"


def test_weights_above_gateway_api_maximum_rejected() -> None:
    res = one([{"backendRefs": [{"name": "api", "port": 8080, "weight": 1_000_001}]}])
    assert routes(res)[0]["directResponse"]["status"] == 500
    assert "weight" in parent_cond(res, "Accepted")["message"]
    ok = one([{"backendRefs": [{"name": "api", "port": 8080, "weight": 1_000_000}]}])
    assert routes(ok)[0]["clusterId"] == "svc-apps.api.8080"


@pytest.mark.parametrize("hostname", ["a\x00b.example.com", " ", "bücher.example", "a..b", "host:80", "*", 5])
def test_invalid_route_hostnames_reject_the_route(hostname: Any) -> None:
    res = one([rule()], hostnames=["ok.example.com", hostname])
    assert routes(res) == []
    accepted = parent_cond(res, "Accepted")
    assert accepted["reason"] == "UnsupportedValue" and "spec.hostnames[1]" in accepted["message"]
    # not Accepted: the listener does not count it (v1.6 ListenerStatus.attachedRoutes)
    assert listener_status(res, "http")["attachedRoutes"] == 0


def test_upper_case_hostnames_are_lowered() -> None:
    res = one([rule()], hostnames=["Shop.Example.COM"])
    assert routes(res)[0]["match"]["host"] == "shop.example.com"


def test_empty_replace_prefix_match_strips_the_prefix() -> None:
    res = one([rule(matches=[{"path": {"value": "/foo"}}], filters=[{"type": "URLRewrite", "urlRewrite": {
        "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": ""}}}])])
    transforms = routes(res)[0]["transforms"]
    assert _apply(transforms, "/foo/bar") == "/bar"
    assert _apply(transforms, "/foo") == "/"


def test_attached_routes_count_only_routes_accepted_on_the_listener() -> None:
    """v1.6 ListenerStatus.attachedRoutes: set on every listener, even one not accepted, and
    counting only the routes Accepted on it (a hostname must intersect)."""
    gw = gateway(listeners=[listener("h", 80, hostname="a.example.com"),
                            listener("bad", 81, "HTTP"),  # PortUnavailable
                            listener("tcp", 82, "TCP")])
    res = run([gatewayclass(), gw, service(), endpoints(), route(hostnames=["other.example.com"])])
    assert parent_cond(res, "Accepted")["reason"] == "NoMatchingListenerHostname"
    assert [listener_status(res, name)["attachedRoutes"] for name in ("h", "bad", "tcp")] == [0, 0, 0]
    assert routes(res) == []
    ok = run([gatewayclass(), gw, service(), endpoints(), route(hostnames=["a.example.com"])])
    assert parent_cond(ok, "Accepted")["reason"] == "Accepted"
    assert [listener_status(ok, name)["attachedRoutes"] for name in ("h", "bad", "tcp")] == [1, 0, 0]


def test_messages_stay_bounded_and_config_linear() -> None:
    def invalid(n: int) -> list[dict[str, Any]]:
        return [{"headers": [{"name": f"x-{i}", "type": "RegularExpression", "value": ".*"}]} for i in range(n)]

    small = one([{"matches": invalid(50), "backendRefs": BACKEND}])
    big = one([{"matches": invalid(600), "backendRefs": BACKEND}])
    msg = parent_cond(big, "Accepted")["message"]
    assert len(msg) < 32768 and msg.endswith("and 595 more")
    assert len(big.config) + sum(len(b) for _, b in big.parts) < 20 * (len(small.config) + 1)


def test_deeply_nested_values_never_raise() -> None:
    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    res = one([{"matches": [{"path": {"type": "Exact", "value": deep}}], "backendRefs": BACKEND,
                "filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": deep}}]}])
    assert "path a list does not start with /" in parent_cond(res, "Accepted")["message"]


def test_polynomial_regexes_rejected() -> None:
    assert "unbounded" in check_regex(".*a.*a.*a.*a.*!")
    assert check_regex("^/api/.*/v[0-9]+/.*$") == ""


@pytest.mark.parametrize("filters", [
    [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "x", "value": "a\r\nX-Injected: 1"}]}}],
    [{"type": "ResponseHeaderModifier", "responseHeaderModifier": {"add": [{"name": "x\n", "value": "a"}]}}],
    [{"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplaceFullPath", "replaceFullPath": "/a\r\nb"}}}],
    [{"type": "RequestRedirect", "requestRedirect": {"hostname": "x\x00y"}}],
])
def test_control_characters_in_forwarded_values_rejected(filters: list[dict[str, Any]]) -> None:
    res = one([rule(filters=filters)])
    assert routes(res)[0]["directResponse"]["status"] == 500
    assert "control character" in parent_cond(res, "Accepted")["message"]
    assert b"Injected" not in res.config


def test_a_backend_reference_resolved_once_per_render_keeps_bool_and_int_ports_apart() -> None:
    """backendRefs are resolved once per distinct reference in a render; ``port: true`` equals
    ``port: 1`` in Python, but only the int is a port."""
    svc = service()
    svc["spec"]["ports"].append({"name": "one", "port": 1, "targetPort": 1})
    good = route("good", rules=[{"backendRefs": [{"name": "api", "port": 1}]}])
    bad = route("bad", rules=[{"backendRefs": [{"name": "api", "port": True}]}])
    again = route("again", rules=[{"backendRefs": [{"name": "api", "port": 1}]}])
    objs = [gatewayclass(), gateway(), svc, endpoints(), good, bad, again]
    result = run(objs)
    assert "clusterId" in route_by_id(result, "httproute/apps/good/r0m0")
    assert route_by_id(result, "httproute/apps/bad/r0m0")["directResponse"]["status"] == 500
    assert route_by_id(result, "httproute/apps/again/r0m0")["clusterId"] == route_by_id(
        result, "httproute/apps/good/r0m0")["clusterId"]


def test_rules_with_the_same_backends_and_filters_share_their_text_and_others_do_not() -> None:
    same = {"filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "x", "value": "1"}]}}],
            "backendRefs": [{"name": "api", "port": 8080, "weight": 3}]}
    rules = [{"matches": [{"path": {"type": "Exact", "value": "/a"}}], **same},
             {"matches": [{"path": {"type": "Exact", "value": "/b"}}], **same},
             {"matches": [{"path": {"type": "Exact", "value": "/c"}}],
              "backendRefs": [{"name": "api", "port": 8080, "weight": 3}]}]
    result = run([*base_objects(), route(rules=rules)])
    a, b, c = (route_by_id(result, f"httproute/apps/shop/r{i}m0") for i in range(3))
    assert a["transforms"] == b["transforms"] == [{"kind": "RequestHeaderSet", "parameters": {"name": "x", "value": "1"}}]
    assert a["clusterId"] == b["clusterId"] == c["clusterId"]
    assert "transforms" not in c
    assert (a["match"]["path"], b["match"]["path"], c["match"]["path"]) == ("/a", "/b", "/c")


def test_lists_shared_between_rules_and_routes_render_as_equal_copies_do() -> None:
    """The informer caches store equal values once, so rules and routes often hold the very same
    backendRefs/filters/match objects; what a rule makes of them is worked out once per render.
    The output must be that of unshared, equal copies, whatever the lists hold (problems too)."""
    import copy

    refs = [{"name": "api", "port": 8080, "weight": 2}, {"name": "missing", "port": 80},
            {"name": "api", "port": 8080, "weight": True}, {"name": "api", "port": True}]
    good = [{"name": "api", "port": 8080}]
    filters = [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "x", "value": "1"}],
                                                                           "remove": ["bad\nname"]}}]
    match = {"path": {"type": "PathPrefix", "value": "/p"}, "headers": [{"name": "h", "value": "v"}]}
    mirror = {"type": "RequestMirror", "requestMirror": {"backendRef": {"name": "mirror", "port": 8080}}}
    rules = [{"matches": [match], "filters": filters, "backendRefs": refs},
             {"matches": [match, {"path": {"type": "Exact", "value": "/x"}}], "filters": filters, "backendRefs": refs},
             {"matches": [match], "filters": [mirror], "backendRefs": good},
             {"matches": [match], "backendRefs": good, "timeouts": {"backendRequest": "1s"}},
             {"matches": [match], "backendRefs": good},
             {"matches": [match], "filters": [{"type": ["RequestHeaderModifier"]}, *filters], "backendRefs": good}]
    objs = [*base_objects(), service("mirror"), endpoints("mirror", addresses=("10.0.0.9",)),
            route("one", rules=rules), route("two", rules=rules),
            route("three", ns="other", rules=rules, parents=[{"name": "web", "namespace": "apps"}])]
    shared, unshared = run(objs, now="2026-01-01T00:00:00Z"), run(copy.deepcopy(objs), now="2026-01-01T00:00:00Z")
    assert shared.config == unshared.config and shared.parts == unshared.parts
    assert [(s.key, dict(s.status)) for s in shared.statuses] == [(s.key, dict(s.status)) for s in unshared.statuses]
    assert route_by_id(shared, "httproute/apps/one/r0m0")["directResponse"]["status"] == 500  # weight True
    assert "clusterId" in route_by_id(shared, "httproute/apps/two/r3m0")
    assert route_by_id(shared, "httproute/apps/two/r3m0")["clusterId"] != route_by_id(
        shared, "httproute/apps/two/r4m0")["clusterId"]  # a backendRequest timeout: its own cluster
    assert any(c["id"] == "svc-apps.mirror.8080" for c in config(shared)["clusters"])  # the mirror's cluster, added with the rule's backends


def test_what_a_filter_makes_reaches_every_route_of_its_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new filter branch in httproute/filters.py (here: every header modifier also makes a
    policy) renders without touching anything else: the rule's behavior is the behavior its
    filters make, with only the action and limits of the rule's backends and timeouts set."""
    import dataclasses

    from titanium_gateway.render.httproute import filters as filters_module
    from titanium_gateway.twp.model import MaxRequestBodySize

    real = filters_module.rule_filters

    def with_policy(*args: Any) -> Any:
        out = real(*args)
        return dataclasses.replace(out, behavior=out.behavior.but(policies=(MaxRequestBodySize(1024),)))

    monkeypatch.setattr(filters_module, "rule_filters", with_policy)
    header = {"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "x", "value": "1"}]}}
    res = one([rule(matches=[{"path": {"type": "PathPrefix", "value": "/a"}}, {"method": "GET"}], filters=[header])],
              hostnames=["a.example.com", "b.example.com"])
    rendered = routes(res)
    assert len(rendered) == 4
    for r in rendered:
        assert r["policies"] == [{"kind": "MaxRequestBodySize", "parameters": {"bytes": "1024"}}]
