"""The ValidatingAdmissionPolicy that fences the controller's writes (templates/admission-policy.yaml,
docs/security.md), on ``helm template``: every write RBAC grants without naming the object is
matched by it, it applies to the controller's ServiceAccount only, and it names the image,
ServiceAccount and controller hash the chart gives the data planes (the CEL itself runs on a real
API server: tests/cluster/test_admission_policy.py)."""

from __future__ import annotations

import pytest

from titanium_gateway.render.planes import controller_label

from .conftest import NAMESPACE, VARIANTS, by_kind, one
from .test_chart_rbac import SA, UNFENCED_WRITES, WRITE_VERBS

POLICY = "titanium-gateway-controller-writes"
#: RBAC verb -> the admission operation it reaches the policy as
OPERATIONS = {"create": "CREATE", "update": "UPDATE", "patch": "UPDATE", "delete": "DELETE",
              "deletecollection": "DELETE"}
USER = f"system:serviceaccount:{SA['namespace']}:{SA['name']}"


def fenced(policy: dict, group: str, resource: str, operation: str) -> bool:
    return any(group in r["apiGroups"] and resource in r["resources"] and operation in r["operations"]
               and r.get("scope", "*") in ("*", "Namespaced")
               for r in policy["spec"]["matchConstraints"]["resourceRules"])


def controller_rules(docs: list[dict]) -> list[tuple[str, dict]]:
    """(role name, rule) of every Role and ClusterRole bound to the controller."""
    bound = {(b["roleRef"]["kind"], b["metadata"].get("namespace") if b["roleRef"]["kind"] == "Role" else None,
              b["roleRef"]["name"]) for b in by_kind(docs, "RoleBinding") + by_kind(docs, "ClusterRoleBinding")
             if SA in b["subjects"]}
    out = []
    for role in by_kind(docs, "Role") + by_kind(docs, "ClusterRole"):
        key = (role["kind"], role["metadata"].get("namespace"), role["metadata"]["name"])
        if key in bound:
            out += [(role["metadata"]["name"], rule) for rule in role["rules"]]
    return out


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_write_not_limited_by_name_is_fenced(helm, variant):
    docs = helm.template(VARIANTS[variant])
    policy = one(docs, "ValidatingAdmissionPolicy", POLICY)
    checked = 0
    for role, rule in controller_rules(docs):
        if rule.get("resourceNames"):
            continue  # (the chart's own objects, by name, in the release namespace)
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                if (group, resource) in UNFENCED_WRITES:
                    continue
                for verb in set(rule["verbs"]) & WRITE_VERBS:
                    checked += 1
                    assert fenced(policy, group, resource, OPERATIONS[verb]), (role, group, resource, verb)
    assert checked, "no write checked"


def test_cluster_wide_writes_by_default_are_all_fenced(helm):
    docs = helm.template()
    role = one(docs, "ClusterRole", "titanium-gateway-controller-data-planes")
    policy = one(docs, "ValidatingAdmissionPolicy", POLICY)
    kinds = set()
    for rule in role["rules"]:
        for resource in rule["resources"]:
            for verb in set(rule["verbs"]) & WRITE_VERBS:
                assert fenced(policy, rule["apiGroups"][0], resource, OPERATIONS[verb])
                kinds.add(resource)
    assert kinds == {"deployments", "services", "configmaps", "secrets", "pods"}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_policy_binds_the_controller_only_and_denies(helm, variant):
    docs = helm.template(VARIANTS[variant])
    policy = one(docs, "ValidatingAdmissionPolicy", POLICY)
    assert policy["spec"]["failurePolicy"] == "Fail"
    (cond,) = policy["spec"]["matchConditions"]
    assert cond["expression"] == f'request.userInfo.username == "{USER}"'
    binding = one(docs, "ValidatingAdmissionPolicyBinding", POLICY)
    assert binding["spec"]["policyName"] == POLICY
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert "paramRef" not in binding["spec"] and "matchResources" not in binding["spec"]  # every namespace
    assert all(v.get("reason") == "Forbidden" and v.get("message") for v in policy["spec"]["validations"])


def policy_text(policy: dict) -> str:
    spec = policy["spec"]
    return "\n".join([*(v["expression"] for v in spec["variables"]),
                      *(v["expression"] for v in spec["validations"])])


@pytest.mark.parametrize("values", [{}, {"dataPlane": {"image": {"repository": "registry.example/titanium",
                                                                   "tag": "2.0"}},
                                         "controller": {"controllerName": "example.com/other"}},
                                    {"dataPlane": {"image": {"digest": "sha256:" + "a" * 64},
                                                   "serviceAccount": {"name": "edge"}}}])
def test_the_policy_names_what_the_chart_gives_the_data_planes(helm, values):
    """The image, ServiceAccount, controller hash and shared object names are rendered from the
    same values as the data planes: a helm upgrade that changes them changes the policy too."""
    docs = helm.template(values)
    text = policy_text(one(docs, "ValidatingAdmissionPolicy", POLICY))
    pod = one(docs, "Deployment", "titanium-gateway-data-plane")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert f'c.image == "{container["image"]}"' in text
    assert f'"{pod["serviceAccountName"]}"]' in text
    name = (values.get("controller") or {}).get("controllerName", "titaniumproxy.com/gateway-controller")
    assert f'orValue("") == "{controller_label(name)}"' in text
    assert f'request.namespace == "{NAMESPACE}"' in text
    for obj in ("titanium-gateway-data-plane", "titanium-gateway-data-plane-tls"):
        assert f'request.name == "{obj}"' in text
    # the shared data plane's pod spec (the one the per-Gateway template copies) passes the
    # static part of the pod checks: nothing the policy refuses is in the chart's own pods
    assert pod["automountServiceAccountToken"] is False
    assert not {"hostNetwork", "hostPID", "hostIPC", "initContainers"} & set(pod)
    assert pod["securityContext"]["runAsNonRoot"] is True
    sc = container["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"]["drop"] == ["ALL"] and not sc.get("privileged")
    assert all("emptyDir" in v or set(v) == {"name", "projected"} for v in pod["volumes"])


def test_the_per_gateway_template_is_what_the_policy_admits(helm):
    """The data-plane template the controller copies into every Gateway's Deployment has the
    chart's image and the pod security the policy asks for."""
    import yaml
    docs = helm.template()
    tpl = yaml.safe_load(one(docs, "ConfigMap", "titanium-gateway-data-plane-template")["data"]["data-plane.yaml"])
    spec = tpl["pod"]["spec"]
    shared = one(docs, "Deployment", "titanium-gateway-data-plane")["spec"]["template"]["spec"]
    assert [c["image"] for c in spec["containers"]] == [c["image"] for c in shared["containers"]]
    assert spec["securityContext"] == shared["securityContext"]


def test_an_api_server_without_the_policy_api_fails_the_install(helm):
    """A cluster whose discovery lists admission kinds but not ValidatingAdmissionPolicy (older
    than 1.30, or the API disabled) fails at install, with what to do."""
    proc = helm.run(*helm.template_args({}, "--api-versions",
                                        "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration"), check=False)
    assert proc.returncode != 0
    assert "does not serve admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy" in proc.stderr
    docs = helm.template({}, "--api-versions", "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration",
                         "--api-versions", "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy")
    one(docs, "ValidatingAdmissionPolicy", POLICY)


def test_switching_the_policy_off_needs_namespaced_writes(helm):
    err = helm.template_fails({"admissionPolicy": {"enabled": False}})
    assert "list dataPlane.gatewayNamespaces" in err
    for values in ({"admissionPolicy": {"enabled": False}, "dataPlane": {"gatewayNamespaces": ["apps"]}},
                   {"admissionPolicy": {"enabled": False}, "dataPlane": {"mode": "shared"}}):
        docs = helm.template(values)
        assert not by_kind(docs, "ValidatingAdmissionPolicy") and not by_kind(docs, "ValidatingAdmissionPolicyBinding")
        env = {e["name"] for e in one(docs, "Deployment", "titanium-gateway-controller")
               ["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert "TITANIUM_GATEWAY_ADMISSION_POLICY" not in env
