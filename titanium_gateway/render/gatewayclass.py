"""GatewayClass: which classes are ours (controllerName), why the others are not ours, and the
status of ours: Accepted (its message names the Gateway API bundle found and what the cluster
lacks, render/gatewayapi.py) and ``supportedFeatures`` where the served CRD has the field,
recorded as a ``GatewayClassOutcome`` that render/status/gatewayclass.py builds the status of."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.render import fields as f
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.gatewayapi import class_notes, supported_features
from titanium_gateway.render.result import NotOurs
from titanium_gateway.render.status.conditions import bound_message, existing_conditions, generation
from titanium_gateway.render.status.gatewayclass import GatewayClassOutcome

KIND = kinds.GATEWAY_CLASS.kind


class GatewayClasses:
    """The classes of the snapshot: ours by name, the others' controllers."""

    __slots__ = ("ours", "_theirs")

    def __init__(self, ours: set[str], theirs: Mapping[str, str]) -> None:
        self.ours = ours
        self._theirs = theirs

    def __contains__(self, name: object) -> bool:
        return name in self.ours

    def why_not(self, name: str) -> str:
        """Why a Gateway of class ``name`` is not ours ("" when it is)."""
        if name in self.ours:
            return ""
        controller = self._theirs.get(name)
        if controller is None:
            return f"its GatewayClass {name or '(none)'} is not in the input"
        return f"its GatewayClass {name} belongs to controller {controller or 'none'}"


def translate(ctx: RenderContext) -> GatewayClasses:
    """Report Accepted on every GatewayClass we own; the others are not ours."""
    ours: set[str] = set()
    theirs: dict[str, str] = {}
    snap = ctx.snapshot
    message = bound_message("; ".join(["GatewayClass is accepted by this controller",
                                       *class_notes(snap.gateway_api, snap.unreadable)]))
    features = supported_features(snap.gateway_api)
    for key in sorted(snap.gateway_classes):
        gc: Any = snap.gateway_classes[key]
        name = f.name_of(f.metadata(gc))
        controller = f.mapping(f.mapping(gc).get("spec")).get("controllerName")
        if controller != ctx.options.controller_name:
            controller = f.string(controller)
            theirs[name or key] = controller
            if name:
                ctx.not_ours(NotOurs(KIND, "", name, f"it belongs to controller {controller or 'none'}"))
            continue
        if not name:
            continue
        ours.add(name)
        ctx.class_status(GatewayClassOutcome(name, generation(gc), ("Accepted", True, "Accepted", message), features,
                                             existing_conditions(gc.get("status"))))
    return GatewayClasses(ours, theirs)
