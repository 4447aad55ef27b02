"""Seed a FakeApiServer with what ``helm install`` of the chart leaves in a cluster.

``seed_release(server)`` creates the release namespace, the objects the chart pre-creates EMPTY
(root ConfigMap, part ConfigMaps, TLS Secret, Lease), the admin-token Secret, the GatewayClass
and IngressClass, and (``chart_rbac=True``) switches the server to RBAC allow-list mode with the
chart's rules (docs "Security"): the controller may only update/patch those objects by name,
patch pods, patch status, create/patch events.k8s.io Events, and read the watched kinds.
Names follow ``charts/titanium-gateway/templates/_helpers.tpl`` for a release named
``titanium-gateway`` (fullname = release name).
"""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass, field
from typing import Any

from tests.support.apiserver import FakeApiServer

__all__ = ["Release", "seed_release", "chart_rbac_rules"]

GW = "gateway.networking.k8s.io"


@dataclass
class Release:
    namespace: str = "gateway-system"
    name: str = "titanium-gateway"
    parts: int = 8
    token: str = ""
    controller_name: str = "titaniumproxy.com/gateway-controller"
    ingress_controller_name: str = "titanium.io/ingress-controller"
    gateway_class: str = "titanium"
    ingress_class: str = "titanium"
    leader_election: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def data_plane(self) -> str:
        """The data-plane Service, Deployment, root ConfigMap name."""
        return f"{self.name}-data-plane"

    @property
    def config_map(self) -> str:
        return self.data_plane

    @property
    def part_names(self) -> list[str]:
        return [f"{self.config_map}-part-{i}" for i in range(1, self.parts + 1)]

    @property
    def tls_secret(self) -> str:
        return f"{self.data_plane}-tls"

    @property
    def lease(self) -> str:
        return self.name

    @property
    def admin_token_secret(self) -> str:
        return f"{self.name}-admin-token"

    @property
    def service_account(self) -> str:
        """``namespace:name`` of the controller's ServiceAccount."""
        return f"{self.namespace}:{self.name}-controller"

    @property
    def data_plane_labels(self) -> dict[str, str]:
        return {"app.kubernetes.io/name": "titanium", "app.kubernetes.io/component": "data-plane",
                "app.kubernetes.io/instance": self.name}

    def controller_args(self) -> list[str]:
        """The controller flags the chart sets for this release."""
        args = [f"--data-plane-service={self.namespace}/{self.data_plane}",
                f"--data-plane-namespace={self.namespace}", f"--data-plane-deployment={self.data_plane}",
                f"--config-map={self.config_map}", f"--tls-secret={self.tls_secret}",
                f"--config-parts={self.parts}", f"--lease-name={self.lease}",
                f"--controller-name={self.controller_name}",
                f"--ingress-controller-name={self.ingress_controller_name}"]
        if not self.leader_election:
            args.append("--no-leader-election")
        return args


#: what creating Gateways' own data planes takes (templates/rbac.yaml, dataPlane.mode=perGateway)
DATA_PLANE_RULES = [
    {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "watch", "create", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["services"], "verbs": ["create", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "create", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch", "patch"]},
]


def chart_rbac_rules(rel: Release, *, per_gateway: bool = False) -> list[dict[str, Any]]:
    """The chart's ClusterRole/Role/bindings as objects (mirrors templates/rbac.yaml with no
    namespaces listed, the chart's default: the controllers of the tests read Secrets and
    ConfigMaps in every namespace, the default of ``--secret-namespaces``). The chart's admission
    policy is not mirrored: the in-process API server has no admission (tests/cluster checks it)."""
    sa_ns, sa_name = rel.service_account.split(":")
    subject = [{"kind": "ServiceAccount", "name": sa_name, "namespace": sa_ns}]
    name = f"{rel.name}-controller"
    gateway_kinds = ["gatewayclasses", "gateways", "httproutes", "referencegrants", "grpcroutes", "tlsroutes",
                     "tcproutes", "udproutes", "listenersets", "backendtlspolicies"]
    cluster_rules = [
        {"apiGroups": [GW], "resources": gateway_kinds, "verbs": ["get", "list", "watch"]},
        {"apiGroups": [GW], "resources": [f"{k}/status" for k in gateway_kinds if k != "referencegrants"],
         "verbs": ["patch"]},
        {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["namespaces", "services", "secrets", "configmaps"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["networking.k8s.io"], "resources": ["ingressclasses", "ingresses"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses/status"], "verbs": ["patch"]},
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
    ]
    role_rules = [
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [rel.config_map, *rel.part_names],
         "verbs": ["get", "update", "patch"]},
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [rel.tls_secret],
         "verbs": ["get", "update", "patch"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": [rel.data_plane],
         "verbs": ["get", "update", "patch"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": [rel.lease],
         "verbs": ["get", "update", "patch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]},
    ]
    if per_gateway:  # (one ClusterRole: dataPlane.gatewayNamespaces empty)
        cluster_rules = [*cluster_rules, *DATA_PLANE_RULES]
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
         "rules": cluster_rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
         "subjects": subject},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": name, "namespace": rel.namespace}, "rules": role_rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": name, "namespace": rel.namespace},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
         "subjects": subject},
    ]


def seed_release(server: FakeApiServer, rel: Release | None = None, *, chart_rbac: bool = True,
                 rbac_objects: list[dict[str, Any]] | None = None, per_gateway: bool = False) -> Release:
    """Create what the chart pre-creates; ``rbac_objects`` (e.g. from ``helm template``) replace
    the built-in mirror of the chart's RBAC. Returns the Release (names, token)."""
    rel = rel or Release()
    if not rel.token:
        rel.token = secrets.token_urlsafe(36)
    labels = {"app.kubernetes.io/part-of": "titanium-gateway", "app.kubernetes.io/instance": rel.name}
    written_by = {"gateway.titaniumproxy.com/written-by": rel.controller_name}
    if server.get_object("Namespace", None, rel.namespace) is None:
        server.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": rel.namespace}})
    for cm in [rel.config_map, *rel.part_names]:
        server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": cm, "namespace": rel.namespace, "annotations": dict(written_by),
            "labels": dict(labels, **{"app.kubernetes.io/component": "data-plane-config"})}})
    server.put_object({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {
        "name": rel.tls_secret, "namespace": rel.namespace, "annotations": dict(written_by),
        "labels": dict(labels, **{"app.kubernetes.io/component": "data-plane-certificates"})}})
    if rel.leader_election:
        server.put_object({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": {}, "metadata": {
            "name": rel.lease, "namespace": rel.namespace,
            "labels": dict(labels, **{"app.kubernetes.io/component": "controller"})}})
    server.put_object({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                       "metadata": {"name": rel.admin_token_secret, "namespace": rel.namespace},
                       "data": {"token": base64.b64encode(rel.token.encode()).decode()}})
    server.put_object({"apiVersion": f"{GW}/v1", "kind": "GatewayClass", "metadata": {"name": rel.gateway_class},
                       "spec": {"controllerName": rel.controller_name}})
    server.put_object({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                       "metadata": {"name": rel.ingress_class}, "spec": {"controller": rel.ingress_controller_name}})
    if chart_rbac or rbac_objects is not None:
        server.load_rbac(rbac_objects if rbac_objects is not None else chart_rbac_rules(rel, per_gateway=per_gateway),
                         rel.service_account)
    return rel
