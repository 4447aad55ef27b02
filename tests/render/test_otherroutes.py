"""TLSRoute, TCPRoute, UDPRoute (render/otherroutes.py): answered once, never served.
The golden case other-route-kinds shows the whole output."""

from __future__ import annotations

import pytest

from titanium_gateway.render.statusmerge import final_status

from .core_fixtures import CONTROLLER, GW_API, base_objects, cond, config, listener_status, run, status_of


def other(kind: str, parents: list[dict]) -> dict:
    return {"apiVersion": GW_API, "kind": kind,
            "metadata": {"name": "r", "namespace": "apps", "generation": 4},
            "spec": {"parentRefs": parents, "rules": [{"backendRefs": [{"name": "api", "port": 8080}]}]}}


@pytest.mark.parametrize("kind", ["TLSRoute", "TCPRoute", "UDPRoute"])
def test_not_allowed_by_listeners_written_once(kind: str) -> None:
    route = other(kind, [{"name": "web"}, {"name": "web", "port": 81}])
    first = run([*base_objects(), route], now="2026-01-01T00:00:00Z")
    st = status_of(first, kind, "apps", "r").status
    (a, b) = st["parents"]
    assert a["parentRef"] == {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "web"}
    assert (cond(a["conditions"], "Accepted")["reason"], cond(b["conditions"], "Accepted")["reason"]) == (
        "NotAllowedByListeners", "NoMatchingParent")
    assert {c["observedGeneration"] for c in a["conditions"]} == {4}
    assert listener_status(first, "http")["attachedRoutes"] == 0 and config(first)["routes"] == []
    # written back, the next render asks for the very same status (no churn), others' entries kept
    theirs = {"parentRef": {"name": "x"}, "controllerName": "example.com/x", "conditions": []}
    written = {**route, "status": final_status(kind, {"status": {"parents": [theirs]}}, st, CONTROLLER)}
    again = run([*base_objects(), written], now="2026-03-01T00:00:00Z")
    assert status_of(again, kind, "apps", "r").status == st
    assert final_status(kind, written, st, CONTROLLER)["parents"][0] == theirs
