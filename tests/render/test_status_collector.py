"""The status collector (render/status/): the Gateways' and ListenerSets' statuses are built
from their typed outcomes and their data plane's delivery, by the render and, when only the data
plane's answer changes, by ``reprogram``, with the same result as a new render."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

from titanium_gateway.offline.snapshot import build_snapshot
from titanium_gateway.render import render
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.planes import PER_GATEWAY
from titanium_gateway.render.result import GatewayOutcome, ListenerOutcome, ObjectStatus
from titanium_gateway.render.status import programmed
from titanium_gateway.render.status.collector import StatusCollector

from .conftest import case_names, case_objects

_WITH_GATEWAYS = [c for c in case_names() if any(
    o.get("kind") in ("Gateway", "ListenerSet") for o in case_objects(c))]


def _timeless(value: Any) -> Any:
    """The statuses without transition times (a new render stamps against the objects' written
    status, ``reprogram`` against the last result's: render/status/programmed.py)."""
    if isinstance(value, ObjectStatus):
        return (value.key, _timeless(value.status))
    if isinstance(value, Mapping):
        return {k: _timeless(v) for k, v in value.items() if k != "lastTransitionTime"}
    if isinstance(value, (list, tuple)):
        return [_timeless(v) for v in value]
    return value


@pytest.mark.parametrize("mode", ["shared", PER_GATEWAY])
@pytest.mark.parametrize("case", _WITH_GATEWAYS)
def test_reprogram_gives_what_a_new_render_gives(case: str, mode: str) -> None:
    snap = build_snapshot(case_objects(case))
    options = RenderOptions(data_plane_mode=mode, data_plane_ports=(8080, 8088, 8443))
    first = render(snap, options)
    # every Gateway and ListenerSet status of ours is made from its outcome
    assert {o.key for o in first.gateway_outcomes} == {
        st.key for st in first.statuses if st.kind in ("Gateway", "ListenerSet")}
    probes = {p.key: (p.config_hash, "") for p in first.data_planes() if p.key}
    confirmed = dataclasses.replace(snap, confirmed_config_hash=first.config_hash, plane_probes=probes)
    again = programmed.reprogram(first, assume_programmed=False, confirmed_hash=first.config_hash,
                                 probe_message="", now=snap.now, plane_probes=probes)
    assert _timeless(again.statuses) == _timeless(render(confirmed, options).statuses)
    # and back: one pod falls behind
    old = "pod p-0 runs config old"
    behind_probes = {key: (None, old) for key in probes}
    behind = programmed.reprogram(again, assume_programmed=False, confirmed_hash=None, probe_message=old,
                                  now=snap.now, plane_probes=behind_probes)
    fresh = render(dataclasses.replace(snap, probe_message=old, plane_probes=behind_probes), options)
    assert _timeless(behind.statuses) == _timeless(fresh.statuses)


def _listener(name: str, **changes: object) -> ListenerOutcome:
    li = ListenerOutcome(name, ({"kind": "HTTPRoute"},), 2, True, (True, "Accepted", "ok"),
                         (True, "ResolvedRefs", "ok"), (False, "NoConflicts", "none"), False, ())
    return dataclasses.replace(li, **changes)  # type: ignore[arg-type]


def _gateway(**changes: object) -> GatewayOutcome:
    o = GatewayOutcome("gateway.networking.k8s.io/v1", "Gateway", "apps", "web", 3, (),
                       (True, "Accepted", "Gateway is accepted"), True, "", addresses=({"type": "IPAddress",
                                                                                       "value": "10.0.0.1"},),
                       listeners=(_listener("http"),))
    return dataclasses.replace(o, **changes)  # type: ignore[arg-type]


def _conditions(conds: list[dict]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in conds}


def test_programmed_follows_the_delivery_of_the_outcomes_plane() -> None:
    collector = StatusCollector()
    collector.outcome(_gateway())
    collector.outcome(_gateway(name="own", plane="apps/own"))
    collector.outcome(_gateway(name="none", plane=None, no_plane="namespace apps is not ours"))
    collector.finish({"": programmed.delivery("h", "", assume_programmed=False, confirmed_hash="h", probe_message=""),
                      "apps/own": programmed.delivery("g", "", assume_programmed=False, confirmed_hash=None,
                                                      probe_message="pod own-0 runs config old")},
                     "2026-01-01T00:00:00Z")
    got = {st.name: st.status for st in collector.statuses()}
    assert _conditions(got["web"]["conditions"])["Programmed"] == ("True", "Programmed")
    assert _conditions(got["web"]["listeners"][0]["conditions"])["Programmed"] == ("True", "Programmed")
    assert _conditions(got["own"]["conditions"])["Programmed"] == ("False", "Pending")
    assert _conditions(got["none"]["conditions"])["Programmed"] == ("False", "NoResources")
    assert got["web"]["addresses"] == [{"type": "IPAddress", "value": "10.0.0.1"}]
    assert all(c["observedGeneration"] == 3 for c in got["web"]["conditions"])


def test_a_conflicted_listener_set_entry_says_why_and_an_invalid_listener_is_invalid() -> None:
    state = programmed.delivery("h", "", assume_programmed=True, confirmed_hash=None, probe_message="")
    entry = _listener("a", set_entry=True, conflicted=(True, "HostnameConflict", "taken"))
    invalid = _listener("b", valid=False)
    st = programmed.status(_gateway(kind="ListenerSet", addresses=None, listeners=(entry, invalid)), state, "now")
    a, b = (_conditions(li["conditions"]) for li in st.status["listeners"])
    assert a["Accepted"] == a["Programmed"] == ("False", "HostnameConflict")
    assert b["Programmed"] == ("False", "Invalid")
    assert "addresses" not in st.status


def test_not_valid_is_invalid_unless_the_outcome_says_why() -> None:
    state = programmed.delivery("h", "", assume_programmed=True, confirmed_hash=None, probe_message="")
    gateway = programmed.status(_gateway(valid=False, acceptance=(False, "ListenersNotValid", "none")), state, "now")
    assert _conditions(gateway.status["conditions"])["Programmed"] == ("False", "Invalid")
    why = (False, "NotAllowed", "Gateway apps/web allows no ListenerSets")
    ls = programmed.status(_gateway(kind="ListenerSet", addresses=None, listeners=None, valid=False, acceptance=why,
                                    unprogrammed=why), state, "now")
    assert _conditions(ls.status["conditions"])["Programmed"] == ("False", "NotAllowed")
    assert set(ls.status) == {"conditions"}
