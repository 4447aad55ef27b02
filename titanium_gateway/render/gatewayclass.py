"""GatewayClass: which classes are ours, and their Accepted status."""

from __future__ import annotations

from titanium_gateway.render import fields as f
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.conditions import existing_conditions
from titanium_gateway.render.result import ObjectStatus

API_VERSION = "gateway.networking.k8s.io/v1"


def translate(ctx: RenderContext) -> set[str]:
    """Report Accepted on every GatewayClass we own; return their names."""
    ours: set[str] = set()
    for key in sorted(ctx.snapshot.gateway_classes):
        gc = ctx.snapshot.gateway_classes[key]
        if f.mapping(f.mapping(gc).get("spec")).get("controllerName") != ctx.options.controller_name:
            continue
        name = f.name_of(f.metadata(gc))
        if not name:
            continue
        ours.add(name)
        conds = ctx.conditions(gc, existing_conditions(gc.get("status")))
        conds.set("Accepted", True, "Accepted", "GatewayClass is accepted by this controller")
        ctx.add_status(ObjectStatus(API_VERSION, "GatewayClass", "", name, {"conditions": conds.as_list()}))
    return ours
