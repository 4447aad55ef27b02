"""``RenderResult.not_ours``: what of the snapshot is not ours, and why, said by the render where
ownership is decided (GatewayClass controllerName, Gateway class, HTTPRoute parentRefs, Ingress
class). The offline summary's "Not taking part" section says the same of every golden input and
of a file made to hold each reason (until the summary shows the render's records)."""

from __future__ import annotations

import pytest
import yaml

from titanium_gateway.offline import build_snapshot, load_objects, not_taking_part
from titanium_gateway.render import render
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.result import RenderResult

from .conftest import case_names, case_objects, case_options, render_case
from .test_offline_cli import _NOT_TAKING_PART, QUICKSTART


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
def test_every_golden_input_says_what_is_not_ours_as_the_summary_does(case: str) -> None:
    options, snap_kwargs = case_options(case)
    snapshot = build_snapshot(case_objects(case), **{k: v for k, v in snap_kwargs.items()
                                                     if k != "confirmed_config_hash"})
    assert _lines(render_case(case)) == not_taking_part(snapshot, options)


@pytest.mark.parametrize("watch", [False, True])
def test_each_reason(watch: bool) -> None:
    objects = [*load_objects([QUICKSTART]), *yaml.safe_load_all(_NOT_TAKING_PART)]
    options = RenderOptions(watch_legacy_annotation=watch)
    snapshot = build_snapshot([o for o in objects if o])
    result = render(snapshot, options)
    assert _lines(result) == not_taking_part(snapshot, options)
    reasons = {r.key: r.reason for r in result.not_ours}
    assert reasons[("GatewayClass", "", "theirs")] == "it belongs to controller example.com/other"
    assert reasons[("Gateway", "apps", "orphan")] == "its GatewayClass missing is not in the input"
    assert reasons[("HTTPRoute", "team", "lost")] == (
        "parent Gateway infra/nowhere is not in the input; parent Gateway apps/other is not ours (its GatewayClass "
        "theirs belongs to controller example.com/other); parent Service mesh is not a Gateway")
    assert (("Ingress", "apps", "legacy") in reasons) is not watch
