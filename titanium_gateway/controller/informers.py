"""Which informers the controller runs besides the Gateway API kinds (controller/gatewayapi.py),
and how a cached object or a data plane is read from them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.kube import api as k
from titanium_gateway.kube.informer import InformerSet
from titanium_gateway.prober.prober import DataPlane, data_plane

#: EndpointSlice index: ``namespace/service`` of the slice's Service (the data plane's slices in O(1))
SLICE_SERVICE_INDEX = "service"

#: informer name -> (resource, Snapshot field or None): the kinds always served (the table of
#: kinds' ``ALWAYS`` rows) and the Pods. The Gateway API kinds (and the ConfigMaps of
#: BackendTLSPolicies) are watched where installed, at the version served (controller/gatewayapi.py)
WATCHED: Mapping[str, tuple[k.Resource, str | None]] = {
    **{row.kind: (row.resource, row.field) for row in kinds.KINDS if row.informer == kinds.ALWAYS},
    "Pod": (k.PODS, None),
}
#: informer name -> resource: with ``--data-plane-mode per-gateway``, the objects of Gateways' own
#: data planes (only those labelled by this controller: render/planes.py ``managed_selector``)
PLANE_WATCHED: Mapping[str, k.Resource] = {"PlanePod": k.PODS, "PlaneDeployment": k.DEPLOYMENTS}
#: informers whose objects the render does not read (their changes never render again)
NOT_RENDERED = frozenset({"Pod", *PLANE_WATCHED})


def cached_object(informers: InformerSet, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
    """The cached object of ``kind`` (``namespace`` "" for a cluster-scoped one), or None (also
    when ``kind`` is a Gateway API kind that is not installed, so not watched)."""
    inf = informers.get(kind)
    return inf.get(namespace or None, name) if inf is not None else None


def data_plane_in(informers: InformerSet, namespace: str, service: str, *, pods: str = "Pod",
                  pod_namespace: str | None = None) -> DataPlane:
    """The data plane behind the Service ``namespace/service`` as the caches show it now: its
    pods (of the informer ``pods``, in ``pod_namespace``) and its ready endpoints."""
    candidates = informers[pods].list()
    if pods != "Pod":  # (a Gateway's own data plane: its pods are in its namespace)
        candidates = [p for p in candidates if (p.get("metadata") or {}).get("namespace") == namespace]
    return data_plane(informers["Service"].get(namespace, service),
                      informers["EndpointSlice"].store.by_index(SLICE_SERVICE_INDEX, f"{namespace}/{service}"),
                      candidates, namespace, service, pod_namespace=pod_namespace or namespace)
