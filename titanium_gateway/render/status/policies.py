"""The status of a policy (a BackendTLSPolicy) from its typed outcome: one ``status.ancestors``
entry of ours per ancestor (a Gateway), each with its conditions. The entries are built like a
route's parent entries (render/status/routes.py: ``ancestorRef`` for ``parentRef``, the same
conditions made once per render); what they say is decided by render/backendtls.py and
render/backendtlsstatus.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.render.result import ObjectStatus
from titanium_gateway.render.status.routes import RouteParentOutcome, RouteParents

#: one ancestor entry: its ``ancestorRef``, conditions and existing conditions (as a route parent's)
AncestorOutcome = RouteParentOutcome


@dataclass(frozen=True, slots=True)
class PolicyStatusOutcome:
    """What was decided for a policy's status: an entry per ancestor of ours, in order."""

    kind: str
    namespace: str
    name: str
    generation: int
    ancestors: tuple[AncestorOutcome, ...]
    api_version: str = kinds.GATEWAY_API_VERSION


def status(builder: RouteParents, outcome: PolicyStatusOutcome, made: list[Any] | None = None) -> ObjectStatus:
    """The status of ``outcome`` (``builder``: the render's entry builder, ``ctx.route_parents``)."""
    return ObjectStatus.of(outcome.api_version, outcome.kind, outcome.namespace, outcome.name,
                           {"ancestors": builder.entries(outcome.generation, outcome.ancestors, "ancestorRef", made)})


__all__ = ["AncestorOutcome", "PolicyStatusOutcome", "status"]
