"""What in the input could not take part in the render, and why: the summary's "Not taking
part" section (``render``, ``explain``).

The render owns the answer to "is this object ours?". These functions only put it in the
user's words, with the reason the render does not give yet (the class belongs to another
controller, the parent Gateway is not in the input, ...). They are kept here, apart, so that
they can read the render's own answer once the render reports the objects that are not its own
and why; until then :func:`not_taking_part` follows the render's rules (a Gateway is ours when
its GatewayClass's controllerName is ours; an HTTPRoute takes part through a parent Gateway of
ours) and :func:`ingress_not_served` uses the render's class selection
(``render.ingress.owned_classes`` and its annotations).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from titanium_gateway.offline.load import LoadReport
from titanium_gateway.render import fields as f
from titanium_gateway.render.ingress import (
    DEFAULT_CLASS_ANNOTATION,
    LEGACY_CLASS_ANNOTATION,
    LEGACY_CLASS_NAME,
    owned_classes,
)
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.referencegrant import GATEWAY_GROUP
from titanium_gateway.render.snapshot import Snapshot

__all__ = ["ingress_not_served", "not_taking_part"]


def ingress_not_served(
    ingress: Mapping[str, Any], ingress_classes: Mapping[str, Any], options: RenderOptions
) -> str | None:
    """Why this controller does not serve ``ingress`` (``None`` when it does), following the
    Ingress page: ingressClassName naming one of our IngressClasses; else the legacy annotation
    (with --watch-legacy-annotation); else one of our classes being the default."""
    owned, has_default = owned_classes(ingress_classes, options.ingress_controller_name)
    class_name = f.mapping(ingress.get("spec")).get("ingressClassName")
    if isinstance(class_name, str) and class_name:
        if class_name in owned:
            return None
        other = ingress_classes.get(class_name)
        if other is None:
            return f"its IngressClass {class_name} is not in the input"
        controller = f.string(f.mapping(f.mapping(other).get("spec")).get("controller")) or "none"
        return f"its IngressClass {class_name} belongs to controller {controller}, not {options.ingress_controller_name}"
    legacy = f.mapping(f.mapping(ingress.get("metadata")).get("annotations")).get(LEGACY_CLASS_ANNOTATION)
    if legacy is not None:
        ours = isinstance(legacy, str) and (legacy in owned or legacy == LEGACY_CLASS_NAME)
        if not ours:
            return f"its {LEGACY_CLASS_ANNOTATION} annotation names another controller's class ({legacy!r})"
        if options.watch_legacy_annotation:
            return None
        if has_default:
            return None
        return (f"it names its class only with the {LEGACY_CLASS_ANNOTATION} annotation ({legacy!r}), "
                "which is read only with --watch-legacy-annotation, and no IngressClass of ours is the default")
    if has_default:
        return None
    return (f"it has no ingressClassName and no IngressClass of ours is the default "
            f"({DEFAULT_CLASS_ANNOTATION}: \"true\")")


def not_taking_part(
    snapshot: Snapshot, options: RenderOptions, report: LoadReport | None = None
) -> list[str]:
    """What in the input could not take part in the render, and why: HTTPRoutes whose parent
    Gateway is not in the input (or is another controller's), Gateways whose GatewayClass is not
    in the input (or is another controller's), Ingresses this controller does not serve."""
    report = report if report is not None else LoadReport()
    lines: list[str] = []
    classes = snapshot.gateway_classes
    ours_classes = {k for k, c in classes.items()
                    if f.string(f.mapping(f.mapping(c).get("spec")).get("controllerName")) == options.controller_name}

    def gateway_problem(gw: Mapping[str, Any]) -> str | None:
        class_name = f.string(f.mapping(gw.get("spec")).get("gatewayClassName"))
        if class_name in ours_classes:
            return None
        if class_name not in classes:
            return f"its GatewayClass {class_name or '(none)'} is not in the input"
        controller = f.string(f.mapping(f.mapping(classes[class_name]).get("spec")).get("controllerName")) or "none"
        return f"its GatewayClass {class_name} belongs to controller {controller}"

    gateway_problems: dict[str, str | None] = {}
    for key, gw in sorted(snapshot.gateways.items()):
        problem = gateway_problem(f.mapping(gw))
        gateway_problems[key] = problem
        if problem:
            lines.append(f"Gateway {key}{report.where('Gateway', key)}: {problem}")
    for key, route in sorted(snapshot.httproutes.items()):
        route = f.mapping(route)
        namespace = f.string(f.mapping(route.get("metadata")).get("namespace")) or "default"
        problems = []
        parent_refs = f.items(f.mapping(route.get("spec")).get("parentRefs"))
        for ref in parent_refs:
            ref = f.mapping(ref)
            group = ref.get("group", GATEWAY_GROUP)
            kind = ref.get("kind", "Gateway")
            name = f.string(ref.get("name"))
            if group != GATEWAY_GROUP or kind != "Gateway":
                problems.append(f"parent {kind} {name} is not a Gateway")
                continue
            gw_key = f"{f.string(ref.get('namespace')) or namespace}/{name}"
            if gw_key not in snapshot.gateways:
                problems.append(f"parent Gateway {gw_key} is not in the input")
            elif gateway_problems.get(gw_key):
                problems.append(f"parent Gateway {gw_key} is not ours ({gateway_problems[gw_key]})")
        if not parent_refs:
            problems.append("it has no parentRefs")
        if problems:
            lines.append(f"HTTPRoute {key}{report.where('HTTPRoute', key)}: " + "; ".join(problems))
    for key, ing in sorted(snapshot.ingresses.items()):
        why = ingress_not_served(f.mapping(ing), snapshot.ingress_classes, options)
        if why:
            lines.append(f"Ingress {key}{report.where('Ingress', key)}: not served: {why}")
    return lines
