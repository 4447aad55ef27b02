"""A stand-in for kube-controller-manager's root-ca-certificate-publisher controller.

Every pod whose ServiceAccount token is mounted (the default) has a projected volume with the
ConfigMap ``kube-root-ca.crt`` of its namespace, which that controller publishes in every
namespace. Where the control plane does not run it (``--publish-root-ca``), this does the same:
on every namespace, a ConfigMap ``kube-root-ca.crt`` with ``ca.crt`` = the cluster CA, created
when missing and put right when its content differs.
"""

from __future__ import annotations

import logging

from titanium_gateway.kube.api import CONFIG_MAPS, NAMESPACES, ApiError, Obj
from titanium_gateway.kube.informer import SharedInformer
from titanium_gateway.kube.rest import RestApi

log = logging.getLogger(__name__)
NAME = "kube-root-ca.crt"


class RootCaPublisher:
    def __init__(self, api: RestApi, ca_pem: str) -> None:
        self.api = api
        self.ca = ca_pem
        self.namespaces = SharedInformer(api, NAMESPACES, name="namespaces")

    def start(self) -> RootCaPublisher:
        self.namespaces.add_event_handler(on_add=self._ensure, on_update=lambda _o, n: self._ensure(n))
        self.namespaces.start()
        self.namespaces.wait_for_sync(60)
        return self

    def stop(self) -> None:
        self.namespaces.stop()

    def _ensure(self, ns_obj: Obj) -> None:
        meta = ns_obj.get("metadata") or {}
        ns = meta.get("name", "")
        if meta.get("deletionTimestamp") or (ns_obj.get("status") or {}).get("phase") == "Terminating":
            return
        try:
            cm = self.api.get(CONFIG_MAPS, ns, NAME)
        except ApiError as e:
            if e.status != 404:
                log.warning("namespace %s: reading %s failed: %s", ns, NAME, e)
                return
            cm = None
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": NAME, "namespace": ns},
                "data": {"ca.crt": self.ca}}
        try:
            if cm is None:
                self.api.create(CONFIG_MAPS, ns, body)
            elif (cm.get("data") or {}).get("ca.crt") != self.ca:
                self.api.patch(CONFIG_MAPS, ns, NAME, {"data": {"ca.crt": self.ca}}, patch_type="merge")
        except ApiError as e:
            if e.status not in (409, 403, 404):  # 403/404: the namespace is terminating
                log.warning("namespace %s: publishing %s failed: %s", ns, NAME, e)
