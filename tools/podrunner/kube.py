"""The API calls of a node agent, over the project's REST client (titanium_gateway.kube.rest).

Besides the generic verbs: pod binding, deletion with options (grace period 0 and a uid
precondition, what the kubelet sends once a pod's containers are gone), TokenRequest for
projected service-account tokens, and status patches.
"""

from __future__ import annotations

from typing import Any

from titanium_gateway.kube.api import PODS, SERVICES, Obj, Resource
from titanium_gateway.kube.rest import RestApi

NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
__all__ = ["RunnerApi", "NODES", "PODS", "SERVICES", "SERVICE_ACCOUNTS"]


class RunnerApi(RestApi):
    def bind(self, namespace: str, name: str, uid: str, node: str) -> Obj:
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "uid": uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        return self._json("POST", PODS.path(namespace, name, "binding"), body=body, content_type="application/json")

    def delete_now(self, res: Resource, namespace: str | None, name: str, uid: str | None = None) -> Obj:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
        if uid:
            body["preconditions"] = {"uid": uid}
        return self._json("DELETE", res.path(namespace, name), body=body, content_type="application/json")

    def request_token(self, namespace: str, service_account: str, *, audiences: list[str] | None,
                      expiration_seconds: int, pod_name: str, pod_uid: str) -> Obj:
        spec: dict[str, Any] = {"expirationSeconds": expiration_seconds,
                                "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod_name,
                                                   "uid": pod_uid}}
        if audiences:
            spec["audiences"] = audiences
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        return self._json("POST", SERVICE_ACCOUNTS.path(namespace, service_account, "token"), body=body,
                          content_type="application/json")

    def replace_status(self, res: Resource, namespace: str | None, name: str, status: Obj) -> Obj:
        """Set the whole ``status`` (a JSON patch ``add /status``, which replaces it: nothing of the old status survives by
        merge, unlike a merge patch that would keep a container's old ``state.waiting`` next to
        its new ``state.running``)."""
        return self.patch(res, namespace, name, [{"op": "add", "path": "/status", "value": status}],
                          patch_type="json", subresource="status")

