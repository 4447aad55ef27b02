"""The status of an owned Ingress from its typed outcome: ``status.loadBalancer.ingress``, the
addresses of the data-plane Service (decided by render/ingress/status.py). An Ingress's problems
are Events, not status."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.render.result import ObjectStatus

API_VERSION = "networking.k8s.io/v1"


@dataclass(frozen=True, slots=True)
class IngressOutcome:
    """What the translation decided for one owned Ingress's status."""

    namespace: str
    name: str
    #: the ``status.loadBalancer.ingress`` entries (ip / hostname)
    addresses: tuple[Mapping[str, str], ...]
    kind: str = kinds.INGRESS.kind
    api_version: str = API_VERSION


class IngressStatuses:
    """The builder of one render's Ingress statuses: the Ingresses with the same addresses (all
    of them: one data-plane Service) share one status body (statuses are read-only downstream)."""

    __slots__ = ("_bodies",)

    def __init__(self) -> None:
        self._bodies: dict[tuple[Any, ...], dict[str, Any]] = {}

    def status(self, outcome: IngressOutcome) -> ObjectStatus:
        addresses = outcome.addresses
        key = tuple(tuple(sorted(a.items())) for a in addresses)
        body = self._bodies.get(key)
        if body is None:
            body = self._bodies[key] = {"loadBalancer": {"ingress": [dict(a) for a in addresses]}}
        return ObjectStatus.of(outcome.api_version, outcome.kind, outcome.namespace, outcome.name, body)


__all__ = ["API_VERSION", "IngressOutcome", "IngressStatuses"]
