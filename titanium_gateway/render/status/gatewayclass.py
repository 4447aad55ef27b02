"""The status of a GatewayClass of ours from its typed outcome: ``conditions`` (Accepted, its
transition time kept from the class's existing condition) and ``supportedFeatures`` where the
served CRD has the field. What it says is decided by render/gatewayclass.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.render.result import ObjectStatus
from titanium_gateway.render.status.conditions import ConditionList
from titanium_gateway.render.status.routes import ConditionOutcome


@dataclass(frozen=True, slots=True)
class GatewayClassOutcome:
    """What the translation decided for one GatewayClass of ours."""

    name: str
    generation: int
    accepted: ConditionOutcome
    #: the features written as ``status.supportedFeatures`` (None: the served CRD has no such field)
    supported_features: Sequence[Any] | None
    #: the class's existing conditions (their transition times are kept)
    previous: Sequence[Mapping[str, Any]] = ()
    kind: str = kinds.GATEWAY_CLASS.kind
    api_version: str = kinds.GATEWAY_API_VERSION

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, "", self.name)


def status(outcome: GatewayClassOutcome, now: str, made: list[Any] | None = None) -> ObjectStatus:
    """The status of ``outcome`` (``made``: where its :class:`ConditionList` is noted, as for
    a route, render/status/routes.py)."""
    conds = ConditionList(None, previous=outcome.previous, now=now, observed_generation=outcome.generation)
    conds.set(*outcome.accepted)
    if made is not None:
        made.append(conds)
    body: dict[str, Any] = {"conditions": conds.as_list()}
    if outcome.supported_features is not None:
        body["supportedFeatures"] = outcome.supported_features
    return ObjectStatus(outcome.api_version, outcome.kind, "", outcome.name, body)


__all__ = ["GatewayClassOutcome", "status"]
