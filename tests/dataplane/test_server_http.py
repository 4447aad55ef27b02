"""The reference data plane end to end on loopback: real HTTP clients, echo backends."""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections import Counter
from typing import Any

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("prometheus_client")

import requests  # noqa: E402

from tests.dataplane.docs import cluster, document, listener, route  # noqa: E402
from tests.dataplane.rules import Row, covers, rows  # noqa: E402
from tests.dataplane.support import (  # noqa: E402
    TOKEN,
    EchoBackend,
    Harness,
    free_port,
    header_lines,
    wait_for,
)


def serve(harness: Harness, routes: list[dict], clusters: list[dict], ports: int = 1, **kw: Any) -> list[int]:
    """Write the config with ``ports`` plain listeners, start the data plane; the ports."""
    numbers = [free_port() for _ in range(ports)]
    harness.write(document(routes, clusters, listeners=[listener(p) for p in numbers]))
    harness.start(**kw)
    wait_for(lambda: harness.dp is not None and harness.dp.ready)
    return numbers


def raw(port: int, method: str, target: str, headers: list[tuple[str, str]], body: bytes | None = None):
    """One request with exactly these header lines (repeated names allowed); (status, header
    lines, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        for k, v in headers:
            conn.putheader(k, v)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        return resp.status, resp.getheaders(), resp.read()
    finally:
        conn.close()


def echo(resp: requests.Response) -> dict[str, Any]:
    assert resp.status_code == 200, resp.text
    return resp.json()


@pytest.fixture
def be(backends) -> EchoBackend:
    return backends("be")


# -- forwarding -----------------------------------------------------------------------------
@covers("action.clusterId", "listeners.type", "listeners.port", "files.root", "c.destinations", "d.host")
def test_forward_keeps_method_path_query_body_and_host(harness, be) -> None:
    (port,) = serve(harness, [route("r", 1, {"host": "shop.example.com"})], [cluster("be", [be.destination()])])
    status, headers, body = raw(port, "POST", "/a/b%20c?x=1&y=%2F", [("Host", "shop.example.com:8080"),
                                                                    ("X-Custom", "v")], b"hello")
    got = json.loads(body)
    assert status == 200 and got["backend"] == "be"
    assert got["method"] == "POST" and got["path"] == "/a/b%20c?x=1&y=%2F" and got["body"] == "hello"
    assert header_lines(got, "host") == ["shop.example.com:8080"]  # unchanged, with its port
    assert header_lines(got, "x-custom") == ["v"]


@covers("listeners.type")
def test_adds_nothing_and_drops_hop_by_hop_headers(harness, be) -> None:
    (port,) = serve(harness, [route("r", 1)], [cluster("be", [be.destination()])])
    _, _, body = raw(port, "GET", "/", [("Host", "h.test"), ("Connection", "keep-alive, x-hop"), ("x-hop", "1"),
                                        ("Keep-Alive", "timeout=5"), ("TE", "trailers"), ("X-End", "2")])
    got = json.loads(body)
    names = {k.lower() for k, _ in got["headers"]}
    assert "x-end" in names
    assert not names & {"x-hop", "keep-alive", "te", "upgrade", "proxy-connection"}
    assert not {n for n in names if n.startswith("x-forwarded") or n in ("forwarded", "via", "x-real-ip")}
    assert not names & {"user-agent", "accept", "accept-encoding"}  # the client sent none: none made up


@covers("routes.no-match", "b.404")
def test_no_route_answers_404_and_nothing_is_forwarded(harness, be) -> None:
    (port,) = serve(harness, [route("r", 1, {"host": "shop.example.com"})], [cluster("be", [be.destination()])])
    r = requests.get(f"http://127.0.0.1:{port}/", headers={"Host": f"127.0.0.1:{be.port}"}, timeout=5)
    assert r.status_code == 404
    assert be.requests == []  # never forwarded to the host the client named


@covers("action.redirect", "redirect.query", "redirect.path", "redirect.port")
def test_redirect(harness, be) -> None:
    (port,) = serve(harness, [route("r", 1, {"path": "/old", "pathKind": "Prefix"},
                                    redirect={"statusCode": 302, "host": "new.test", "port": 8443, "scheme": "https",
                                              "path": "/new"})],
                    [cluster("be", [be.destination()])])
    r = requests.get(f"http://127.0.0.1:{port}/old/x?a=1&b=2", allow_redirects=False, timeout=5)
    assert r.status_code == 302 and r.headers["Location"] == "https://new.test:8443/new?a=1&b=2"
    assert be.requests == []


@covers("action.directResponse", "d.own-matches")
def test_direct_response(harness, be) -> None:
    (port,) = serve(harness, [route("bad", 1, {"path": "/bad", "pathKind": "Prefix"},
                                    directResponse={"status": 500, "body": "UnsupportedValue"}),
                              route("good", 2)], [cluster("be", [be.destination()])])
    r = requests.get(f"http://127.0.0.1:{port}/bad/x", timeout=5)
    assert r.status_code == 500 and r.text == "UnsupportedValue"
    assert r.headers["Content-Type"].startswith("text/plain")
    assert requests.get(f"http://127.0.0.1:{port}/good", timeout=5).status_code == 200
    assert len(be.requests) == 1


@covers("action.clusters", "i.canary", "i.canary-weight")
def test_weighted_route_clusters(harness, backends) -> None:
    a, b, z = backends("a"), backends("b"), backends("z")
    (port,) = serve(harness, [route("r", 1, clusters=[{"clusterId": "a", "weight": 1}, {"clusterId": "b", "weight": 1},
                                                      {"clusterId": "z", "weight": 0}])],
                    [cluster("a", [a.destination()]), cluster("b", [b.destination()]), cluster("z", [z.destination()])])
    s = requests.Session()
    seen = Counter(echo(s.get(f"http://127.0.0.1:{port}/", timeout=5))["backend"] for _ in range(60))
    assert seen["a"] > 10 and seen["b"] > 10 and seen["z"] == 0


@covers("c.empty", "b.invalid-share")
def test_empty_cluster_answers_503_for_its_share(harness, be) -> None:
    (port,) = serve(harness, [route("all-empty", 1, {"path": "/empty", "pathKind": "Prefix"}, clusterId="none"),
                              route("mixed", 2, clusters=[{"clusterId": "be", "weight": 1},
                                                          {"clusterId": "none", "weight": 1}])],
                    [cluster("be", [be.destination()]), cluster("none", [])])
    s = requests.Session()
    assert s.get(f"http://127.0.0.1:{port}/empty", timeout=5).status_code == 503
    codes = Counter(s.get(f"http://127.0.0.1:{port}/", timeout=5).status_code for _ in range(60))
    assert set(codes) == {200, 503} and codes[503] > 10


@covers("routes.global", "b.global", "listeners.port")
def test_routes_are_global_across_listeners(harness, be) -> None:
    p1, p2 = serve(harness, [route("r", 1, {"host": "shop.example.com"})], [cluster("be", [be.destination()])], ports=2)
    for p in (p1, p2):
        assert echo(requests.get(f"http://127.0.0.1:{p}/", headers={"Host": "shop.example.com"}, timeout=5))
    assert len(be.requests) == 2


@covers("match.ports")
def test_a_route_with_ports_answers_on_those_listeners_only(harness, be) -> None:
    """The HTTP-to-HTTPS redirect pattern: the same host and path redirect on one listener and
    forward on the other."""
    plain, other = free_port(), free_port()
    redirect = {"statusCode": 301, "scheme": "https", "host": "shop.example.com"}
    harness.write(document([route("redirect", 1, {"host": "shop.example.com", "ports": [plain]}, redirect=redirect),
                            route("app", 2, {"host": "shop.example.com", "ports": [other]})],
                           [cluster("be", [be.destination()])], listeners=[listener(plain), listener(other)]))
    harness.start()
    wait_for(lambda: harness.dp is not None and harness.dp.ready)
    r = requests.get(f"http://127.0.0.1:{plain}/x", headers={"Host": "shop.example.com"}, timeout=5,
                     allow_redirects=False)
    assert (r.status_code, r.headers["Location"]) == (301, "https://shop.example.com/x")
    assert echo(requests.get(f"http://127.0.0.1:{other}/x", headers={"Host": "shop.example.com"}, timeout=5))
    assert len(be.requests) == 1


MATCH_ROWS = [
    Row("match.headers", "header match", {"headers": {"x-env": "canary"}}, {"x-env": "canary"}, "/", True),
    Row("b.header-case", "header value case-insensitive", {"headers": {"x-env": "canary"}}, {"X-Env": "CaNaRy"}, "/",
        True),
    Row("match.query", "query match", {"query": {"q": "v"}}, {}, "/?q=v", True),
    Row("match.query", "query case-sensitive", {"query": {"q": "v"}}, {}, "/?q=V", False),
    Row("match.queryRegex", "query regex", {"queryRegex": {"id": "^[0-9]+$"}}, {}, "/?id=42", True),
    Row("match.method", "method", {"method": "DELETE"}, {}, "/", False),
    Row("match.path-prefix", "prefix boundary", {"path": "/foo", "pathKind": "Prefix"}, {}, "/foobar", False),
    Row("match.host-wildcard", "wildcard host, deeper label", {"host": "*.example.com"}, {"Host": "a.b.example.com"},
        "/", True),
]


@rows(*MATCH_ROWS)
def test_matching_end_to_end(row: Row, harness, be) -> None:
    match, headers, target, expected = row.args
    (port,) = serve(harness, [route("r", 1, match)], [cluster("be", [be.destination()])])
    r = requests.get(f"http://127.0.0.1:{port}{target}", headers=headers, timeout=5)
    assert r.status_code == (200 if expected else 404)


@covers("i.canary-by-header")
def test_canary_by_header_route(harness, backends) -> None:
    primary, canary = backends("primary"), backends("canary")
    (port,) = serve(harness, [route("canary", 1, {"headers": {"x-canary": "always"}}, clusterId="canary"),
                              route("primary", 2, clusters=[{"clusterId": "primary", "weight": 100},
                                                            {"clusterId": "canary", "weight": 0}])],
                    [cluster("primary", [primary.destination()]), cluster("canary", [canary.destination()])])
    url = f"http://127.0.0.1:{port}/"
    assert echo(requests.get(url, headers={"X-Canary": "always"}, timeout=5))["backend"] == "canary"
    assert echo(requests.get(url, headers={"X-Canary": "never"}, timeout=5))["backend"] == "primary"


# -- transforms -----------------------------------------------------------------------------
@covers("t.RequestHeaderSet", "t.RequestHeaderAppend", "t.RequestHeaderRemove", "d.append", "b.append",
        "route.transforms")
def test_request_header_transforms(harness, be) -> None:
    (port,) = serve(harness, [route("r", 1, transforms=[
        {"kind": "RequestHeaderSet", "parameters": {"name": "x-set", "value": "new"}},
        {"kind": "RequestHeaderAppend", "parameters": {"name": "x-app", "value": "c"}},
        {"kind": "RequestHeaderAppend", "parameters": {"name": "x-added", "value": "v"}},
        {"kind": "RequestHeaderRemove", "parameters": {"name": "x-gone"}}])], [cluster("be", [be.destination()])])
    _, _, body = raw(port, "GET", "/", [("Host", "h.test"), ("X-Set", "old"), ("X-App", "a"), ("X-App", "b"),
                                        ("x-gone", "1")])
    got = json.loads(body)
    assert header_lines(got, "x-set") == ["new"]
    assert header_lines(got, "x-app") == ["a, b, c"]  # repeated lines collapse, joined with ", "
    assert header_lines(got, "x-added") == ["v"]
    assert header_lines(got, "x-gone") == []


@covers("t.Response", "b.append")
def test_response_header_transforms(harness, be) -> None:
    (port,) = serve(harness, [route("r", 1, transforms=[
        {"kind": "ResponseHeaderAppend", "parameters": {"name": "Set-Cookie", "value": "b=2"}},
        {"kind": "ResponseHeaderAppend", "parameters": {"name": "X-R", "value": "two"}},
        {"kind": "ResponseHeaderSet", "parameters": {"name": "X-S", "value": "set"}},
        {"kind": "ResponseHeaderRemove", "parameters": {"name": "X-Backend"}}])], [cluster("be", [be.destination()])])
    status, headers, _ = raw(port, "GET", "/", [("Host", "h.test"), ("x-echo-header", "Set-Cookie: a=1"),
                                                ("x-echo-header", "X-R: one"), ("x-echo-header", "X-S: old")])
    lines = [(k.lower(), v) for k, v in headers]
    assert status == 200
    assert [v for k, v in lines if k == "set-cookie"] == ["a=1", "b=2"]  # its own line
    assert [v for k, v in lines if k == "x-r"] == ["one, two"]
    assert [v for k, v in lines if k == "x-s"] == ["set"]
    assert [v for k, v in lines if k == "x-backend"] == []


@covers("t.HostSet", "d.host")
def test_host_set(harness, be) -> None:
    (port,) = serve(harness, [route("r", 1, transforms=[{"kind": "HostSet", "parameters": {"host": "internal.test"}}])],
                    [cluster("be", [be.destination()])])
    got = echo(requests.get(f"http://127.0.0.1:{port}/", headers={"Host": "public.test:8080"}, timeout=5))
    assert header_lines(got, "host") == ["internal.test"]


PATH_ROWS = [
    Row("t.PathSet", "whole path, query kept", [{"kind": "PathSet", "parameters": {"path": "/new"}}], "/old/x?q=1",
        "/new?q=1"),
    Row("t.PathRegexReplace", "prefix replaced", [{"kind": "PathRegexReplace",
                                                   "parameters": {"pattern": "^/app(?=/|$)", "replacement": "/v2"}}],
        "/app/items?x=y", "/v2/items?x=y"),
    Row("i.rewrite-target", "rewrite to /, query kept", [{"kind": "PathRegexReplace",
                                                          "parameters": {"pattern": "^/app(?=/|$)", "replacement": ""}}],
        "/app/items?a=b", "/items?a=b"),
    Row("d.paths", "an empty path becomes /", [{"kind": "PathRegexReplace",
                                                "parameters": {"pattern": "^/app", "replacement": ""}}],
        "/app?k=v", "/?k=v"),
    Row("t.PathPrefix", "prepend", [{"kind": "PathPrefix", "parameters": {"prefix": "/api"}}], "/x", "/api/x"),
]


@rows(*PATH_ROWS)
def test_path_transforms(row: Row, harness, be) -> None:
    transforms, target, expected = row.args
    (port,) = serve(harness, [route("r", 1, transforms=transforms)], [cluster("be", [be.destination()])])
    assert echo(requests.get(f"http://127.0.0.1:{port}{target}", timeout=5))["path"] == expected


# -- mirror ---------------------------------------------------------------------------------
@covers("route.mirror")
def test_mirror_gets_a_fire_and_forget_copy(harness, backends) -> None:
    primary, shadow = backends("primary"), backends("shadow")
    (port,) = serve(harness, [route("r", 1, clusterId="primary", mirror={"clusterId": "shadow", "percent": 100.0},
                                    transforms=[{"kind": "RequestHeaderSet", "parameters": {"name": "x-t", "value": "1"}}])],
                    [cluster("primary", [primary.destination()]), cluster("shadow", [shadow.destination()])])
    start = time.monotonic()
    r = requests.post(f"http://127.0.0.1:{port}/m?q=1", data=b"payload", headers={"x-echo-delay": "1.5"}, timeout=10)
    assert r.status_code == 200 and r.json()["backend"] == "primary"
    copy = shadow.wait_requests(1)[0]
    assert copy["path"] == "/m?q=1" and copy["body"] == "payload" and header_lines(copy, "x-t") == ["1"]
    assert time.monotonic() - start < 3.0  # the primary and the mirror both waited 1.5 s, in parallel

    # a slow or failing mirror never delays or changes the primary's answer
    (port2,) = [port]
    shadow.stop()
    r = requests.get(f"http://127.0.0.1:{port2}/again", timeout=5)
    assert r.status_code == 200 and r.json()["backend"] == "primary"


@covers("route.mirror")
def test_mirror_percent(harness, backends) -> None:
    primary, shadow = backends("primary"), backends("shadow")
    (port,) = serve(harness, [route("none", 1, {"path": "/none", "pathKind": "Prefix"}, clusterId="primary",
                                    mirror={"clusterId": "shadow", "percent": 0.0}),
                              route("half", 2, clusterId="primary", mirror={"clusterId": "shadow", "percent": 50.0})],
                    [cluster("primary", [primary.destination()]), cluster("shadow", [shadow.destination()])])
    s = requests.Session()
    for _ in range(20):
        s.get(f"http://127.0.0.1:{port}/none", timeout=5)
    time.sleep(0.3)
    assert shadow.requests == []
    for _ in range(60):
        s.get(f"http://127.0.0.1:{port}/half", timeout=5)
    time.sleep(0.5)
    assert 10 < len(shadow.requests) < 50


# -- timeouts -------------------------------------------------------------------------------
@covers("c.requestTimeout", "i.proxy-read-timeout", "d.timeouts")
def test_cluster_request_timeout_is_the_wait_for_headers(harness, be) -> None:
    (port,) = serve(harness, [route("slow", 1, {"path": "/slow", "pathKind": "Prefix"}, clusterId="fast-limit"),
                              route("free", 2, clusterId="be")],
                    [cluster("fast-limit", [be.destination("x")], httpClient={"requestTimeout": "00:00:00.300"}),
                     cluster("be", [be.destination()])])
    start = time.monotonic()
    r = requests.get(f"http://127.0.0.1:{port}/slow", headers={"x-echo-delay": "1.5"}, timeout=10)
    assert r.status_code == 504 and time.monotonic() - start < 1.2
    # headers in time, a slow body: the limit is for the headers only
    r = requests.get(f"http://127.0.0.1:{port}/slow", headers={"x-echo-body-delay": "0.6"}, timeout=10)
    assert r.status_code == 200 and r.json()["backend"] == "be"
    # no httpClient.requestTimeout: no per-cluster limit
    r = requests.get(f"http://127.0.0.1:{port}/", headers={"x-echo-delay": "1"}, timeout=10)
    assert r.status_code == 200


@covers("route.limits", "d.timeouts")
def test_route_request_timeout_is_the_whole_request(harness, be) -> None:
    (port,) = serve(harness, [route("r", 1, limits={"requestTimeout": "00:00:00.400"})],
                    [cluster("be", [be.destination()])])
    start = time.monotonic()
    r = requests.get(f"http://127.0.0.1:{port}/", headers={"x-echo-delay": "1.5"}, timeout=10)
    assert r.status_code == 504 and time.monotonic() - start < 1.2
    # fired while the body streams: the response cannot become a 504 any more; it is cut
    with pytest.raises(requests.exceptions.RequestException):
        r = requests.get(f"http://127.0.0.1:{port}/", headers={"x-echo-body-delay": "1.5", "x-echo-chunked": "1"},
                         timeout=10)
        assert r.status_code == 200  # the headers came in time
        _ = r.content
    assert requests.get(f"http://127.0.0.1:{port}/", timeout=5).status_code == 200


@covers("c.destinations")
def test_unreachable_destination_answers_502(harness) -> None:
    dead = free_port()
    (port,) = serve(harness, [route("r", 1)], [cluster("be", [{"id": "dead", "address": "127.0.0.1", "port": dead,
                                                                "weight": 1, "useHttps": False}])])
    assert requests.get(f"http://127.0.0.1:{port}/", timeout=5).status_code == 502


# -- bodies ---------------------------------------------------------------------------------
def test_large_and_chunked_bodies_stream_through(harness, be) -> None:
    (port,) = serve(harness, [route("r", 1)], [cluster("be", [be.destination()])])
    big = b"x" * (3 << 20)
    got = echo(requests.post(f"http://127.0.0.1:{port}/", data=big, timeout=30))
    assert len(got["body"]) == len(big)

    def gen():
        yield b"part1-"
        yield b"part2"

    got = echo(requests.post(f"http://127.0.0.1:{port}/", data=gen(), timeout=10))
    assert got["body"] == "part1-part2" and header_lines(got, "content-length") == []
    r = requests.get(f"http://127.0.0.1:{port}/", headers={"x-echo-chunked": "1"}, timeout=10)
    assert r.json()["backend"] == "be"


def test_head_keeps_content_length(harness, be) -> None:
    (port,) = serve(harness, [route("r", 1)], [cluster("be", [be.destination()])])
    status, headers, body = raw(port, "HEAD", "/", [("Host", "h.test")])
    assert status == 200 and body == b"" and int(dict(headers)["Content-Length"]) > 0


# -- affinity and algorithms ------------------------------------------------------------------
@covers("c.sessionAffinity", "i.affinity")
def test_affinity_cookie_pins_the_client(harness, backends) -> None:
    bs = [backends(f"b{i}") for i in range(3)]
    (port,) = serve(harness, [route("r", 1)],
                    [cluster("be", [b.destination() for b in bs], algorithm="Random",
                             sessionAffinity={"policy": "Cookie", "name": "titanium-affinity"})])
    first = requests.get(f"http://127.0.0.1:{port}/", timeout=5)
    cookie = first.cookies.get("titanium-affinity")
    # opaque: no destination's address or port shows (the backends' names never reach the data
    # plane; a 2-letter name would also turn up by chance in a random-looking token)
    assert cookie and all(b.host not in cookie and str(b.port) not in cookie for b in bs)
    pinned = first.json()["backend"]
    for _ in range(20):
        r = requests.get(f"http://127.0.0.1:{port}/", cookies={"titanium-affinity": cookie}, timeout=5)
        assert r.json()["backend"] == pinned
        assert "titanium-affinity" not in r.headers.get("Set-Cookie", "")  # already pinned: not set again


@covers("c.algorithm", "i.load-balance")
def test_round_robin_end_to_end(harness, backends) -> None:
    a, b = backends("a"), backends("b")
    (port,) = serve(harness, [route("r", 1)], [cluster("be", [a.destination(), b.destination()], algorithm="RoundRobin")])
    s = requests.Session()
    names = [echo(s.get(f"http://127.0.0.1:{port}/", timeout=5))["backend"] for _ in range(6)]
    assert names in (["a", "b"] * 3, ["b", "a"] * 3)


@covers("c.algorithm")
def test_least_requests_end_to_end(harness, backends) -> None:
    import concurrent.futures

    a, b = backends("a"), backends("b")
    (port,) = serve(harness, [route("r", 1)], [cluster("be", [a.destination(), b.destination()],
                                                       algorithm="LeastRequests")])
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        slow = pool.submit(requests.get, f"http://127.0.0.1:{port}/", headers={"x-echo-delay": "1.5"}, timeout=10)
        busy = wait_for(lambda: next((bk.name for bk in (a, b) if bk.requests), None))
        names = {echo(requests.get(f"http://127.0.0.1:{port}/", timeout=5))["backend"] for _ in range(5)}
        assert names == ({"a", "b"} - {busy})  # the one with a request in flight is avoided
        slow.result()


# -- policies ---------------------------------------------------------------------------------
def _policy(kind: str, **params: Any) -> dict[str, Any]:
    return {"kind": kind, "parameters": params}


@covers("p.MaxRequestBodySize", "i.proxy-body-size")
def test_max_request_body_size(harness, be) -> None:
    (port,) = serve(harness, [route("r", 1, policies=[_policy("MaxRequestBodySize", bytes="100")])],
                    [cluster("be", [be.destination()])])
    url = f"http://127.0.0.1:{port}/"
    assert requests.post(url, data=b"x" * 101, timeout=5).status_code == 413
    assert requests.post(url, data=b"x" * 100, timeout=5).status_code == 200

    def chunked():
        yield b"x" * 500

    assert requests.post(url, data=chunked(), timeout=5).status_code == 200  # no Content-Length: not checked
    assert len(be.requests) == 2


@covers("p.IpAllowDeny", "i.whitelist")
def test_ip_allow_deny_uses_the_socket_peer(harness, be) -> None:
    (port,) = serve(harness, [route("deny", 1, {"path": "/deny", "pathKind": "Prefix"},
                                    policies=[_policy("IpAllowDeny", allow=["10.0.0.0/8"])]),
                              route("allow", 2, policies=[_policy("IpAllowDeny", allow=["10.0.0.0/8", "127.0.0.0/8"])])],
                    [cluster("be", [be.destination()])])
    r = requests.get(f"http://127.0.0.1:{port}/deny", headers={"X-Forwarded-For": "10.0.0.1"}, timeout=5)
    assert r.status_code == 403
    assert requests.get(f"http://127.0.0.1:{port}/ok", timeout=5).status_code == 200


@covers("p.RateLimit", "i.limit-rps")
def test_rate_limit(harness, be) -> None:
    (port,) = serve(harness, [route("r", 1, policies=[_policy("RateLimit", requestsPerSecond="3", window="00:00:01",
                                                              partition="ingress/apps/shop")])],
                    [cluster("be", [be.destination()])])
    s = requests.Session()
    time.sleep(1.02 - time.monotonic() % 1.0)  # at the start of a window (the data plane's clock is this one)
    codes = [s.get(f"http://127.0.0.1:{port}/", timeout=5) for _ in range(5)]
    assert [r.status_code for r in codes] == [200, 200, 200, 429, 429]
    assert codes[3].headers["Retry-After"] == "1"
    time.sleep(1.05)
    assert s.get(f"http://127.0.0.1:{port}/", timeout=5).status_code == 200


@covers("p.Cors", "i.cors")
def test_cors_answers_the_preflight_only(harness, be) -> None:
    (port,) = serve(harness, [route("r", 1, policies=[_policy("Cors", allowOrigins=["https://app.test"])])],
                    [cluster("be", [be.destination()])])
    url = f"http://127.0.0.1:{port}/api"
    pre = requests.options(url, headers={"Origin": "https://app.test", "Access-Control-Request-Method": "PUT",
                                         "Access-Control-Request-Headers": "x-token"}, timeout=5)
    assert pre.status_code == 204
    assert pre.headers["Access-Control-Allow-Origin"] == "https://app.test"
    assert pre.headers["Access-Control-Allow-Methods"] == "PUT"
    assert pre.headers["Access-Control-Allow-Headers"] == "x-token"
    assert be.requests == []  # answered by the data plane
    actual = requests.put(url, headers={"Origin": "https://app.test"}, timeout=5)
    assert actual.status_code == 200 and not any(h.lower().startswith("access-control") for h in actual.headers)


@covers("p.ExtAuth", "i.auth-url")
def test_ext_auth(harness, backends) -> None:
    app, auth = backends("app"), backends("auth")
    dead = free_port()
    (port,) = serve(harness, [
        route("ok", 1, {"path": "/ok", "pathKind": "Prefix"},
              policies=[_policy("ExtAuth", url=f"http://127.0.0.1:{auth.port}/check?x=1", timeout="00:00:02")]),
        route("slow", 2, {"path": "/slow", "pathKind": "Prefix"},
              policies=[_policy("ExtAuth", url=f"http://127.0.0.1:{auth.port}/check", timeout="00:00:00.300")]),
        route("dead", 3, {"path": "/dead", "pathKind": "Prefix"},
              policies=[_policy("ExtAuth", url=f"http://127.0.0.1:{dead}/check", timeout="00:00:01")]),
    ], [cluster("be", [app.destination()])])
    base = f"http://127.0.0.1:{port}"
    r = requests.post(f"{base}/ok/x", data=b"body", headers={"Authorization": "Bearer abc"}, timeout=5)
    assert r.status_code == 200 and r.json()["backend"] == "app"
    check = auth.requests[0]
    assert check["method"] == "GET" and check["path"] == "/check?x=1" and check["body"] == ""
    assert header_lines(check, "authorization") == ["Bearer abc"]  # the original request's headers
    # any other answer is relayed (status, headers, body), the request never reaches the app
    r = requests.get(f"{base}/ok/x", headers={"x-echo-status": "401", "x-echo-header": "WWW-Authenticate: Basic"},
                     timeout=5)
    assert r.status_code == 401 and r.headers["WWW-Authenticate"] == "Basic" and r.json()["backend"] == "auth"
    r = requests.get(f"{base}/ok/x", headers={"x-echo-status": "302", "x-echo-header": "Location: /login"},
                     allow_redirects=False, timeout=5)
    assert r.status_code == 302 and r.headers["Location"] == "/login"
    assert len(app.requests) == 1
    # fail closed: a timeout or an error answers 503
    assert requests.get(f"{base}/slow", headers={"x-echo-delay": "1"}, timeout=5).status_code == 503
    assert requests.get(f"{base}/dead", timeout=5).status_code == 503
    assert len(app.requests) == 1


@covers("route.policies")
def test_policies_in_list_order_before_transforms(harness, be) -> None:
    (port,) = serve(harness, [
        route("ip-first", 1, {"path": "/a", "pathKind": "Prefix"},
              policies=[_policy("IpAllowDeny", allow=["10.0.0.0/8"]), _policy("MaxRequestBodySize", bytes="1")]),
        route("size-first", 2, {"path": "/b", "pathKind": "Prefix"},
              policies=[_policy("MaxRequestBodySize", bytes="1"), _policy("IpAllowDeny", allow=["10.0.0.0/8"])]),
        route("cors", 3, {"path": "/c", "pathKind": "Prefix"}, policies=[_policy("Cors", allowOrigins=["*"])],
              transforms=[{"kind": "RequestHeaderRemove", "parameters": {"name": "Origin"}}]),
    ], [cluster("be", [be.destination()])])
    base = f"http://127.0.0.1:{port}"
    assert requests.post(f"{base}/a", data=b"xx", timeout=5).status_code == 403
    assert requests.post(f"{base}/b", data=b"xx", timeout=5).status_code == 413
    pre = requests.options(f"{base}/c", headers={"Origin": "https://x.test", "Access-Control-Request-Method": "GET"},
                           timeout=5)
    assert pre.status_code == 204  # the policy saw the Origin the transform removes
    assert be.requests == []


# -- admin ------------------------------------------------------------------------------------
@covers("admin.readyz", "admin.version", "admin.metrics", "files.config-hash")
def test_admin_endpoints(harness, be) -> None:
    harness.start()
    r = requests.get(f"{harness.admin}/readyz", timeout=5)
    assert r.status_code == 503  # no config yet
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert requests.get(f"{harness.admin}/version", headers=auth, timeout=5).json()["config_hash"] == ""
    port = free_port()
    digest = harness.write(document([route("r", 1)], [cluster("be", [be.destination()])], listeners=[listener(port)]))
    harness.wait_hash(digest)
    assert requests.get(f"{harness.admin}/readyz", timeout=5).status_code == 200
    for path in ("/version", "/metrics"):
        assert requests.get(f"{harness.admin}{path}", timeout=5).status_code == 401
        assert requests.get(f"{harness.admin}{path}", headers={"Authorization": "Bearer wrong"},
                            timeout=5).status_code == 401
    v = requests.get(f"{harness.admin}/version", headers=auth, timeout=5)
    assert v.status_code == 200 and v.headers["Content-Type"].startswith("application/json")
    assert v.json()["config_hash"] == digest and v.json()["version"]
    requests.get(f"http://127.0.0.1:{port}/", timeout=5)
    m = requests.get(f"{harness.admin}/metrics", headers=auth, timeout=5)
    assert m.status_code == 200 and m.headers["Content-Type"].startswith("text/plain")
    assert f'titanium_requests_total{{code="200",port="{port}"}} 1.0' in m.text
    assert f'titanium_config_info{{config_hash="{digest}"}} 1.0' in m.text


def test_admin_without_a_token_configured_refuses(harness) -> None:
    harness.start(admin_token="")
    assert requests.get(f"{harness.admin}/version", headers={"Authorization": "Bearer "}, timeout=5).status_code == 401


def test_expect_100_continue(harness, be) -> None:
    (port,) = serve(harness, [route("r", 1)], [cluster("be", [be.destination()])])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 100 Continue")
        s.sendall(b"data")
        buf = b""
        while b'"body": "data"' not in buf:
            chunk = s.recv(65536)
            assert chunk
            buf += chunk
    assert be.requests[0]["body"] == "data"
