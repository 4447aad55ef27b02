"""Request and response transforms of the contract library (no sockets)."""

from __future__ import annotations

from tests.dataplane.docs import config, route
from tests.dataplane.rules import Row, covers, rows
from titanium_gateway.contract import apply_request_transforms, apply_response_transforms


def _transforms(specs: list[tuple[str, dict]]):
    return config([route(transforms=[{"kind": k, "parameters": p} for k, p in specs])]).routes[0].behavior.transforms


H = (("Host", "shop.example.com:8080"), ("X-A", "old"), ("Accept", "*/*"))

# (rule, name, transforms, path, headers, expected path, expected headers)
REQUEST_ROWS = [
    Row("t.RequestHeaderSet", "replaces", [("RequestHeaderSet", {"name": "x-a", "value": "new"})], "/", H, "/",
        (("Host", "shop.example.com:8080"), ("x-a", "new"), ("Accept", "*/*"))),
    Row("t.RequestHeaderSet", "adds", [("RequestHeaderSet", {"name": "X-New", "value": "v"})], "/", H, "/",
        (*H, ("X-New", "v"))),
    Row("t.RequestHeaderSet", "replaces every line", [("RequestHeaderSet", {"name": "x-a", "value": "n"})], "/",
        (("X-A", "1"), ("X-A", "2")), "/", (("x-a", "n"),)),
    Row("t.RequestHeaderAppend", "old, new on one line", [("RequestHeaderAppend", {"name": "x-a", "value": "new"})],
        "/", H, "/", (("Host", "shop.example.com:8080"), ("X-A", "old, new"), ("Accept", "*/*"))),
    Row("t.RequestHeaderAppend", "absent: added", [("RequestHeaderAppend", {"name": "x-b", "value": "v"})], "/", H,
        "/", (*H, ("x-b", "v"))),
    Row("d.append", "joined with comma and space", [("RequestHeaderAppend", {"name": "x", "value": "bar"})], "/",
        (("x", "foo"),), "/", (("x", "foo, bar"),)),
    Row("b.append", "repeated lines collapse into one", [("RequestHeaderAppend", {"name": "x", "value": "c"})], "/",
        (("x", "a"), ("y", "1"), ("X", "b")), "/", (("x", "a, b, c"), ("y", "1"))),
    Row("t.RequestHeaderRemove", "removes every line", [("RequestHeaderRemove", {"name": "x-a"})], "/",
        (*H, ("x-a", "again")), "/", (("Host", "shop.example.com:8080"), ("Accept", "*/*"))),
    Row("t.RequestHeaderRemove", "absent: nothing", [("RequestHeaderRemove", {"name": "x-none"})], "/", H, "/", H),
    Row("t.HostSet", "the upstream Host", [("HostSet", {"host": "internal.test"})], "/", H, "/",
        (("Host", "internal.test"), ("X-A", "old"), ("Accept", "*/*"))),
    Row("d.host", "Host (with port) unchanged without HostSet", [("RequestHeaderSet", {"name": "x", "value": "1"})],
        "/", H, "/", (*H, ("x", "1"))),
    Row("t.PathSet", "whole path", [("PathSet", {"path": "/new"})], "/old/deep", H, "/new", H),
    Row("t.PathRegexReplace", "first match only", [("PathRegexReplace", {"pattern": "a", "replacement": "X"})],
        "/aaa", H, "/Xaa", H),
    Row("t.PathRegexReplace", "no match: unchanged", [("PathRegexReplace", {"pattern": "^/z", "replacement": "/"})],
        "/a", H, "/a", H),
    Row("d.paths", "replacement is literal ($1 is text)", [("PathRegexReplace", {"pattern": "^/(a)",
                                                                                   "replacement": "/$1"})],
        "/a/b", H, "/$1/b", H),
    Row("d.paths", ".NET lookahead", [("PathRegexReplace", {"pattern": "^/foo(?=/|$)", "replacement": "/bar"})],
        "/foo/x", H, "/bar/x", H),
    Row("d.paths", "lookahead does not match /foobar", [("PathRegexReplace", {"pattern": "^/foo(?=/|$)",
                                                                             "replacement": "/bar"})],
        "/foobar", H, "/foobar", H),
    Row("d.paths", "an empty result becomes /", [("PathRegexReplace", {"pattern": "^/foo", "replacement": ""})],
        "/foo", H, "/", H),
    Row("t.PathPrefix", "strip on a boundary", [("PathRemovePrefix", {"prefix": "/api"})], "/api/v1", H, "/v1", H),
    Row("t.PathPrefix", "strip everything: /", [("PathRemovePrefix", {"prefix": "/api"})], "/api", H, "/", H),
    Row("t.PathPrefix", "not /apix", [("PathRemovePrefix", {"prefix": "/api"})], "/apix", H, "/apix", H),
    Row("t.PathPrefix", "prepend", [("PathPrefix", {"prefix": "/v2"})], "/items", H, "/v2/items", H),
    Row("route.transforms", "in list order", [("PathSet", {"path": "/a"}), ("PathPrefix", {"prefix": "/b"}),
                                              ("RequestHeaderSet", {"name": "x", "value": "1"}),
                                              ("RequestHeaderAppend", {"name": "x", "value": "2"})],
        "/z", (), "/b/a", (("x", "1, 2"),)),
    Row("route.transforms", "response transforms leave the request alone",
        [("ResponseHeaderSet", {"name": "x-a", "value": "r"})], "/", H, "/", H),
]


@rows(*REQUEST_ROWS)
def test_request_transforms(row: Row) -> None:
    specs, path, headers, want_path, want_headers = row.args
    assert apply_request_transforms(_transforms(specs), path, headers) == (want_path, want_headers)


R = (("Content-Type", "text/plain"), ("Set-Cookie", "a=1"), ("X-R", "one"))

RESPONSE_ROWS = [
    Row("t.Response", "set", [("ResponseHeaderSet", {"name": "x-r", "value": "two"})], R,
        (("Content-Type", "text/plain"), ("Set-Cookie", "a=1"), ("x-r", "two"))),
    Row("t.Response", "append joins", [("ResponseHeaderAppend", {"name": "x-r", "value": "two"})], R,
        (("Content-Type", "text/plain"), ("Set-Cookie", "a=1"), ("X-R", "one, two"))),
    Row("t.Response", "remove", [("ResponseHeaderRemove", {"name": "X-R"})], R,
        (("Content-Type", "text/plain"), ("Set-Cookie", "a=1"))),
    Row("t.Response", "appended Set-Cookie keeps its own line", [("ResponseHeaderAppend",
                                                                  {"name": "Set-Cookie", "value": "b=2"})], R,
        (*R, ("Set-Cookie", "b=2"))),
    Row("b.append", "Set-Cookie never joined", [("ResponseHeaderAppend", {"name": "set-cookie", "value": "c=3"}),
                                                ("ResponseHeaderAppend", {"name": "Set-Cookie", "value": "d=4"})], R,
        (*R, ("set-cookie", "c=3"), ("Set-Cookie", "d=4"))),
    Row("t.Response", "request transforms leave the response alone",
        [("RequestHeaderRemove", {"name": "X-R"}), ("PathSet", {"path": "/x"})], R, R),
]


@rows(*RESPONSE_ROWS)
def test_response_transforms(row: Row) -> None:
    specs, headers, expected = row.args
    assert apply_response_transforms(_transforms(specs), headers) == expected


# The PathRegexReplace shapes the render builds for ReplacePrefixMatch and rewrite-target
# (contract Decisions): the data plane turns them into the paths the Gateway API table gives.
PREFIX_ROWS = [
    Row("d.paths", "/foo + /bar: /foo/x -> /bar/x", [("^/foo", "/bar")], "/foo/x", "/bar/x"),
    Row("d.paths", "/foo + /bar: /foo -> /bar", [("^/foo", "/bar")], "/foo", "/bar"),
    Row("d.paths", "/foo + /: /foo/bar -> /bar, never //bar", [("^/foo/?", "/")], "/foo/bar", "/bar"),
    Row("d.paths", "/foo + /: /foo -> /", [("^/foo/?", "/")], "/foo", "/"),
    Row("d.paths", "/ + /bar: /x -> /bar/x", [("^(?=/.)", "/bar"), ("^/$", "/bar")], "/x", "/bar/x"),
    Row("d.paths", "/ + /bar: / -> /bar", [("^(?=/.)", "/bar"), ("^/$", "/bar")], "/", "/bar"),
    Row("i.rewrite-target", "Prefix /app -> /: /app/x -> /x", [("^/app(?=/|$)", "")], "/app/x", "/x"),
    Row("i.rewrite-target", "Prefix /app -> /: /app -> /", [("^/app(?=/|$)", "")], "/app", "/"),
    Row("i.rewrite-target", "Prefix /app -> /v2: /app/a/b -> /v2/a/b", [("^/app(?=/|$)", "/v2")], "/app/a/b",
        "/v2/a/b"),
    Row("i.rewrite-target", "Prefix /app -> /v2: not /apple", [("^/app(?=/|$)", "/v2")], "/apple", "/apple"),
    Row("i.rewrite-target", "Exact /old -> /new", [("^/old$", "/new")], "/old", "/new"),
    Row("i.rewrite-target", "defaultBackend / -> /v2: /x -> /v2/x", [("^(?:/$|(?=/))", "/v2")], "/x", "/v2/x"),
    Row("i.rewrite-target", "defaultBackend / -> /v2: / -> /v2", [("^(?:/$|(?=/))", "/v2")], "/", "/v2"),
]


@rows(*PREFIX_ROWS)
def test_path_rewrite_shapes(row: Row) -> None:
    pairs, path, expected = row.args
    ts = _transforms([("PathRegexReplace", {"pattern": p, "replacement": r}) for p, r in pairs])
    assert apply_request_transforms(ts, path, ()) == (expected, ())


@covers("i.rewrite-target", "match.path-no-query")
def test_path_transforms_never_see_the_query() -> None:
    """The query is not part of the path: a transform gets the path only (the data plane
    forwards the query unchanged)."""
    ts = _transforms([("PathRegexReplace", {"pattern": "\\?.*$", "replacement": ""})])
    assert apply_request_transforms(ts, "/a", ()) == ("/a", ())
