"""What in the input could not take part in the render, and why: the summary's "Not taking
part" section (``render``, ``explain``). The render decides it (``RenderResult.not_ours``, said
where ownership is decided); this module only words it for the user, with where each object was
read."""

from __future__ import annotations

from titanium_gateway import kinds
from titanium_gateway.offline.load import LoadReport
from titanium_gateway.render.result import RenderResult

__all__ = ["not_taking_part"]


def not_taking_part(result: RenderResult, report: LoadReport | None = None) -> list[str]:
    """One line per object of the input this controller does not serve (or serves only in part),
    with the render's reason: Gateways of another controller's class, HTTPRoutes whose parents
    are not Gateways of ours, Ingresses of another class. GatewayClasses of other controllers are
    not listed (the status summary shows ours)."""
    report = report if report is not None else LoadReport()
    lines: list[str] = []
    for r in result.not_ours:
        if r.kind == kinds.GATEWAY_CLASS.kind:
            continue
        key = f"{r.namespace}/{r.name}"
        why = f"not served: {r.reason}" if r.kind == kinds.INGRESS.kind else r.reason
        lines.append(f"{r.kind} {key}{report.where(r.kind, key)}: {why}")
    return lines
