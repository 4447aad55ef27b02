"""GRPCRoute (render/grpcroute.py): method matches as path matches, the GRPCRoute precedence, and
the HTTPRoute/GRPCRoute hostname rule with the route memo. The golden cases grpcroute-* show
whole outputs."""

from __future__ import annotations

from typing import Any

import pytest

from titanium_gateway.render import RenderCache, render
from titanium_gateway.render.grpcroute import build_match, method_path
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.precedence import grpc_match_part
from titanium_gateway.render.snapshot import Snapshot

from .core_fixtures import GW_API, base_objects, cond, route, routes, status_of


def grpc(name: str = "echo", hostnames: list[str] | None = None, created: str = "2024-01-01T00:00:00Z",
         rules: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": GW_API, "kind": "GRPCRoute",
        "metadata": {"name": name, "namespace": "apps", "creationTimestamp": created, "generation": 1,
                     "uid": name, "resourceVersion": "1"},
        "spec": {"parentRefs": [{"name": "web"}],
                 "rules": rules if rules is not None else [{"backendRefs": [{"name": "api", "port": 8080}]}]},
    }
    if hostnames is not None:
        obj["spec"]["hostnames"] = hostnames
    return obj


@pytest.mark.parametrize(("service", "method", "regex", "path", "kind"), [
    ("a.B", "C", False, "/a.B/C", "Exact"),
    ("a.B", "", False, "/a.B", "Prefix"),
    ("", "C", False, "/[^/]+/C", "Regex"),
    ("a\\..*", "", True, "/(?:a\\..*)/(?:[^/]+)", "Regex"),
    ("", "Get.*", True, "/(?:[^/]+)/(?:Get.*)", "Regex"),
])
def test_a_method_match_is_a_path_match(service: str, method: str, regex: bool, path: str, kind: str) -> None:
    assert method_path(service, method, regex) == (path, kind)
    raw = {"method": {"service": service, "method": method, **({"type": "RegularExpression"} if regex else {})}}
    out = build_match(raw)
    assert (out.match.path, out.match.path_kind, out.degraded) == (path, kind, False)


@pytest.mark.parametrize("raw", [
    {"method": {"type": "Exact"}},
    {"method": {"service": "", "method": ""}},
    {"method": {"service": "a/b", "method": "C"}},
    {"method": {"service": "a.B", "method": "C/D"}},
    {"method": {"type": "Prefix", "service": "a.B"}},
    {"method": {"type": "RegularExpression", "service": "(a+)+"}},
    {"method": "a.B/C"},
    {"headers": [{"name": "x", "value": "y", "type": "RegularExpression"}]},
    {"path": {"value": "/x"}},
])
def test_what_cannot_be_honoured_is_degraded_with_a_reason(raw: dict[str, Any]) -> None:
    out = build_match(raw)
    assert out.degraded and out.problems


def test_the_grpc_precedence_order() -> None:
    """Longer service first, then longer method, then more headers; each before the next item."""
    assert grpc_match_part(10, 0, 0) < grpc_match_part(9, 50, 9)
    assert grpc_match_part(10, 5, 0) < grpc_match_part(10, 4, 9)
    assert grpc_match_part(10, 5, 2) < grpc_match_part(10, 5, 1)
    # a service-only match (Prefix) before a method-only one (Regex): the service counts first
    assert build_match({"method": {"service": "a.B"}}).ranks < build_match({"method": {"method": "LongMethod"}}).ranks


def test_headers_first_of_a_name_counts_case_insensitive() -> None:
    out = build_match({"headers": [{"name": "Version", "value": "2"}, {"name": "version", "value": "3"}]})
    assert out.match.headers == (("version", "2"),) and not out.degraded


def test_the_hostname_rule_follows_the_routes_through_the_memo() -> None:
    """An HTTPRoute replayed from the cache still loses its listener when an older GRPCRoute of its
    hostname arrives, and gets it back when that route goes."""
    web = route(hostnames=["shared.example.com"], created="2024-06-01T00:00:00Z")
    web["metadata"].update(uid="shop", resourceVersion="1")
    base = [*base_objects(), web]
    cache, options = RenderCache(), RenderOptions()

    def accepted(result: Any, kind: str, name: str) -> str:
        return cond(status_of(result, kind, "apps", name).status["parents"][0]["conditions"], "Accepted")["reason"]

    first = render(Snapshot.from_objects(base), options, cache)
    assert accepted(first, "HTTPRoute", "shop") == "Accepted"
    older = grpc(hostnames=["shared.example.com"], created="2024-01-01T00:00:00Z")
    second = render(Snapshot.from_objects([*base, older]), options, cache)
    assert accepted(second, "HTTPRoute", "shop") == "NotAllowedByListeners"
    assert accepted(second, "GRPCRoute", "echo") == "Accepted"
    assert [r["id"] for r in routes(second)] == ["grpcroute/apps/echo/r0m0"]
    third = render(Snapshot.from_objects(base), options, cache)
    assert accepted(third, "HTTPRoute", "shop") == "Accepted"
    # another hostname: both accepted
    apart = grpc(hostnames=["grpc.example.com"])
    fourth = render(Snapshot.from_objects([*base, apart]), options, cache)
    assert accepted(fourth, "HTTPRoute", "shop") == accepted(fourth, "GRPCRoute", "echo") == "Accepted"
    assert len(routes(fourth)) == 2


def test_a_rule_field_not_honoured_answers_500_and_is_reported() -> None:
    """``sessionPersistence`` (experimental channel) is not honoured: the rule answers 500 rather
    than routing as if it were absent, and the route is not accepted."""
    session = grpc(rules=[{"sessionPersistence": {"type": "Cookie"}, "backendRefs": [{"name": "api", "port": 8080}]}])
    result = render(Snapshot.from_objects([*base_objects(), session]), RenderOptions())
    (only,) = routes(result)
    # the body is the reason code only; the field is named in the status
    assert only["directResponse"] == {"status": 500, "body": "UnsupportedValue"}
    accepted = cond(status_of(result, "GRPCRoute", "apps", "echo").status["parents"][0]["conditions"], "Accepted")
    assert (accepted["status"], accepted["reason"]) == ("False", "UnsupportedValue")
    assert "sessionPersistence" in accepted["message"]


def test_the_kept_routes_index_finds_the_oldest_route_sharing_a_hostname() -> None:
    """The index of kept routes answers as a scan of every kept route, oldest first, would."""
    import random

    from titanium_gateway.render.httproute.kindconflicts import _Attached, _Kept, _share

    pool = [None, "a.example.com", "b.example.com", "x.a.example.com", "*.example.com", "*.a.example.com",
            "c.other.org", "*.other.org"]
    rng = random.Random(7)
    for _ in range(300):
        kept = _Kept()
        for i in range(rng.randint(0, 8)):
            kept.add(_Attached(("HTTPRoute", "ns", f"r{i}"), ("", f"ns/r{i}"),
                               tuple(rng.sample(pool, rng.randint(1, 3)))))
        hosts = tuple(rng.sample(pool, rng.randint(1, 3)))
        expected = next((e for e in kept.entries if _share(e.hosts, hosts)), None)
        assert kept.oldest_sharing(hosts) is expected, (hosts, kept.entries)


@pytest.mark.parametrize(("http_hosts", "loses"), [
    (["*.example.com"], True),   # a wildcard covering the GRPCRoute's hostname
    (None, True),                # no hostnames: the listener's, any host
    (["other.example.org"], False),
    (["*.example.org"], False),
])
def test_an_httproute_loses_a_listener_only_to_a_grpcroute_sharing_a_hostname(http_hosts: list[str] | None,
                                                                              loses: bool) -> None:
    web = route(hostnames=http_hosts or [], created="2024-06-01T00:00:00Z")
    if http_hosts is None:
        web["spec"].pop("hostnames")
    older = grpc(hostnames=["grpc.example.com"], created="2024-01-01T00:00:00Z")
    result = render(Snapshot.from_objects([*base_objects(), web, older]), RenderOptions())
    accepted = cond(status_of(result, "HTTPRoute", "apps", "shop").status["parents"][0]["conditions"], "Accepted")
    assert (accepted["reason"] == "NotAllowedByListeners") is loses
    grpc_accepted = cond(status_of(result, "GRPCRoute", "apps", "echo").status["parents"][0]["conditions"], "Accepted")
    assert grpc_accepted["reason"] == "Accepted"
