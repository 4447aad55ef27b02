"""RBAC, rule by rule, against docs/install.md "Security" (no verb or resource beyond it)."""

from __future__ import annotations

import pytest

from .conftest import NAMESPACE, VARIANTS, by_kind, one

SA = {"kind": "ServiceAccount", "name": "titanium-gateway-controller", "namespace": NAMESPACE}
READ = {"get", "list", "watch"}

# (apiGroup, resource) -> verbs, cluster-wide.
CLUSTER_RULES = {
    ("gateway.networking.k8s.io", "gatewayclasses"): READ,
    ("gateway.networking.k8s.io", "gateways"): READ,
    ("gateway.networking.k8s.io", "httproutes"): READ,
    ("gateway.networking.k8s.io", "referencegrants"): READ,
    ("", "namespaces"): READ,
    ("", "services"): READ,
    ("", "secrets"): READ,
    ("discovery.k8s.io", "endpointslices"): READ,
    ("networking.k8s.io", "ingressclasses"): READ,
    ("networking.k8s.io", "ingresses"): READ,
    ("gateway.networking.k8s.io", "gatewayclasses/status"): {"patch"},
    ("gateway.networking.k8s.io", "gateways/status"): {"patch"},
    ("gateway.networking.k8s.io", "httproutes/status"): {"patch"},
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
    role = one(helm.template(), "ClusterRole")
    assert flatten(role["rules"], with_names=False) == CLUSTER_RULES


def test_namespaced_role_rules_exactly_and_by_name(helm):
    docs = helm.template()
    (role,) = [r for r in by_kind(docs, "Role") if r["metadata"]["namespace"] == NAMESPACE]
    assert flatten(role["rules"], with_names=True) == NAMESPACED_RULES
    # the names granted are the objects the chart pre-creates and the controller is told to use
    kinds = {"configmaps": "ConfigMap", "secrets": "Secret", "deployments": "Deployment", "leases": "Lease"}
    for group, resource, names in NAMESPACED_RULES:
        for name in names or ():
            one(docs, kinds[resource], name)
            assert group == {"Deployment": "apps", "Lease": "coordination.k8s.io"}.get(kinds[resource], "")


def test_config_parts_value_drives_the_granted_names(helm):
    docs = helm.template({"dataPlane": {"configParts": 2}})
    (role,) = by_kind(docs, "Role")
    (cm_rule,) = [r for r in role["rules"] if r["resources"] == ["configmaps"]]
    assert cm_rule["resourceNames"] == ["titanium-gateway-data-plane", "titanium-gateway-data-plane-part-1",
                                        "titanium-gateway-data-plane-part-2"]


def test_secret_namespaces_variant(helm):
    docs = helm.template(VARIANTS["secret-namespaces"])
    cluster = flatten(one(docs, "ClusterRole")["rules"], with_names=False)
    expected = dict(CLUSTER_RULES)
    del expected[("", "secrets")]
    assert cluster == expected, "no cluster-wide Secret read with controller.secretNamespaces"
    roles = {r["metadata"]["namespace"]: r for r in by_kind(docs, "Role")}
    assert sorted(roles) == sorted(["apps", "shop", NAMESPACE])
    for ns in ("apps", "shop"):
        assert flatten(roles[ns]["rules"], with_names=True) == {("", "secrets", None): READ}
        (binding,) = [b for b in by_kind(docs, "RoleBinding") if b["metadata"]["namespace"] == ns]
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                      "name": roles[ns]["metadata"]["name"]}
        assert binding["subjects"] == [SA]
    assert flatten(roles[NAMESPACE]["rules"], with_names=True) == NAMESPACED_RULES


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
    for (g, r, _), v in NAMESPACED_RULES.items():
        allowed[(g, r)] = allowed.get((g, r), set()) | v
    for role in by_kind(docs, "Role") + by_kind(docs, "ClusterRole"):
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    assert set(rule["verbs"]) <= allowed.get((group, resource), set()), (role["metadata"], rule)
                    assert not {"delete", "deletecollection", "escalate", "bind", "impersonate"} & set(rule["verbs"])
