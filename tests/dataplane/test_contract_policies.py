"""Route policies of the contract library (no sockets, an injected clock)."""

from __future__ import annotations

from tests.dataplane.docs import config, route
from tests.dataplane.rules import Row, covers, rows
from titanium_gateway.contract import (
    Answer,
    AskExtAuth,
    FixedWindowLimiter,
    Request,
    evaluate,
    ext_auth_admits,
)
from titanium_gateway.contract.policies import EXT_AUTH_UNAVAILABLE, permits


def policy(kind: str, **params):
    return config([route(policies=[{"kind": kind, "parameters": params}])]).routes[0].behavior.policies[0]


def rq(method: str = "GET", headers=(), peer: str = "10.1.2.3") -> Request:
    return Request.from_target(method, "/", [("Host", "h.test"), *headers], client_address=peer)


def status_of(verdict) -> int | None:
    return verdict.status if isinstance(verdict, Answer) else None


# (rule, name, policy, request, expected status or None = passes)
ROWS = [
    Row("p.MaxRequestBodySize", "over the limit: 413", policy("MaxRequestBodySize", bytes="10"),
        rq("POST", [("Content-Length", "11")]), 413),
    Row("p.MaxRequestBodySize", "at the limit", policy("MaxRequestBodySize", bytes="10"),
        rq("POST", [("Content-Length", "10")]), None),
    Row("p.MaxRequestBodySize", "0 = unlimited", policy("MaxRequestBodySize", bytes="0"),
        rq("POST", [("Content-Length", "999999999")]), None),
    Row("i.proxy-body-size", "no Content-Length (chunked) is not checked", policy("MaxRequestBodySize", bytes="1"),
        rq("POST", [("Transfer-Encoding", "chunked")]), None),
    Row("p.IpAllowDeny", "peer in a CIDR", policy("IpAllowDeny", allow=["10.0.0.0/8"]), rq(peer="10.9.9.9"), None),
    Row("p.IpAllowDeny", "peer outside: 403", policy("IpAllowDeny", allow=["10.0.0.0/8"]), rq(peer="192.0.2.1"), 403),
    Row("p.IpAllowDeny", "a plain address", policy("IpAllowDeny", allow=["192.0.2.1"]), rq(peer="192.0.2.1"), None),
    Row("p.IpAllowDeny", "one of several", policy("IpAllowDeny", allow=["10.0.0.0/8", "127.0.0.0/8"]),
        rq(peer="127.0.0.1"), None),
    Row("p.IpAllowDeny", "IPv6", policy("IpAllowDeny", allow=["2001:db8::/32"]), rq(peer="2001:db8::1"), None),
    Row("p.IpAllowDeny", "IPv4-mapped IPv6 peer", policy("IpAllowDeny", allow=["127.0.0.0/8"]),
        rq(peer="::ffff:127.0.0.1"), None),
    Row("i.whitelist", "X-Forwarded-For is not the peer", policy("IpAllowDeny", allow=["10.0.0.0/8"]),
        rq(headers=[("X-Forwarded-For", "10.0.0.1")], peer="192.0.2.1"), 403),
    Row("p.Cors", "a GET is not a preflight", policy("Cors", allowOrigins=["*"]),
        rq(headers=[("Origin", "https://a.test")]), None),
    Row("p.Cors", "OPTIONS without Access-Control-Request-Method is not a preflight", policy("Cors", allowOrigins=["*"]),
        rq("OPTIONS", [("Origin", "https://a.test")]), None),
    Row("p.Cors", "a preflight: 204", policy("Cors", allowOrigins=["*"]),
        rq("OPTIONS", [("Origin", "https://a.test"), ("Access-Control-Request-Method", "PUT")]), 204),
    Row("p.ExtAuth", "asks for the subrequest", policy("ExtAuth", url="http://auth.test/", timeout="00:00:01"), rq(),
        "ask"),
]


@rows(*ROWS)
def test_policy(row: Row) -> None:
    pol, request, expected = row.args
    verdict = evaluate(pol, request, limiter=FixedWindowLimiter(), now=100.0)
    if expected == "ask":
        assert isinstance(verdict, AskExtAuth) and verdict.policy is pol
    else:
        assert status_of(verdict) == expected


CORS_ROWS = [
    Row("p.Cors", "any origin", ["*"], "https://a.test", "GET", None,
        {"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "GET"}),
    Row("p.Cors", "a listed origin is echoed", ["https://a.test", "https://b.test"], "https://b.test", "PUT",
        "x-token, content-type",
        {"Access-Control-Allow-Origin": "https://b.test", "Vary": "Origin", "Access-Control-Allow-Methods": "PUT",
         "Access-Control-Allow-Headers": "x-token, content-type"}),
    Row("i.cors", "an origin not listed gets no Access-Control header", ["https://a.test"], "https://evil.test", "GET",
        None, {}),
]


@rows(*CORS_ROWS)
def test_cors_preflight_headers(row: Row) -> None:
    origins, origin, method, asked, expected = row.args
    headers = [("Origin", origin), ("Access-Control-Request-Method", method)]
    if asked:
        headers.append(("Access-Control-Request-Headers", asked))
    verdict = evaluate(policy("Cors", allowOrigins=origins), rq("OPTIONS", headers))
    assert isinstance(verdict, Answer) and verdict.status == 204 and verdict.body == ""
    assert dict(verdict.headers) == expected


@covers("p.RateLimit", "i.limit-rps")
def test_rate_limit_fixed_window_per_client_and_partition() -> None:
    lim = FixedWindowLimiter()
    pol = policy("RateLimit", requestsPerSecond="2", window="00:00:01", partition="ingress/apps/a")
    other = policy("RateLimit", requestsPerSecond="2", window="00:00:01", partition="ingress/apps/b")
    a, b = rq(peer="10.0.0.1"), rq(peer="10.0.0.2")
    assert [status_of(evaluate(pol, a, limiter=lim, now=t)) for t in (10.0, 10.1, 10.2)] == [None, None, 429]
    assert status_of(evaluate(pol, b, limiter=lim, now=10.3)) is None  # another client
    assert status_of(evaluate(other, a, limiter=lim, now=10.3)) is None  # another partition (Ingress)
    verdict = evaluate(pol, a, limiter=lim, now=10.4)
    assert isinstance(verdict, Answer) and dict(verdict.headers)["Retry-After"] == "1"
    assert status_of(evaluate(pol, a, limiter=lim, now=11.0)) is None  # the next window


@covers("p.RateLimit")
def test_rate_limit_window_and_retry_after() -> None:
    lim = FixedWindowLimiter()
    pol = policy("RateLimit", requestsPerSecond="1", window="00:00:10", partition="p")
    assert permits(pol) == 10  # requestsPerSecond x the window
    for i in range(10):
        assert status_of(evaluate(pol, rq(), limiter=lim, now=100.5 + i * 0.1)) is None
    verdict = evaluate(pol, rq(), limiter=lim, now=102.5)
    assert isinstance(verdict, Answer) and verdict.status == 429
    assert dict(verdict.headers)["Retry-After"] == "8"  # the window [100, 110) ends in 7.5 s


@covers("p.RateLimit")
def test_rate_limiter_drops_old_windows() -> None:
    lim = FixedWindowLimiter(max_keys=10)
    pol = policy("RateLimit", requestsPerSecond="1", window="00:00:01", partition="p")
    for i in range(50):
        evaluate(pol, rq(peer=f"10.0.0.{i}"), limiter=lim, now=float(i))
    assert len(lim) <= 11


@covers("p.ExtAuth", "i.auth-url")
def test_ext_auth_verdicts() -> None:
    assert [ext_auth_admits(s) for s in (200, 204, 299)] == [True, True, True]
    assert [ext_auth_admits(s) for s in (301, 401, 403, 500)] == [False] * 4
    assert EXT_AUTH_UNAVAILABLE.status == 503  # fails closed
