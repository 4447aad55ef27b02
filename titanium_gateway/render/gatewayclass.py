"""GatewayClass: which classes are ours, and their status: Accepted (its message names the
Gateway API bundle found and what the cluster lacks, render/gatewayapi.py) and
``supportedFeatures`` where the served CRD has the field."""

from __future__ import annotations

from titanium_gateway.render import fields as f
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.conditions import existing_conditions
from titanium_gateway.render.gateway import bound_message
from titanium_gateway.render.gatewayapi import class_notes, supported_features
from titanium_gateway.render.result import ObjectStatus

API_VERSION = "gateway.networking.k8s.io/v1"


def translate(ctx: RenderContext) -> set[str]:
    """Report Accepted on every GatewayClass we own; return their names."""
    ours: set[str] = set()
    snap = ctx.snapshot
    message = bound_message("; ".join(["GatewayClass is accepted by this controller",
                                       *class_notes(snap.gateway_api, snap.unreadable)]))
    features = supported_features(snap.gateway_api)
    for key in sorted(snap.gateway_classes):
        gc = snap.gateway_classes[key]
        if f.mapping(f.mapping(gc).get("spec")).get("controllerName") != ctx.options.controller_name:
            continue
        name = f.name_of(f.metadata(gc))
        if not name:
            continue
        ours.add(name)
        conds = ctx.conditions(gc, existing_conditions(gc.get("status")))
        conds.set("Accepted", True, "Accepted", message)
        status = {"conditions": conds.as_list()}
        if features is not None:
            status["supportedFeatures"] = features
        ctx.add_status(ObjectStatus(API_VERSION, "GatewayClass", "", name, status))
    return ours
