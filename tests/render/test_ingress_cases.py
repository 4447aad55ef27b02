"""Ingress-specific checks of the golden cases ``testdata/ingress-*`` (through the full render).

``test_golden.py`` compares the bytes and checks the common ``expect.yaml`` keys; this file checks
the keys only Ingress cases use:

* ``ingresses: {<ns>/<name>: <status>}`` — the exact status of each listed Ingress (and every
  Ingress status document is listed when the key is present);
* ``event_count`` — the exact number of events;
* ``status_500: [<route id>]`` — these routes answer ``directResponse`` 500.

It also renders every Ingress case with its objects in reverse order (same bytes) and checks that
every Ingress event is a Warning with a reason from the Ingress page's Events table.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from titanium_gateway.offline.outputs import event_list, status_documents
from titanium_gateway.offline.snapshot import build_snapshot

from .conftest import TESTDATA, case_names, case_objects, case_options, parse_twp, render_case, require_render

CASES = [c for c in case_names() if c.startswith("ingress-")]
EVENT_REASONS = {
    "UnknownAnnotation",
    "InvalidAnnotation",
    "UnsupportedBackend",
    "InvalidBackend",
    "BackendNotFound",
    "InvalidPath",
    "InvalidTLS",
    "RouteConflict",
    "CanaryWithoutPrimary",
    "CanaryConflict",
    "PortUnavailable",
    # beyond the table (docs/ingress.md): a path no request can reach, an Ingress nothing serves
    "ShadowedRule",
    "NotServed",
}


def _expect(case: str) -> dict[str, Any]:
    return yaml.safe_load((TESTDATA / case / "expect.yaml").read_text()) or {}


def test_there_are_ingress_cases() -> None:
    assert len(CASES) >= 10, CASES
    for case in CASES:
        assert (TESTDATA / case / "README.md").exists()
        assert (TESTDATA / case / "expect.yaml").exists()


@pytest.mark.parametrize("case", CASES)
def test_ingress_case(case: str) -> None:
    expect = _expect(case)
    result = render_case(case)
    errors: list[str] = []
    docs = [d for d in status_documents(result) if d["kind"] == "Ingress"]
    statuses = {f"{d['metadata']['namespace']}/{d['metadata']['name']}": d for d in docs}
    if "ingresses" in expect:
        if sorted(statuses) != sorted(expect["ingresses"]):
            errors.append(f"Ingress statuses for {sorted(statuses)}, expected {sorted(expect['ingresses'])}")
        for key, want in expect["ingresses"].items():
            doc = statuses.get(key)
            if doc is not None and doc["status"] != want:
                errors.append(f"Ingress {key} status {doc['status']!r}, expected {want!r}")
            if doc is not None and doc["apiVersion"] != "networking.k8s.io/v1":
                errors.append(f"Ingress {key} apiVersion {doc['apiVersion']!r}")
    events = event_list(result)
    if "event_count" in expect and len(events) != expect["event_count"]:
        errors.append(f"{len(events)} events, expected {expect['event_count']}: {events!r}")
    for e in events:
        if e["involvedObject"]["kind"] == "Ingress" and (e["reason"] not in EVENT_REASONS or e["type"] != "Warning"):
            errors.append(f"event {e!r} is not a Warning with a reason from the Events table")
    routes = {r["id"]: r for r in parse_twp(result.config).get("routes") or []}
    for part in result.parts:
        routes.update({r["id"]: r for r in parse_twp(part[1]).get("routes") or []})
    for rid in expect.get("status_500") or []:
        got = routes.get(rid, {}).get("directResponse", {}).get("status")
        if got != 500:
            errors.append(f"route {rid} does not answer 500: {routes.get(rid)!r}")
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("case", CASES)
def test_ingress_case_is_order_independent(case: str) -> None:
    render = require_render()
    options, snap_kwargs = case_options(case)
    reverse = render(build_snapshot(tuple(reversed(case_objects(case))), **snap_kwargs), options)
    forward = render_case(case)
    assert reverse.config == forward.config
    assert reverse.events == forward.events
    assert reverse.statuses == forward.statuses
