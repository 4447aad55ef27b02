"""The status and the Events of an owned Ingress: ``status.loadBalancer`` (the data-plane
Service's addresses, recorded as an ``IngressOutcome`` that render/status/ingress.py builds the
status of) and the Warning Events the translation reports on it (the Ingress page: an
Ingress's problems are Events)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.render import fields as f
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.ingress.objects import IngressInfo
from titanium_gateway.render.reach import SHADOWED_RULE, Unreachable
from titanium_gateway.render.result import EventRecord
from titanium_gateway.render.status.ingress import API_VERSION, IngressOutcome, IngressStatuses
from titanium_gateway.twp.model import Source

_INGRESS = kinds.INGRESS.kind

INGRESS_API_VERSION = API_VERSION
#: The Event reason of an owned Ingress that has no route in the config.
NOT_SERVED = "NotServed"


def event(ctx: RenderContext, ing: IngressInfo, reason: str, message: str) -> None:
    """A Warning Event on an owned Ingress."""
    ctx.add_event(EventRecord(kind=_INGRESS, namespace=ing.namespace, name=ing.name, type="Warning", reason=reason,
                              message=message, uid=ing.uid, api_version=INGRESS_API_VERSION))


def not_served(ctx: RenderContext, ing: IngressInfo, why: str) -> None:
    """An owned Ingress none of whose routes a request can reach: a ``NotServed`` event."""
    event(ctx, ing, NOT_SERVED, f"the Ingress is not served: {why}")


def shadowed_paths(ctx: RenderContext, source: Source, paths: list[Unreachable]) -> None:
    """Unreachable paths of one Ingress: a ``ShadowedRule`` Warning Event per path."""
    uid = f.string(f.metadata(ctx.snapshot.ingresses.get(f"{source.namespace}/{source.name}")).get("uid"))
    for u in paths:
        ctx.add_event(EventRecord(kind=_INGRESS, namespace=source.namespace, name=source.name, type="Warning",
                                  reason=SHADOWED_RULE, message=u.message(), uid=uid, api_version=INGRESS_API_VERSION))


def status(ctx: RenderContext, ing: IngressInfo, addresses: tuple[Mapping[str, str], ...],
           statuses: IngressStatuses) -> None:
    """An owned Ingress's status: its outcome (``addresses``: :func:`load_balancer_ingress`),
    built by ``statuses`` (render/status/ingress.py)."""
    ctx.add_status(statuses.status(IngressOutcome(ing.namespace, ing.name, addresses)))


def load_balancer_ingress(snapshot: Any, service_ref: tuple[str, str]) -> list[dict[str, str]]:
    """``status.loadBalancer.ingress`` entries of the data-plane Service (ip / hostname), else
    its ``spec.clusterIP``; [] when the Service is absent or has no address."""
    namespace, name = service_ref
    svc = snapshot.services.get(f"{namespace}/{name}")
    if not isinstance(svc, Mapping):
        return []
    out: list[dict[str, str]] = []
    for entry in f.items(f.mapping(f.mapping(svc.get("status")).get("loadBalancer")).get("ingress")):
        entry = f.mapping(entry)
        item = {k: entry[k] for k in ("ip", "hostname") if isinstance(entry.get(k), str) and entry[k]}
        if item and item not in out:
            out.append(item)
    if out:
        return out
    cluster_ip = f.mapping(svc.get("spec")).get("clusterIP")
    if isinstance(cluster_ip, str) and cluster_ip and cluster_ip != "None":
        return [{"ip": cluster_ip}]
    return []

