"""Route matching, precedence and outcomes of the contract library (no sockets)."""

from __future__ import annotations

import pytest

from tests.dataplane.docs import config, route
from tests.dataplane.rules import Row, covers, rows
from titanium_gateway.contract import (
    ForwardTo,
    NotFound,
    RedirectTo,
    Request,
    Respond,
    checks,
    decide,
    select_route,
)
from titanium_gateway.twp.model import WeightedCluster


def rq(target: str = "/", host: str = "shop.example.com", method: str = "GET", headers=(), **kw) -> Request:
    return Request.from_target(method, target, [("Host", host), *headers], **kw)


# (rule, name, match, request, matches?)
MATCH_ROWS = [
    Row("match.host", "exact", {"host": "shop.example.com"}, rq(host="shop.example.com"), True),
    Row("match.host", "other host", {"host": "shop.example.com"}, rq(host="api.example.com"), False),
    Row("match.host", "case-insensitive", {"host": "shop.example.com"}, rq(host="SHOP.Example.COM"), True),
    Row("match.host", "port ignored", {"host": "shop.example.com"}, rq(host="shop.example.com:8080"), True),
    Row("match.host", "no Host header", {"host": "shop.example.com"}, Request("GET", "", "/"), False),
    Row("match.host-wildcard", "one label", {"host": "*.example.com"}, rq(host="a.example.com"), True),
    Row("match.host-wildcard", "not the apex", {"host": "*.example.com"}, rq(host="example.com"), False),
    Row("match.host-wildcard", "not a suffix of a label", {"host": "*.example.com"}, rq(host="badexample.com"), False),
    Row("match.host-wildcard", "with port, upper case", {"host": "*.example.com"}, rq(host="A.EXAMPLE.com:80"), True),
    Row("d.wildcard", "two labels", {"host": "*.example.com"}, rq(host="a.b.example.com"), True),
    Row("match.ports", "the listener's port", {"ports": [8080]}, rq(port=8080), True),
    Row("match.ports", "another listener's port", {"ports": [8080]}, rq(port=8443), False),
    Row("match.ports", "a listener unknown to the caller is not checked", {"ports": [8080]}, rq(), True),
    Row("routes.global", "no ports: every listener", {}, rq(port=8443), True),
    Row("match.host-absent", "any host", {}, rq(host="whatever.test"), True),
    Row("match.host-absent", "even none", {}, Request("GET", "", "/x"), True),
    Row("match.path-absent", "any path", {"host": "shop.example.com"}, rq("/deep/path?x=1"), True),
    Row("match.path-exact", "equal", {"path": "/foo", "pathKind": "Exact"}, rq("/foo"), True),
    Row("match.path-exact", "trailing slash differs", {"path": "/foo", "pathKind": "Exact"}, rq("/foo/"), False),
    Row("match.path-exact", "longer", {"path": "/foo", "pathKind": "Exact"}, rq("/foo/bar"), False),
    Row("match.path-exact", "case-sensitive", {"path": "/foo", "pathKind": "Exact"}, rq("/FOO"), False),
    Row("match.path-prefix", "a relative path (an invalid Ingress path's route) never matches",
        {"path": "relative", "pathKind": "Prefix"}, rq("/relative"), False),
    Row("match.path-prefix", "itself", {"path": "/foo", "pathKind": "Prefix"}, rq("/foo"), True),
    Row("match.path-prefix", "with slash", {"path": "/foo", "pathKind": "Prefix"}, rq("/foo/"), True),
    Row("match.path-prefix", "below", {"path": "/foo", "pathKind": "Prefix"}, rq("/foo/bar"), True),
    Row("match.path-prefix", "not /foobar", {"path": "/foo", "pathKind": "Prefix"}, rq("/foobar"), False),
    Row("match.path-prefix", "not a parent", {"path": "/foo/bar", "pathKind": "Prefix"}, rq("/foo"), False),
    Row("match.path-prefix", "/ matches all", {"path": "/", "pathKind": "Prefix"}, rq("/anything/at/all"), True),
    Row("match.path-prefix", "a trailing / of the prefix is a boundary", {"path": "/foo/", "pathKind": "Prefix"},
        rq("/foo/x"), True),
    Row("match.path-regex", "full match", {"path": "/v[0-9]+/items", "pathKind": "Regex"}, rq("/v2/items"), True),
    Row("match.path-regex", "not a partial match", {"path": "/v[0-9]+", "pathKind": "Regex"}, rq("/v2/items"), False),
    Row("match.path-regex", ".NET lookahead", {"path": "/(?!admin)[a-z]+", "pathKind": "Regex"}, rq("/shop"), True),
    Row("match.path-regex", ".NET lookahead rejects", {"path": "/(?!admin)[a-z]+", "pathKind": "Regex"},
        rq("/admin"), False),
    Row("match.path-regex", ".NET named group", {"path": "/(?<ver>v[0-9])/x", "pathKind": "Regex"}, rq("/v1/x"), True),
    Row("match.path-no-query", "exact ignores the query", {"path": "/foo", "pathKind": "Exact"}, rq("/foo?a=b"), True),
    Row("match.path-no-query", "regex does not see it", {"path": "/foo", "pathKind": "Regex"}, rq("/foo?x=1"), True),
    Row("match.path-no-query", "prefix does not see it", {"path": "/foo", "pathKind": "Prefix"},
        rq("/foobar?/foo"), False),
    Row("match.method", "equal", {"method": "POST"}, rq(method="POST"), True),
    Row("match.method", "other", {"method": "POST"}, rq(method="GET"), False),
    Row("match.headers", "present and equal", {"headers": {"x-env": "canary"}}, rq(headers=[("x-env", "canary")]),
        True),
    Row("match.headers", "absent", {"headers": {"x-env": "canary"}}, rq(), False),
    Row("match.headers", "other value", {"headers": {"x-env": "canary"}}, rq(headers=[("x-env", "prod")]), False),
    Row("match.headers", "all must match", {"headers": {"x-a": "1", "x-b": "2"}}, rq(headers=[("x-a", "1")]), False),
    Row("match.headers", "all present", {"headers": {"x-a": "1", "x-b": "2"}},
        rq(headers=[("x-b", "2"), ("x-a", "1")]), True),
    Row("b.header-case", "name case-insensitive", {"headers": {"x-env": "canary"}},
        rq(headers=[("X-ENV", "canary")]), True),
    Row("b.header-case", "value case-insensitive", {"headers": {"x-env": "Canary"}},
        rq(headers=[("x-env", "CANARY")]), True),
    Row("b.header-case", "config name upper case", {"headers": {"X-Env": "canary"}},
        rq(headers=[("x-env", "canary")]), True),
    Row("match.query", "present and equal", {"query": {"q": "v"}}, rq("/?q=v"), True),
    Row("match.query", "case-sensitive value", {"query": {"q": "v"}}, rq("/?q=V"), False),
    Row("match.query", "case-sensitive name", {"query": {"q": "v"}}, rq("/?Q=v"), False),
    Row("match.query", "absent", {"query": {"q": "v"}}, rq("/?other=v"), False),
    Row("match.query", "decoded value", {"query": {"q": "a b"}}, rq("/?q=a%20b"), True),
    Row("match.query", "the first of repeated values", {"query": {"q": "1"}}, rq("/?q=1&q=2"), True),
    Row("match.query", "all must match", {"query": {"a": "1", "b": "2"}}, rq("/?a=1"), False),
    Row("match.queryRegex", "full match", {"queryRegex": {"id": "^[0-9]+$"}}, rq("/?id=123"), True),
    Row("match.queryRegex", "no match", {"queryRegex": {"id": "^[0-9]+$"}}, rq("/?id=12a"), False),
    Row("match.queryRegex", "full, not partial", {"queryRegex": {"id": "[0-9]+"}}, rq("/?id=12a"), False),
    Row("match.queryRegex", "absent", {"queryRegex": {"id": ".*"}}, rq("/"), False),
    Row("d.default-backend", "empty match takes anything", {}, rq("/x/y?z=1", host="any.test", method="DELETE"),
        True),
]


@rows(*MATCH_ROWS)
def test_match(row: Row) -> None:
    match, request, expected = row.args
    cfg = config([route("r", 1, match)])
    winner, _ = select_route(cfg, request)
    assert (winner is not None) is expected


@rows(*MATCH_ROWS)
def test_checks_explain_the_match(row: Row) -> None:
    """``checks`` (for explaining a choice) agrees with the matching, condition by condition."""
    match, request, expected = row.args
    r = config([route("r", 1, match)]).routes[0]
    cs = checks(r, request)
    assert all(c.ok for c in cs) is expected
    assert len(cs) == sum(1 for k in match if k != "pathKind") + sum(
        len(match[k]) - 1 for k in ("headers", "query", "queryRegex") if k in match)


@covers("match.path-no-query")
def test_request_from_target_splits_the_query() -> None:
    r = Request.from_target("GET", "/a/b?c=d&e", [("Host", "h")])
    assert (r.path, r.query) == ("/a/b", "c=d&e")


def test_repeated_header_lines_compare_as_their_join() -> None:
    cfg = config([route("r", 1, {"headers": {"x-a": "1, 2"}})])
    assert select_route(cfg, rq(headers=[("x-a", "1"), ("x-a", "2")])).winner is not None


PRECEDENCE_ROWS = [
    Row("routes.first-match", "lower order wins", [("a", 2, {}), ("b", 1, {})], rq(), "b", ["a"]),
    Row("routes.first-match", "listed out of order", [("late", 9, {"path": "/", "pathKind": "Prefix"}),
                                                      ("early", 3, {"path": "/", "pathKind": "Prefix"})],
        rq("/x"), "early", ["late"]),
    Row("routes.first-match", "first match, not best match",
        [("prefix", 1, {"path": "/", "pathKind": "Prefix"}), ("exact", 2, {"path": "/x", "pathKind": "Exact"})],
        rq("/x"), "prefix", ["exact"]),
    Row("routes.first-match", "non-matching earlier route skipped",
        [("other", 1, {"host": "other.test"}), ("mine", 2, {"host": "shop.example.com"})], rq(), "mine", []),
    Row("d.precedence", "the render's order is followed as is",
        [("wild", 1, {"host": "*.example.com"}), ("exact", 2, {"host": "shop.example.com"})], rq(), "wild",
        ["exact"]),
    Row("routes.no-match", "none matches", [("a", 1, {"host": "other.test"})], rq(), None, []),
    Row("routes.global", "no listener in the match: the same answer on every port",
        [("a", 1, {"host": "shop.example.com"})], rq(host="shop.example.com:8443", scheme="https"), "a", []),
    Row("d.own-matches", "an unhonourable rule answers only its own match",
        [("bad", 1, {"path": "/bad", "pathKind": "Prefix"}), ("good", 2, {"path": "/", "pathKind": "Prefix"})],
        rq("/good"), "good", []),
]


@rows(*PRECEDENCE_ROWS)
def test_precedence(row: Row) -> None:
    specs, request, winner, losers = row.args
    routes = []
    for rid, order, match in specs:
        routes.append(route(rid, order, match, directResponse={"status": 500, "body": "no"}) if rid == "bad"
                      else route(rid, order, match))
    sel = select_route(config(routes), request)
    assert (sel.winner.id if sel.winner else None) == winner
    assert [r.id for r in sel.losers] == losers


@covers("routes.no-match", "b.404")
def test_no_route_is_404_and_never_forwarded() -> None:
    d = decide(config([route("a", 1, {"host": "a.test"})]), rq(host="b.test"))
    assert isinstance(d.outcome, NotFound) and d.outcome.status == 404
    assert d.route is None and d.route_id is None


OUTCOME_ROWS = [
    Row("action.clusterId", "one cluster", route(clusterId="be"), rq(), ForwardTo((WeightedCluster("be", 1),))),
    Row("action.clusters", "weighted", route(clusters=[{"clusterId": "be", "weight": 9},
                                                       {"clusterId": "c2", "weight": 1}]),
        rq(), ForwardTo((WeightedCluster("be", 9), WeightedCluster("c2", 1)))),
    Row("action.redirect", "301 with host", route(redirect={"statusCode": 301, "host": "new.test"}),
        rq("/p"), RedirectTo(301, "http://new.test/p")),
    Row("action.redirect", "302 scheme https", route(redirect={"statusCode": 302, "host": "s.test", "scheme": "https"}),
        rq("/p"), RedirectTo(302, "https://s.test/p")),
    Row("action.redirect", "scheme omitted keeps the listener's", route(redirect={"statusCode": 301, "host": "s.test"}),
        rq("/p", scheme="https"), RedirectTo(301, "https://s.test/p")),
    Row("redirect.port", "port given", route(redirect={"statusCode": 301, "host": "s.test", "port": 8443}),
        rq("/p"), RedirectTo(301, "http://s.test:8443/p")),
    Row("redirect.port", "no port: none, even when the request had one",
        route(redirect={"statusCode": 301, "host": "s.test"}), rq("/p", host="shop.example.com:8080"),
        RedirectTo(301, "http://s.test/p")),
    Row("d.host", "redirect port given is used even if default-looking",
        route(redirect={"statusCode": 301, "host": "s.test", "scheme": "https", "port": 443}), rq("/"),
        RedirectTo(301, "https://s.test:443/")),
    Row("redirect.path", "full replacement", route(redirect={"statusCode": 301, "host": "s.test", "path": "/new"}),
        rq("/old/deep"), RedirectTo(301, "http://s.test/new")),
    Row("redirect.path", "omitted: the request path", route(redirect={"statusCode": 301, "host": "s.test"}),
        rq("/old/deep"), RedirectTo(301, "http://s.test/old/deep")),
    Row("redirect.query", "query kept", route(redirect={"statusCode": 301, "host": "s.test", "path": "/n"}),
        rq("/o?a=1&b=2"), RedirectTo(301, "http://s.test/n?a=1&b=2")),
    Row("redirect.query", "no query: no ?", route(redirect={"statusCode": 302, "host": "s.test"}), rq("/o"),
        RedirectTo(302, "http://s.test/o")),
    Row("action.directResponse", "status and text body", route(directResponse={"status": 500, "body": "Unsupported"}),
        rq(), Respond(500, "Unsupported", "text/plain; charset=utf-8")),
]


@rows(*OUTCOME_ROWS)
def test_outcome(row: Row) -> None:
    r, request, expected = row.args
    from tests.dataplane.docs import cluster
    cfg = config([r], [cluster("be"), cluster("c2")])
    d = decide(cfg, request)
    assert d.route_id == r["id"]
    assert d.outcome == expected


@covers("route.transforms", "route.policies")
def test_decision_carries_transforms_policies_and_losers() -> None:
    cfg = config([
        route("a", 1, {"path": "/", "pathKind": "Prefix"},
              transforms=[{"kind": "RequestHeaderSet", "parameters": {"name": "x", "value": "1"}}],
              policies=[{"kind": "MaxRequestBodySize", "parameters": {"bytes": "10"}}]),
        route("b", 2, {}),
    ])
    d = decide(cfg, rq("/z"))
    assert d.route_id == "a" and [t.KIND for t in d.transforms] == ["RequestHeaderSet"]
    assert [p.KIND for p in d.policies] == ["MaxRequestBodySize"]
    assert [r.id for r in d.losers] == ["b"]
    assert [(c.field, c.ok) for c in d.why] == [("path", True)]


@pytest.mark.parametrize("host,expected", [("h.test:80", "h.test"), ("[::1]:8080", "::1"), ("H.Test", "h.test"),
                                           ("h.test:", "h.test")])
def test_hostname_of(host: str, expected: str) -> None:
    assert Request("GET", host).hostname == expected
