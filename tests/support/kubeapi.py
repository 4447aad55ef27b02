"""A small REST client for a REAL Kubernetes API server, for test harnesses (``tests/cluster``).

Independent of the controller's own client (``titanium_gateway.kube``) on purpose: what the
tests use to arrange and observe must not share the code under test. Objects are raw JSON
dicts; kinds are looked up in :data:`KINDS`. The read side offers ``get_object(kind, ns, name)``
(``None`` when absent), the call the stub data plane's ``follow`` makes on a ``FakeApiServer``,
so a ``StubDataPlane`` follows the real API's ConfigMaps unchanged::

    api = KubeApi.from_kubeconfig(".cache/kube/cluster/admin.kubeconfig")
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})
    api.patch("Service", "apps", "web", {"status": {...}}, subresource="status")
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import tempfile
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import requests
import yaml

__all__ = ["KubeApi", "KubeApiError", "Kind", "KINDS"]


@dataclass(frozen=True)
class Kind:
    group_version: str
    plural: str
    namespaced: bool = True

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        root = f"/api/{self.group_version}" if self.group_version == "v1" else f"/apis/{self.group_version}"
        p = root + (f"/namespaces/{namespace}" if self.namespaced and namespace else "") + f"/{self.plural}"
        if name:
            p += f"/{name}"
            if subresource:
                p += f"/{subresource}"
        return p


GW = "gateway.networking.k8s.io"
KINDS: dict[str, Kind] = {
    "Namespace": Kind("v1", "namespaces", False),
    "Node": Kind("v1", "nodes", False),
    "Service": Kind("v1", "services"),
    "Secret": Kind("v1", "secrets"),
    "ConfigMap": Kind("v1", "configmaps"),
    "Pod": Kind("v1", "pods"),
    "ServiceAccount": Kind("v1", "serviceaccounts"),
    "CoreEvent": Kind("v1", "events"),
    "Event": Kind("events.k8s.io/v1", "events"),
    "EndpointSlice": Kind("discovery.k8s.io/v1", "endpointslices"),
    "Deployment": Kind("apps/v1", "deployments"),
    "ReplicaSet": Kind("apps/v1", "replicasets"),
    "Lease": Kind("coordination.k8s.io/v1", "leases"),
    "Ingress": Kind("networking.k8s.io/v1", "ingresses"),
    "IngressClass": Kind("networking.k8s.io/v1", "ingressclasses", False),
    "GatewayClass": Kind(f"{GW}/v1", "gatewayclasses", False),
    "Gateway": Kind(f"{GW}/v1", "gateways"),
    "HTTPRoute": Kind(f"{GW}/v1", "httproutes"),
    "GRPCRoute": Kind(f"{GW}/v1", "grpcroutes"),
    "TLSRoute": Kind(f"{GW}/v1", "tlsroutes"),
    "ListenerSet": Kind(f"{GW}/v1", "listenersets"),
    "BackendTLSPolicy": Kind(f"{GW}/v1", "backendtlspolicies"),
    "ReferenceGrant": Kind(f"{GW}/v1beta1", "referencegrants"),
    "CustomResourceDefinition": Kind("apiextensions.k8s.io/v1", "customresourcedefinitions", False),
    "ValidatingWebhookConfiguration": Kind("admissionregistration.k8s.io/v1", "validatingwebhookconfigurations",
                                           False),
    "ValidatingAdmissionPolicy": Kind("admissionregistration.k8s.io/v1", "validatingadmissionpolicies", False),
    "ValidatingAdmissionPolicyBinding": Kind("admissionregistration.k8s.io/v1", "validatingadmissionpolicybindings",
                                             False),
    "ClusterRole": Kind("rbac.authorization.k8s.io/v1", "clusterroles", False),
    "Role": Kind("rbac.authorization.k8s.io/v1", "roles"),
}

PATCH_TYPES = {"merge": "application/merge-patch+json", "json": "application/json-patch+json",
               "strategic": "application/strategic-merge-patch+json"}


class KubeApiError(Exception):
    """A non-2xx answer: ``status`` (HTTP code), ``reason`` and ``message`` of the Status body."""

    def __init__(self, method: str, path: str, status: int, body: Any) -> None:
        self.method, self.path, self.status, self.body = method, path, status, body
        self.reason = body.get("reason", "") if isinstance(body, dict) else ""
        self.message = body.get("message", "") if isinstance(body, dict) else str(body)[:500]
        super().__init__(f"{method} {path}: {status} {self.reason}: {self.message}")


def kind_of(obj: dict[str, Any]) -> Kind:
    kind = obj["kind"]
    if kind == "Event" and obj.get("apiVersion") == "v1":
        kind = "CoreEvent"
    return KINDS[kind]


def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


class KubeApi:
    """Requests to one API server with a bearer token, verifying its certificate."""

    def __init__(self, server: str, token: str, ca_file: str | None, *, timeout: float = 30.0) -> None:
        self.server = server.rstrip("/")
        self.token = token
        self.ca_file = ca_file
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"
        self.session.headers["User-Agent"] = "titanium-gateway-tests"
        # The cluster's CA, whatever REQUESTS_CA_BUNDLE & co. say; no proxies from the environment.
        self.session.trust_env = False
        self.verify: str | bool = ca_file if ca_file else True

    @classmethod
    def from_kubeconfig(cls, path: str | os.PathLike[str], **kw: Any) -> KubeApi:
        """The current context's server, CA and token of a kubeconfig (token users only)."""
        with open(path) as f:
            cfg = yaml.safe_load(f)
        ctx = next(c["context"] for c in cfg["contexts"] if c["name"] == cfg["current-context"])
        cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
        user = next(u["user"] for u in cfg["users"] if u["name"] == ctx["user"])
        ca = cluster.get("certificate-authority")
        temp_ca = None
        if ca is None and cluster.get("certificate-authority-data"):
            fd, ca = tempfile.mkstemp(prefix="kube-ca-", suffix=".crt")
            with os.fdopen(fd, "wb") as out:
                out.write(base64.b64decode(cluster["certificate-authority-data"]))
            temp_ca = ca
        api = cls(cluster["server"], user["token"], ca, **kw)
        if temp_ca is not None:
            # removed on close(), or when the client is collected or the interpreter exits
            api._remove_ca = weakref.finalize(api, _unlink, temp_ca)
        return api

    _remove_ca: weakref.finalize | None = None

    def close(self) -> None:
        self.session.close()
        if self._remove_ca is not None:
            self._remove_ca()

    # ------------------------------------------------------------------ raw

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None, body: Any = None,
                content_type: str = "application/json", ok: tuple[int, ...] = (), stream: bool = False,
                timeout: float | None = None) -> requests.Response:
        data = None if body is None else (body if isinstance(body, (bytes, str)) else json.dumps(body))
        headers = {"Content-Type": content_type} if data is not None else {}
        for attempt in range(10):
            r = self.session.request(method, self.server + path, params=params, data=data, headers=headers,
                                     stream=stream, timeout=timeout or self.timeout, verify=self.verify)
            # 429: not served (priority and fairness, or a CRD's storage still initializing): again
            if r.status_code != 429 or 429 in ok or attempt == 9:
                break
            r.close()
            try:
                time.sleep(min(float(r.headers.get("Retry-After", "1")), 5.0))
            except ValueError:
                time.sleep(1.0)
        if r.status_code >= 400 and r.status_code not in ok:
            try:
                parsed: Any = r.json()
            except ValueError:
                parsed = r.text
            raise KubeApiError(method, path, r.status_code, parsed)
        return r

    def json(self, method: str, path: str, **kw: Any) -> Any:
        return self.request(method, path, **kw).json()

    # ------------------------------------------------------------------ objects

    def get(self, kind: str, namespace: str | None, name: str, subresource: str | None = None) -> dict[str, Any]:
        return self.json("GET", KINDS[kind].path(namespace, name, subresource))

    def get_object(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist (the FakeApiServer read call)."""
        try:
            return self.get(kind, namespace, name)
        except KubeApiError as e:
            if e.status == 404:
                return None
            raise

    def list(self, kind: str, namespace: str | None = None, *, label_selector: str | None = None,
             field_selector: str | None = None) -> list[dict[str, Any]]:
        return self.list_raw(kind, namespace, label_selector=label_selector, field_selector=field_selector)["items"]

    def list_raw(self, kind: str, namespace: str | None = None, **selectors: str | None) -> dict[str, Any]:
        params = {k: v for k, v in (("labelSelector", selectors.get("label_selector")),
                                    ("fieldSelector", selectors.get("field_selector"))) if v}
        return self.json("GET", KINDS[kind].path(namespace), params=params)

    def create(self, obj: dict[str, Any], *, params: dict[str, Any] | None = None) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        return self.json("POST", kind_of(obj).path(meta.get("namespace")), body=obj, params=params)

    def replace(self, obj: dict[str, Any], subresource: str | None = None) -> dict[str, Any]:
        meta = obj["metadata"]
        return self.json("PUT", kind_of(obj).path(meta.get("namespace"), meta["name"], subresource), body=obj)

    def patch(self, kind: str, namespace: str | None, name: str, body: Any, *, type: str = "merge",
              subresource: str | None = None, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.json("PATCH", KINDS[kind].path(namespace, name, subresource), body=body,
                         content_type=PATCH_TYPES[type], params=params)

    def delete(self, kind: str, namespace: str | None, name: str, *, grace_period: int | None = None,
               missing_ok: bool = True, propagation: str | None = None) -> None:
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_period is not None:
            body["gracePeriodSeconds"] = grace_period
        if propagation:
            body["propagationPolicy"] = propagation
        self.request("DELETE", KINDS[kind].path(namespace, name), body=body, ok=(404,) if missing_ok else ())

    def put_object(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create, or replace what is there (a read-modify-write keeping the resourceVersion)."""
        try:
            return self.create(obj)
        except KubeApiError as e:
            if e.status != 409 or e.reason != "AlreadyExists":
                raise
        meta = obj["metadata"]

        def swap(cur: dict[str, Any]) -> dict[str, Any]:
            new = json.loads(json.dumps(obj))
            new["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
            return new
        return self.update_object(obj["kind"], meta.get("namespace"), meta["name"], swap)

    def update_object(self, kind: str, namespace: str | None, name: str,
                      fn: Callable[[dict[str, Any]], dict[str, Any] | None], *, subresource: str | None = None,
                      attempts: int = 20) -> dict[str, Any]:
        """Read, change (``fn`` edits in place or returns the new object), PUT; again on 409."""
        for _ in range(attempts):
            cur = self.get(kind, namespace, name)
            new = fn(cur) or cur
            try:
                return self.replace(new, subresource)
            except KubeApiError as e:
                if e.status != 409:
                    raise
                time.sleep(0.05)
        raise AssertionError(f"{kind} {namespace}/{name}: still conflicting after {attempts} attempts")

    def watch(self, kind: str, namespace: str | None = None, *, resource_version: str | None = None,
              timeout_seconds: int = 60, **selectors: str) -> Iterator[dict[str, Any]]:
        """Watch events (dicts with ``type`` and ``object``) until the server ends the stream."""
        params: dict[str, Any] = {"watch": "1", "timeoutSeconds": timeout_seconds, "allowWatchBookmarks": "true"}
        if resource_version:
            params["resourceVersion"] = resource_version
        if selectors.get("label_selector"):
            params["labelSelector"] = selectors["label_selector"]
        r = self.request("GET", KINDS[kind].path(namespace), params=params, stream=True,
                         timeout=timeout_seconds + 10)
        try:
            # chunk_size=None: each piece as it arrives (iter_lines' fixed-size reads would hold
            # an event back until more bytes follow it)
            buf = b""
            for piece in r.iter_content(chunk_size=None):
                buf += piece
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
        finally:
            r.close()

    def token_request(self, namespace: str, service_account: str, *, seconds: int = 3600,
                      audiences: list[str] | None = None) -> str:
        """A token for a ServiceAccount from the TokenRequest API."""
        spec: dict[str, Any] = {"expirationSeconds": seconds}
        if audiences:
            spec["audiences"] = audiences
        out = self.json("POST", KINDS["ServiceAccount"].path(namespace, service_account, "token"),
                        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
        return str(out["status"]["token"])

    def version(self) -> dict[str, Any]:
        return self.json("GET", "/version")
