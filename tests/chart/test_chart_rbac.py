"""RBAC, rule by rule, against docs/install.md "RBAC" and docs/security.md (no verb or resource
beyond them), and the admission policy that fences every cluster-wide write RBAC cannot narrow."""

from __future__ import annotations

import pytest

from .conftest import NAMESPACE, VARIANTS, by_kind, one

SA = {"kind": "ServiceAccount", "name": "titanium-gateway-controller", "namespace": NAMESPACE}
READ = {"get", "list", "watch"}

# (apiGroup, resource) -> verbs, cluster-wide.
GATEWAY_API_KINDS = ("gatewayclasses", "gateways", "httproutes", "referencegrants", "grpcroutes", "tlsroutes",
                     "tcproutes", "udproutes", "listenersets", "backendtlspolicies")
#: the kinds whose status the controller writes (or will: the route kinds, ListenerSet, BackendTLSPolicy)
GATEWAY_API_STATUS = tuple(k for k in GATEWAY_API_KINDS if k != "referencegrants")
CLUSTER_RULES = {
    **{("gateway.networking.k8s.io", plural): READ for plural in GATEWAY_API_KINDS},
    ("apiextensions.k8s.io", "customresourcedefinitions"): READ,
    ("", "namespaces"): READ,
    ("", "services"): READ,
    ("discovery.k8s.io", "endpointslices"): READ,
    ("networking.k8s.io", "ingressclasses"): READ,
    ("networking.k8s.io", "ingresses"): READ,
    **{("gateway.networking.k8s.io", f"{plural}/status"): {"patch"} for plural in GATEWAY_API_STATUS},
    ("networking.k8s.io", "ingresses/status"): {"patch"},
    ("events.k8s.io", "events"): {"create", "patch"},
}

PARTS = [f"titanium-gateway-data-plane-part-{n}" for n in range(1, 65)]
# (apiGroup, resource, resourceNames or None) -> verbs, in the release namespace.
# The objects the controller writes by name are read by name too: once per leadership term,
# so that content already there is not written again.
NAMESPACED_RULES = {
    ("", "configmaps", ("titanium-gateway-data-plane", *PARTS)): {"get", "update", "patch"},
    ("", "secrets", ("titanium-gateway-data-plane-tls",)): {"get", "update", "patch"},
    ("apps", "deployments", ("titanium-gateway-data-plane",)): {"get", "update", "patch"},
    # leader election must read the Lease it updates; by name like the writes
    ("coordination.k8s.io", "leases", ("titanium-gateway",)): {"get", "update", "patch"},
    # pods: read in the release namespace, and patch for the config-poke (names unknown ahead)
    ("", "pods", None): {"get", "list", "watch", "patch"},
}
# Secret and ConfigMap reads: a Role of its own in each namespace whose Secrets the controller reads
SECRET_READ_RULES = {("", "secrets", None): READ, ("", "configmaps", None): READ}
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection"}
#: the cluster-wide writes the admission policy does not fence: status (the status subresource
#: changes nothing else) and Events (records, docs/security.md)
UNFENCED_WRITES = {
    *(("gateway.networking.k8s.io", f"{plural}/status") for plural in GATEWAY_API_STATUS),
    ("networking.k8s.io", "ingresses/status"),
    ("events.k8s.io", "events"),
}


def flatten(rules: list[dict], with_names: bool) -> dict:
    """One entry per (group, resource[, names]); fails on wildcards, nonResourceURLs and repeats."""
    out: dict = {}
    for rule in rules:
        assert "nonResourceURLs" not in rule
        assert set(rule) <= {"apiGroups", "resources", "verbs", "resourceNames"}, rule
        for field in ("apiGroups", "resources", "verbs", "resourceNames"):
            assert "*" not in (rule.get(field) or []), f"wildcard in {rule}"
        names = tuple(rule["resourceNames"]) if rule.get("resourceNames") else None
        if not with_names:
            assert names is None, f"cluster-wide rule limited by name: {rule}"
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                key = (group, resource, names) if with_names else (group, resource)
                assert key not in out, f"{key} granted twice"
                out[key] = set(rule["verbs"])
    return out


def test_cluster_role_rules_exactly(helm):
    role = one(helm.template(), "ClusterRole", "titanium-gateway-controller")
    # (no namespaces listed: certificates and CA ConfigMaps read in every namespace, read only)
    assert flatten(role["rules"], with_names=False) == {**CLUSTER_RULES, ("", "secrets"): READ,
                                                       ("", "configmaps"): READ}


def main_role(docs: list[dict]) -> dict:
    """The release namespace's Role of the writes (not its Secret-read Role)."""
    (role,) = [r for r in by_kind(docs, "Role")
               if r["metadata"]["namespace"] == NAMESPACE and r["metadata"]["name"] == "titanium-gateway-controller"]
    return role


def test_namespaced_role_rules_exactly_and_by_name(helm):
    docs = helm.template()
    role = main_role(docs)
    assert flatten(role["rules"], with_names=True) == NAMESPACED_RULES
    # the names granted are the objects the chart pre-creates and the controller is told to use
    kinds = {"configmaps": "ConfigMap", "secrets": "Secret", "deployments": "Deployment", "leases": "Lease"}
    for group, resource, names in NAMESPACED_RULES:
        for name in names or ():
            one(docs, kinds[resource], name)
            assert group == {"Deployment": "apps", "Lease": "coordination.k8s.io"}.get(kinds[resource], "")


def test_config_parts_value_drives_the_granted_names(helm):
    docs = helm.template({"dataPlane": {"configParts": 2}})
    role = main_role(docs)
    (cm_rule,) = [r for r in role["rules"] if r["resources"] == ["configmaps"]]
    assert cm_rule["resourceNames"] == ["titanium-gateway-data-plane", "titanium-gateway-data-plane-part-1",
                                        "titanium-gateway-data-plane-part-2"]


def secret_readers(docs: list[dict]) -> dict[str, dict]:
    """namespace -> the Role that lets the controller read the Secrets there (checked: its rules
    are exactly the read, its binding names only the controller)."""
    roles = {r["metadata"]["namespace"]: r for r in by_kind(docs, "Role")
             if r["metadata"]["name"] == "titanium-gateway-controller-secrets"}
    for ns, role in roles.items():
        assert flatten(role["rules"], with_names=True) == SECRET_READ_RULES
        (binding,) = [b for b in by_kind(docs, "RoleBinding")
                      if b["metadata"]["namespace"] == ns and b["metadata"]["name"] == role["metadata"]["name"]]
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                      "name": role["metadata"]["name"]}
        assert binding["subjects"] == [SA]
    return roles


def test_default_reads_certificates_cluster_wide_read_only(helm):
    """No namespaces listed: the release serves every namespace, so a certificate in a Gateway's
    own namespace works after a default install; read only (no write on Secrets is cluster-wide
    but the data-plane one the admission policy fences)."""
    docs = helm.template()
    cluster = flatten(one(docs, "ClusterRole", "titanium-gateway-controller")["rules"], with_names=False)
    assert cluster == {**CLUSTER_RULES, ("", "secrets"): READ, ("", "configmaps"): READ}
    assert secret_readers(docs) == {}
    assert flatten(main_role(docs)["rules"], with_names=True) == NAMESPACED_RULES
    env = {e["name"]: e.get("value") for e in one(docs, "Deployment", "titanium-gateway-controller")
           ["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert "TITANIUM_GATEWAY_SECRET_NAMESPACES" not in env  # (every namespace)


@pytest.mark.parametrize("variant", ["secret-namespaces", "shared-secret-namespaces"])
def test_listed_namespaces_leave_nothing_cluster_wide(helm, variant):
    """The namespaces listed: every Secret read and every write is a Role there; no ClusterRole
    grants a Secret read or any write (status and Events aside)."""
    docs = helm.template(VARIANTS[variant])
    for role in by_kind(docs, "ClusterRole"):
        for (group, resource), verbs in flatten(role["rules"], with_names=False).items():
            assert (group, resource) not in {("", "secrets"), ("", "configmaps")}, (role["metadata"]["name"], resource)
            if verbs & WRITE_VERBS:
                assert (group, resource) in UNFENCED_WRITES, (role["metadata"]["name"], group, resource, verbs)
    readers = sorted(["apps", "shop", NAMESPACE])
    assert sorted(secret_readers(docs)) == readers
    assert flatten(main_role(docs)["rules"], with_names=True) == NAMESPACED_RULES
    env = {e["name"]: e.get("value") for e in one(docs, "Deployment", "titanium-gateway-controller")
           ["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert sorted(env["TITANIUM_GATEWAY_SECRET_NAMESPACES"].split(",")) == readers
    # the release namespace listed again: still one Role there
    docs = helm.template({"controller": {"secretNamespaces": [NAMESPACE, "apps"]}, "dataPlane": {"mode": "shared"}})
    assert sorted(secret_readers(docs)) == sorted(["apps", NAMESPACE])


def test_secret_namespaces_alone_cannot_leave_per_gateway_writes_cluster_wide(helm):
    err = helm.template_fails({"controller": {"secretNamespaces": ["apps"]}})
    assert "list dataPlane.gatewayNamespaces too" in err


def test_cluster_wide_secret_read_can_be_forced_or_refused(helm):
    docs = helm.template(VARIANTS["secrets-cluster-wide"])
    cluster = flatten(one(docs, "ClusterRole", "titanium-gateway-controller")["rules"], with_names=False)
    assert cluster == {**CLUSTER_RULES, ("", "secrets"): READ, ("", "configmaps"): READ}
    assert secret_readers(docs) == {}
    # both would leave one of them without effect: refused, with the reason
    proc = helm.run(*helm.template_args({"controller": {"secretsClusterWide": True, "secretNamespaces": ["apps"]},
                                         "dataPlane": {"mode": "shared"}}), check=False)
    assert proc.returncode != 0
    assert "leave controller.secretNamespaces and dataPlane.gatewayNamespaces empty" in proc.stderr
    # false: the release namespace only
    docs = helm.template({"controller": {"secretsClusterWide": False}})
    cluster = flatten(one(docs, "ClusterRole", "titanium-gateway-controller")["rules"], with_names=False)
    assert ("", "secrets") not in cluster
    assert sorted(secret_readers(docs)) == [NAMESPACE]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_bindings_grant_only_the_controller(helm, variant):
    docs = helm.template(VARIANTS[variant])
    role_names = {(r["kind"], r["metadata"].get("namespace"), r["metadata"]["name"])
                  for r in by_kind(docs, "Role") + by_kind(docs, "ClusterRole")}
    bindings = by_kind(docs, "RoleBinding") + by_kind(docs, "ClusterRoleBinding")
    assert len(bindings) == len(role_names)
    for b in bindings:
        assert b["subjects"] == [SA]
        ns = b["metadata"].get("namespace") if b["roleRef"]["kind"] == "Role" else None
        assert (b["roleRef"]["kind"], ns, b["roleRef"]["name"]) in role_names
    controller = one(docs, "Deployment", "titanium-gateway-controller")["spec"]["template"]["spec"]
    assert controller["serviceAccountName"] == SA["name"]
    data_plane = one(docs, "Deployment", "titanium-gateway-data-plane")["spec"]["template"]["spec"]
    assert data_plane["serviceAccountName"] != SA["name"]
    assert data_plane["automountServiceAccountToken"] is False


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_no_verb_or_resource_beyond_the_security_section(helm, variant):
    docs = helm.template(VARIANTS[variant])
    allowed = {(g, r): v for (g, r), v in CLUSTER_RULES.items()}
    for (g, r, _), v in [*NAMESPACED_RULES.items(), *SECRET_READ_RULES.items()]:
        allowed[(g, r)] = allowed.get((g, r), set()) | v
    allowed[("", "secrets")] = allowed[("", "secrets")] | READ  # (no namespaces listed: cluster-wide)
    allowed[("", "configmaps")] = allowed[("", "configmaps")] | READ
    for role in by_kind(docs, "Role") + by_kind(docs, "ClusterRole"):
        # the Gateways' own data planes: created, updated and deleted (their rules exactly, above)
        data_planes = role["metadata"]["name"] == "titanium-gateway-controller-data-planes"
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    granted = DATA_PLANE_RULES.get((group, resource), set()) if data_planes else \
                        allowed.get((group, resource), set())
                    assert set(rule["verbs"]) <= granted, (role["metadata"], rule)
                    forbidden = {"deletecollection", "escalate", "bind", "impersonate"} | (
                        set() if data_planes else {"delete"})
                    assert not forbidden & set(rule["verbs"])


# dataPlane.mode=perGateway (the default): what creating each Gateway's own data plane takes,
# cluster-wide or in each of dataPlane.gatewayNamespaces
DATA_PLANE_RULES = {
    ("apps", "deployments"): {"get", "list", "watch", "create", "patch", "delete"},
    ("", "services"): {"create", "patch", "delete"},
    ("", "configmaps"): {"get", "list", "create", "patch", "delete"},
    # never read: written with a JSON patch that tests the labels first, or created
    ("", "secrets"): {"create", "patch", "delete"},
    ("", "pods"): {"list", "watch", "patch"},
}
DATA_PLANES = "titanium-gateway-controller-data-planes"


def test_per_gateway_data_planes_are_created_with_a_cluster_role_by_default(helm):
    docs = helm.template()
    role = one(docs, "ClusterRole", DATA_PLANES)
    assert flatten(role["rules"], with_names=False) == DATA_PLANE_RULES
    binding = one(docs, "ClusterRoleBinding", DATA_PLANES)
    assert binding["roleRef"]["name"] == DATA_PLANES and binding["subjects"] == [SA]
    assert not [r for r in by_kind(docs, "Role") if r["metadata"]["name"] == DATA_PLANES]


def test_gateway_namespaces_narrow_the_data_plane_rights_to_roles_there(helm):
    docs = helm.template({"dataPlane": {"gatewayNamespaces": ["apps", "edge"]}})
    assert not [r for r in by_kind(docs, "ClusterRole") if r["metadata"]["name"] == DATA_PLANES]
    roles = {r["metadata"]["namespace"]: r for r in by_kind(docs, "Role") if r["metadata"]["name"] == DATA_PLANES}
    assert sorted(roles) == ["apps", "edge"]
    for ns, role in roles.items():
        assert flatten(role["rules"], with_names=False) == DATA_PLANE_RULES
        (binding,) = [b for b in by_kind(docs, "RoleBinding")
                      if b["metadata"]["namespace"] == ns and b["metadata"]["name"] == DATA_PLANES]
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": DATA_PLANES}
        assert binding["subjects"] == [SA]


def test_shared_mode_creates_nothing_per_gateway(helm):
    docs = helm.template({"dataPlane": {"mode": "shared"}})
    assert not [r for r in [*by_kind(docs, "ClusterRole"), *by_kind(docs, "Role")]
                if r["metadata"]["name"] == DATA_PLANES]
    proc = helm.run(*helm.template_args({"dataPlane": {"mode": "shared", "gatewayNamespaces": ["apps"]}}), check=False)
    assert proc.returncode != 0
