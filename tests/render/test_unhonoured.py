"""A 500 answer of a rule the controller cannot honour tells the client its reason code and
nothing of the cluster: no namespace, Service name, annotation value or regex compiler message.
The why stays in status (HTTPRoute) and Events (Ingress)."""

from __future__ import annotations

from tests.render.core_fixtures import base_objects, parent_cond, route, route_by_id, run
from tests.render.core_fixtures import routes as all_routes
from tests.render.test_ingress import backend, base, ing, path, routes
from titanium_gateway.render.unhonoured import unhonoured


def test_a_missing_backend_answers_its_reason_only() -> None:
    res = run(base_objects() + [route(rules=[{"backendRefs": [{"name": "does-not-exist", "port": 8080}]}])])
    assert route_by_id(res, "httproute/apps/shop/r0m0")["directResponse"] == {"status": 500, "body": "BackendNotFound"}
    resolved = parent_cond(res, "ResolvedRefs")
    assert resolved["reason"] == "BackendNotFound" and "apps/does-not-exist" in resolved["message"]


def test_an_invalid_regex_match_answers_its_reason_only() -> None:
    bad = {"path": {"type": "RegularExpression", "value": "/v(1|2"}}
    res = run(base_objects() + [route(rules=[{"matches": [bad], "backendRefs": [{"name": "api", "port": 8080}]}])])
    (r,) = [r for r in all_routes(res) if "directResponse" in r]
    assert r["directResponse"] == {"status": 500, "body": "UnsupportedValue"}
    accepted = parent_cond(res, "Accepted")
    assert accepted["reason"] == "UnsupportedValue" and "does not compile: missing )" in accepted["message"]


def test_an_ingress_backend_problem_answers_its_reason_only() -> None:
    ctx = base(ing("a", paths=[path("/x", be=backend("nope"))]))
    assert routes(ctx)["ingress/apps/a/r0p0"]["directResponse"] == {"status": 500, "body": "BackendNotFound"}
    assert any("apps/nope" in e.message for e in ctx.events() if e.reason == "BackendNotFound")


def test_the_body_is_the_reason() -> None:
    assert (unhonoured("RefNotPermitted").status, unhonoured("RefNotPermitted").body) == (500, "RefNotPermitted")

