"""``RenderResult.not_ours``: what of the snapshot is not ours, and why, said by the render where
ownership is decided (GatewayClass controllerName, Gateway class, HTTPRoute parentRefs, Ingress
class). The offline summary's "Not taking part" section shows these records."""

from __future__ import annotations

import pytest
import yaml

from tests.offline.test_offline_cli import _NOT_TAKING_PART, QUICKSTART
from titanium_gateway.offline.load import load_objects
from titanium_gateway.offline.ownership import not_taking_part
from titanium_gateway.offline.snapshot import build_snapshot
from titanium_gateway.render import render
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.result import RenderResult

from .conftest import case_names, case_objects, case_options, render_case


def _lines(result: RenderResult) -> list[str]:
    """The records as the summary words them (GatewayClasses of other controllers aside: the
    summary does not list them)."""
    out = []
    for r in result.not_ours:
        if r.kind == "GatewayClass":
            continue
        why = f"not served: {r.reason}" if r.kind == "Ingress" else r.reason
        out.append(f"{r.kind} {r.namespace}/{r.name}: {why}")
    return out


@pytest.mark.parametrize("case", case_names())
def test_every_golden_input_names_each_object_once_either_served_or_not_ours(case: str) -> None:
    """Every Gateway and Ingress of the input is either reported on (a status of ours) or said
    not to be ours, never both; an HTTPRoute said not ours has parentRefs that are not ours."""
    options, snap_kwargs = case_options(case)
    snapshot = build_snapshot(case_objects(case), **{k: v for k, v in snap_kwargs.items()
                                                     if k != "confirmed_config_hash"})
    result = render_case(case)
    served = {(s.kind, s.namespace, s.name) for s in result.statuses}
    not_ours = {r.key for r in result.not_ours}
    for kind, objs in (("Gateway", snapshot.gateways), ("Ingress", snapshot.ingresses)):
        for key in objs:
            ns, name = key.split("/", 1)
            assert ((kind, ns, name) in served) != ((kind, ns, name) in not_ours), (case, kind, key)
    assert _lines(result) == not_taking_part(result)


@pytest.mark.parametrize("watch", [False, True])
def test_each_reason(watch: bool) -> None:
    objects = [*load_objects([QUICKSTART]), *yaml.safe_load_all(_NOT_TAKING_PART)]
    options = RenderOptions(watch_legacy_annotation=watch)
    snapshot = build_snapshot([o for o in objects if o])
    result = render(snapshot, options)
    assert _lines(result) == not_taking_part(result)
    reasons = {r.key: r.reason for r in result.not_ours}
    assert reasons[("GatewayClass", "", "theirs")] == "it belongs to controller example.com/other"
    assert reasons[("Gateway", "apps", "orphan")] == "its GatewayClass missing is not in the input"
    assert reasons[("HTTPRoute", "team", "lost")] == (
        "parent Gateway infra/nowhere is not in the input; parent Gateway apps/other is not ours (its GatewayClass "
        "theirs belongs to controller example.com/other); parent Service mesh is not a Gateway")
    assert (("Ingress", "apps", "legacy") in reasons) is not watch
