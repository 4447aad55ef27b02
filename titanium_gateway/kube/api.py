"""The narrow Kubernetes API surface the controller uses: raw JSON dicts in and out.

``KubeApi`` is the protocol every part of the controller codes against (informers,
writers, leader election). ``titanium_gateway.kube.rest.RestApi`` implements it over urllib3,
configured by the official ``kubernetes`` package's loaders, without model deserialization.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

Obj = dict[str, Any]
PatchType = Literal["merge", "json", "strategic", "apply"]


@dataclass(frozen=True)
class Resource:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def is_custom(self) -> bool:
        """CRD-backed (Gateway API): takes merge or JSON patches, never strategic (415)."""
        return self.group == GATEWAY_GROUP

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base


def _r(group: str, version: str, plural: str, kind: str, namespaced: bool = True) -> Resource:
    return Resource(group, version, plural, kind, namespaced)


#: the Gateway API's group; its kinds' resources are in the table of kinds (``titanium_gateway/kinds.py``)
GATEWAY_GROUP = "gateway.networking.k8s.io"
CUSTOM_RESOURCE_DEFINITIONS = _r("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                 "CustomResourceDefinition", False)
NAMESPACES = _r("", "v1", "namespaces", "Namespace", False)
SERVICES = _r("", "v1", "services", "Service")
ENDPOINT_SLICES = _r("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice")
SECRETS = _r("", "v1", "secrets", "Secret")
CONFIG_MAPS = _r("", "v1", "configmaps", "ConfigMap")
PODS = _r("", "v1", "pods", "Pod")
EVENTS = _r("events.k8s.io", "v1", "events", "Event")
CORE_EVENTS = _r("", "v1", "events", "Event")
DEPLOYMENTS = _r("apps", "v1", "deployments", "Deployment")
LEASES = _r("coordination.k8s.io", "v1", "leases", "Lease")
INGRESS_CLASSES = _r("networking.k8s.io", "v1", "ingressclasses", "IngressClass", False)
INGRESSES = _r("networking.k8s.io", "v1", "ingresses", "Ingress")


class ApiError(Exception):
    """A non-2xx answer of the API server (status code, Status reason, Retry-After)."""

    def __init__(self, status: int, reason: str = "", message: str = "", retry_after: float | None = None,
                 body: Obj | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}".strip())
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
        self.body = body or {}

    @property
    def is_conflict(self) -> bool:
        return self.status == 409

    @property
    def is_not_found(self) -> bool:
        return self.status == 404

    @property
    def is_gone(self) -> bool:
        return self.status == 410


class KubeApi(Protocol):
    def list(self, res: Resource, namespace: str | None = None, *, label_selector: str | None = None,
             field_selector: str | None = None, resource_version: str | None = None,
             limit: int | None = None, continue_token: str | None = None) -> Obj:
        """A List object: ``{"metadata": {"resourceVersion", "continue"}, "items": [...]}``."""

    def watch(self, res: Resource, namespace: str | None = None, *, resource_version: str | None = None,
              label_selector: str | None = None, field_selector: str | None = None,
              timeout_seconds: int | None = None, allow_bookmarks: bool = True,
              send_initial_events: bool = False) -> Iterator[Obj]:
        """Yields watch events ``{"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": {...}}``.

        Ends when the server closes the stream; raises ApiError for a non-2xx answer.
        ``send_initial_events`` (a streaming list, no ``resource_version``): first every object
        as ``ADDED``, then a ``BOOKMARK`` annotated ``k8s.io/initial-events-end: "true"``.
        """

    def get(self, res: Resource, namespace: str | None, name: str, *, subresource: str | None = None) -> Obj: ...

    def get_metadata(self, res: Resource, namespace: str | None, name: str) -> Obj:
        """The object's ``metadata`` only (``PartialObjectMetadata``): no ``data`` of a Secret."""

    def create(self, res: Resource, namespace: str | None, body: Obj) -> Obj: ...

    def replace(self, res: Resource, namespace: str | None, name: str, body: Obj, *,
                subresource: str | None = None) -> Obj: ...

    def patch(self, res: Resource, namespace: str | None, name: str, body: Any, *,
              patch_type: PatchType = "merge", subresource: str | None = None) -> Obj: ...

    def delete(self, res: Resource, namespace: str | None, name: str) -> Obj: ...
