"""GatewayClass: which classes are ours (controllerName), their Accepted status, and why the
others are not ours."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from titanium_gateway.render import fields as f
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.conditions import existing_conditions
from titanium_gateway.render.result import NotOurs, ObjectStatus

API_VERSION = "gateway.networking.k8s.io/v1"


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
    for key in sorted(ctx.snapshot.gateway_classes):
        gc: Any = ctx.snapshot.gateway_classes[key]
        name = f.name_of(f.metadata(gc))
        controller = f.mapping(f.mapping(gc).get("spec")).get("controllerName")
        if controller != ctx.options.controller_name:
            controller = f.string(controller)
            theirs[name or key] = controller
            if name:
                ctx.not_ours(NotOurs("GatewayClass", "", name, f"it belongs to controller {controller or 'none'}"))
            continue
        if not name:
            continue
        ours.add(name)
        conds = ctx.conditions(gc, existing_conditions(gc.get("status")))
        conds.set("Accepted", True, "Accepted", "GatewayClass is accepted by this controller")
        ctx.add_status(ObjectStatus(API_VERSION, "GatewayClass", "", name, {"conditions": conds.as_list()}))
    return GatewayClasses(ours, theirs)
