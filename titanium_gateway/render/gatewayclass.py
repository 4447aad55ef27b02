"""GatewayClass: which classes are ours, and their Accepted status."""

from __future__ import annotations

from collections.abc import Mapping

from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.conditions import existing_conditions
from titanium_gateway.render.result import ObjectStatus

API_VERSION = "gateway.networking.k8s.io/v1"


def translate(ctx: RenderContext) -> set[str]:
    """Report Accepted on every GatewayClass we own; return their names."""
    ours: set[str] = set()
    for key in sorted(ctx.snapshot.gateway_classes):
        gc = ctx.snapshot.gateway_classes[key]
        if not isinstance(gc, Mapping):
            continue
        spec = gc.get("spec")
        if not isinstance(spec, Mapping) or spec.get("controllerName") != ctx.options.controller_name:
            continue
        meta = gc.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        if not isinstance(name, str) or not name:
            continue
        ours.add(name)
        conds = ctx.conditions(gc, existing_conditions(gc.get("status")))
        conds.set("Accepted", True, "Accepted", "GatewayClass is accepted by this controller")
        ctx.add_status(ObjectStatus(API_VERSION, "GatewayClass", "", name, {"conditions": conds.as_list()}))
    return ours
