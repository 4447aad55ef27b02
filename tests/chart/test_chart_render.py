"""helm lint / helm template for every variant, schema validation of every rendered object, and
the wiring between the controller's options and the objects the chart creates."""

from __future__ import annotations

import base64
import copy
import re
from functools import cache

import jsonschema
import kubernetes_validate
import pytest
import yaml

from .conftest import CHART, NAMESPACE, ROOT, VARIANTS, by_kind, one

KUBE_VERSION = "1.31"
GATEWAY_GROUP = "gateway.networking.k8s.io"


@cache
def crd_schemas() -> dict[tuple[str, str], dict]:
    """(apiVersion, kind) -> openAPIV3Schema of the CRDs the chart ships."""
    out = {}
    for path in sorted((CHART / "crds").glob("*.yaml")):
        crd = next(yaml.safe_load_all(path.read_text()))
        if crd["kind"] != "CustomResourceDefinition":
            continue  # the bundle's ValidatingAdmissionPolicy
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            out[(f"{group}/{version['name']}", kind)] = version["schema"]["openAPIV3Schema"]
    return out


def validate(obj: dict) -> None:
    if obj["apiVersion"].split("/")[0] == GATEWAY_GROUP:
        schema = crd_schemas()[(obj["apiVersion"], obj["kind"])]
        jsonschema.Draft7Validator(schema).validate(obj)
    else:
        kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)


# -- lint and validation ----------------------------------------------------------------------

@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_helm_lint(helm, variant):
    proc = helm.run("lint", "--strict", str(CHART), "--namespace", NAMESPACE,
                    "--values", helm.values_file(VARIANTS[variant]))
    assert "0 chart(s) failed" in proc.stdout


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_object_validates_against_its_schema(helm, variant):
    docs = helm.template(VARIANTS[variant])
    assert len(docs) >= 20
    for obj in docs:
        try:
            validate(obj)
        except Exception as exc:  # noqa: BLE001 - name the object in the failure
            pytest.fail(f"{variant}: {obj['kind']}/{obj['metadata']['name']} is invalid: {exc}")


def test_the_validators_reject_bad_objects(helm):
    """Negative control: a misspelt field and a wrong GatewayClass fail validation."""
    docs = helm.template()
    deployment = copy.deepcopy(one(docs, "Deployment", "titanium-gateway-data-plane"))
    deployment["spec"]["template"]["spec"]["containers"][0]["securityContex"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(deployment)
    gatewayclass = copy.deepcopy(one(docs, "GatewayClass"))
    gatewayclass["spec"]["controllerName"] = "no slash and spaces"
    with pytest.raises(jsonschema.ValidationError):
        validate(gatewayclass)


def test_crds_are_rendered_with_include_crds_and_valid(helm):
    docs = helm.template({}, "--include-crds")
    crds = by_kind(docs, "CustomResourceDefinition")
    assert sorted(c["metadata"]["name"] for c in crds) == [
        f"{plural}.gateway.networking.k8s.io" for plural in (
            "backendtlspolicies", "gatewayclasses", "gateways", "grpcroutes", "httproutes", "listenersets",
            "referencegrants", "tcproutes", "tlsroutes", "udproutes")
    ]
    policies = by_kind(docs, "ValidatingAdmissionPolicy") + by_kind(docs, "ValidatingAdmissionPolicyBinding")
    assert sorted(p["metadata"]["name"] for p in policies) == sorted(
        ["safe-upgrades.gateway.networking.k8s.io", "titanium-gateway-controller-writes"] * 2)
    for obj in crds + policies:
        kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)


# -- what one release installs ----------------------------------------------------------------

def test_default_install_objects(helm):
    docs = helm.template()
    got = sorted((d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]) for d in docs)
    ns = NAMESPACE
    expected = [
        ("ClusterRole", "", "titanium-gateway-controller"),
        ("ClusterRoleBinding", "", "titanium-gateway-controller"),
        # dataPlane.mode=perGateway: creating Gateways' own data planes, and their settings
        ("ClusterRole", "", "titanium-gateway-controller-data-planes"),
        ("ClusterRoleBinding", "", "titanium-gateway-controller-data-planes"),
        ("ConfigMap", ns, "titanium-gateway-data-plane-template"),
        ("ConfigMap", ns, "titanium-gateway-data-plane"),
        *[("ConfigMap", ns, f"titanium-gateway-data-plane-part-{n}") for n in range(1, 65)],
        ("Deployment", ns, "titanium-gateway-controller"),
        ("Deployment", ns, "titanium-gateway-data-plane"),
        ("GatewayClass", "", "titanium"),
        ("IngressClass", "", "titanium"),
        ("Lease", ns, "titanium-gateway"),
        ("PodDisruptionBudget", ns, "titanium-gateway-controller"),
        ("PodDisruptionBudget", ns, "titanium-gateway-data-plane"),
        ("Role", ns, "titanium-gateway-controller"),
        ("RoleBinding", ns, "titanium-gateway-controller"),
        # the fence on the controller's writes (no namespaces listed: Secrets read cluster-wide)
        ("ValidatingAdmissionPolicy", "", "titanium-gateway-controller-writes"),
        ("ValidatingAdmissionPolicyBinding", "", "titanium-gateway-controller-writes"),
        ("Secret", ns, "titanium-gateway-admin-token"),
        ("Secret", ns, "titanium-gateway-data-plane-tls"),
        ("Service", ns, "titanium-gateway-data-plane"),
        ("ServiceAccount", ns, "titanium-gateway-controller"),
        ("ServiceAccount", ns, "titanium-gateway-data-plane"),
    ]
    assert got == sorted(expected)


def test_gatewayclass(helm):
    gc = one(helm.template(), "GatewayClass")
    assert gc["apiVersion"] == "gateway.networking.k8s.io/v1"
    assert gc["metadata"]["name"] == "titanium"
    assert gc["spec"]["controllerName"] == "titaniumproxy.com/gateway-controller"
    assert not by_kind(helm.template({"gatewayClass": {"create": False}}), "GatewayClass")


def test_ingressclass_values(helm):
    ic = one(helm.template(), "IngressClass")
    assert ic["metadata"]["name"] == "titanium"
    assert ic["spec"] == {"controller": "titanium.io/ingress-controller"}
    assert "ingressclass.kubernetes.io/is-default-class" not in (ic["metadata"].get("annotations") or {})

    ic = one(helm.template({"ingressClass": {"name": "edge", "default": True},
                            "controller": {"ingressControllerName": "example.com/ingress"}}), "IngressClass")
    assert ic["metadata"]["name"] == "edge"
    assert ic["metadata"]["annotations"]["ingressclass.kubernetes.io/is-default-class"] == "true"
    assert ic["spec"]["controller"] == "example.com/ingress"
    assert not by_kind(helm.template({"ingressClass": {"create": False}}), "IngressClass")


# -- controller -------------------------------------------------------------------------------

def controller_container(docs):
    dep = one(docs, "Deployment", "titanium-gateway-controller")
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    return dep, container


def env_of(container) -> dict:
    out = {}
    for e in container["env"]:
        assert e["name"] not in out, f"duplicate env {e['name']}"
        out[e["name"]] = e.get("value", e.get("valueFrom"))
    return out


def test_controller_deployment(helm):
    dep, c = controller_container(helm.template())
    assert dep["spec"]["replicas"] == 2
    assert c["command"] == ["titanium-gateway", "controller"]
    assert c["image"] == "ghcr.io/justcoding121/titanium-gateway:0.1.0"
    env = env_of(c)
    assert env["POD_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert env["POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env["TITANIUM_ADMIN_TOKEN"] == {"secretKeyRef": {"name": "titanium-gateway-admin-token", "key": "token"}}
    gw = {k: v for k, v in env.items() if k.startswith("TITANIUM_GATEWAY_")}
    assert gw == {
        "TITANIUM_GATEWAY_CONTROLLER_NAME": "titaniumproxy.com/gateway-controller",
        "TITANIUM_GATEWAY_DATA_PLANE_SERVICE": "titanium-gateway-data-plane",
        "TITANIUM_GATEWAY_DATA_PLANE_NAMESPACE": NAMESPACE,
        "TITANIUM_GATEWAY_DATA_PLANE_DEPLOYMENT": "titanium-gateway-data-plane",
        "TITANIUM_GATEWAY_CONFIG_MAP": "titanium-gateway-data-plane",
        "TITANIUM_GATEWAY_TLS_SECRET": "titanium-gateway-data-plane-tls",
        "TITANIUM_GATEWAY_CONFIG_PARTS": "64",
        "TITANIUM_GATEWAY_PORT_MAP": "80=8080,443=8443",
        "TITANIUM_GATEWAY_DATA_PLANE_PORTS": "8080,8443",
        "TITANIUM_GATEWAY_DATA_PLANE_MODE": "per-gateway",
        "TITANIUM_GATEWAY_DATA_PLANE_TEMPLATE": "/etc/titanium-gateway/data-plane.yaml",
        "TITANIUM_GATEWAY_ADMISSION_POLICY": "titanium-gateway-controller-writes",
        "TITANIUM_GATEWAY_INGRESS_CONTROLLER_NAME": "titanium.io/ingress-controller",
        "TITANIUM_GATEWAY_WATCH_LEGACY_ANNOTATION": "false",
        "TITANIUM_GATEWAY_ADMIN_PORT": "9901",
        "TITANIUM_GATEWAY_LEASE_NAME": "titanium-gateway",
        "TITANIUM_GATEWAY_LEASE_NAMESPACE": NAMESPACE,
        "TITANIUM_GATEWAY_IDENTITY": {"fieldRef": {"fieldPath": "metadata.name"}},
        "TITANIUM_GATEWAY_MIN_RECONCILE_MS": "500",
        "TITANIUM_GATEWAY_HEALTH_PORT": "8081",
        "TITANIUM_GATEWAY_KUBE_API_QPS": "200",
        "TITANIUM_GATEWAY_KUBE_API_BURST": "1000",
        "TITANIUM_GATEWAY_VERBOSE": "false",
    }
    assert env["MALLOC_ARENA_MAX"] == "2"  # as the image sets it (also for another image)


def test_the_data_plane_template_is_mounted_and_rolls_the_controller(helm):
    """dataPlane.mode=perGateway: the settings of the data planes the controller creates are a
    ConfigMap it mounts; a change of them rolls it (a checksum annotation)."""
    from titanium_gateway.writers.plane_objects import parse_template

    docs = helm.template()
    dep, c = controller_container(docs)
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    assert mounts["data-plane-template"]["mountPath"] == "/etc/titanium-gateway"
    volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    assert volumes["data-plane-template"]["configMap"]["name"] == "titanium-gateway-data-plane-template"
    cm = one(docs, "ConfigMap", "titanium-gateway-data-plane-template")
    template = parse_template(yaml.safe_load(cm["data"]["data-plane.yaml"]))
    _, shared = data_plane(docs)
    assert template.pod["spec"]["containers"][0] == shared  # the same container as the shared data plane's
    assert (template.replicas, template.config_parts, template.service_type) == (2, 64, "LoadBalancer")
    before = dep["spec"]["template"]["metadata"]["annotations"]["checksum/data-plane-template"]
    dep2, _ = controller_container(helm.template({"dataPlane": {"replicas": 3}}))
    assert dep2["spec"]["template"]["metadata"]["annotations"]["checksum/data-plane-template"] != before
    # shared: neither
    docs = helm.template({"dataPlane": {"mode": "shared"}})
    dep, c = controller_container(docs)
    assert "data-plane-template" not in {m["name"] for m in c["volumeMounts"]}
    assert env_of(c)["TITANIUM_GATEWAY_DATA_PLANE_MODE"] == "shared"
    assert not [d for d in by_kind(docs, "ConfigMap") if d["metadata"]["name"].endswith("-template")]


def conventions_flags() -> set[str]:
    text = (ROOT / "docs" / "design" / "conventions.md").read_text()
    flags = set()
    for line in text.splitlines():
        if line.startswith("| `--"):
            flags.update(re.findall(r"`(--[a-z0-9-]+)`", line.split("|")[1]))
    return flags


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_controller_env_var_is_a_documented_flag(helm, variant):
    """An unknown TITANIUM_GATEWAY_* variable stops the controller at start (conventions.md)."""
    flags = conventions_flags()
    assert "--controller-name" in flags and "--config-parts" in flags  # the table was parsed
    _, c = controller_container(helm.template(VARIANTS[variant]))
    for name in env_of(c):
        if name.startswith("TITANIUM_GATEWAY_"):
            flag = "--" + name.removeprefix("TITANIUM_GATEWAY_").lower().replace("_", "-")
            assert flag in flags, f"{name} maps to {flag}, which docs/design/conventions.md does not list"


def test_controller_env_follows_values(helm):
    _, c = controller_container(helm.template(VARIANTS["secret-namespaces"]))
    assert env_of(c)["TITANIUM_GATEWAY_SECRET_NAMESPACES"] == "gateway-system,apps,shop"
    _, c = controller_container(helm.template())
    assert "TITANIUM_GATEWAY_SECRET_NAMESPACES" not in env_of(c)  # nothing listed: every namespace
    _, c = controller_container(helm.template({"controller": {"secretsClusterWide": False}}))
    assert env_of(c)["TITANIUM_GATEWAY_SECRET_NAMESPACES"] == "gateway-system"
    _, c = controller_container(helm.template(VARIANTS["secrets-cluster-wide"]))
    assert "TITANIUM_GATEWAY_SECRET_NAMESPACES" not in env_of(c)
    _, c = controller_container(helm.template(VARIANTS["legacy-annotation"]))
    assert env_of(c)["TITANIUM_GATEWAY_WATCH_LEGACY_ANNOTATION"] == "true"
    _, c = controller_container(helm.template({
        "controller": {"controllerName": "example.com/gw", "verbose": True, "minReconcileMs": 250},
        "dataPlane": {"ports": [{"name": "web", "port": 8000, "containerPort": 9000}], "configParts": 2},
    }))
    env = env_of(c)
    assert env["TITANIUM_GATEWAY_CONTROLLER_NAME"] == "example.com/gw"
    assert env["TITANIUM_GATEWAY_VERBOSE"] == "true"
    assert env["TITANIUM_GATEWAY_MIN_RECONCILE_MS"] == "250"
    assert env["TITANIUM_GATEWAY_PORT_MAP"] == "8000=9000"
    assert env["TITANIUM_GATEWAY_DATA_PLANE_PORTS"] == "9000"
    assert env["TITANIUM_GATEWAY_CONFIG_PARTS"] == "2"


def test_controller_without_leader_election(helm):
    docs = helm.template({"controller": {"replicas": 1, "leaderElection": {"enabled": False}}})
    _, c = controller_container(docs)
    env = env_of(c)
    assert env["TITANIUM_GATEWAY_NO_LEADER_ELECTION"] == "true"
    assert "TITANIUM_GATEWAY_LEASE_NAME" not in env
    assert not by_kind(docs, "Lease")
    err = helm.template_fails({"controller": {"replicas": 2, "leaderElection": {"enabled": False}}})
    assert "only one writer" in err


# -- data plane -------------------------------------------------------------------------------

def data_plane(docs):
    dep = one(docs, "Deployment", "titanium-gateway-data-plane")
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    return dep, container


def test_data_plane_deployment(helm):
    dep, c = data_plane(helm.template())
    spec = dep["spec"]
    assert spec["replicas"] == 2
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}
    labels = spec["template"]["metadata"]["labels"]
    assert labels["app.kubernetes.io/name"] == "titanium"
    assert labels["app.kubernetes.io/component"] == "data-plane"
    assert spec["selector"]["matchLabels"].items() <= labels.items()
    assert c["command"] + c.get("args", []) == ["titanium", "run", "--config", "/etc/titanium/twp.yaml", "--watch"]
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == {"http": 8080, "https": 8443, "admin": 9901}
    assert env_of(c)["TITANIUM_ADMIN_TOKEN"] == {
        "secretKeyRef": {"name": "titanium-gateway-admin-token", "key": "token"}}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "admin"}
    assert c["livenessProbe"]["tcpSocket"] == {"port": "admin"}
    assert spec["template"]["spec"]["automountServiceAccountToken"] is False


@pytest.mark.parametrize("parts", [0, 3, 8])
def test_projected_config_volume(helm, parts):
    docs = helm.template({"dataPlane": {"configParts": parts}})
    dep, c = data_plane(docs)
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    assert mounts["config"]["mountPath"] == "/etc/titanium"
    assert mounts["config"]["readOnly"] is True
    volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    sources = volumes["config"]["projected"]["sources"]
    expected = [{"configMap": {"name": "titanium-gateway-data-plane"}}]
    expected += [{"configMap": {"name": f"titanium-gateway-data-plane-part-{n}", "optional": True}}
                 for n in range(1, parts + 1)]
    expected += [{"secret": {"name": "titanium-gateway-data-plane-tls"}}]
    assert sources == expected
    # every mounted object is pre-created, empty, so the controller only ever updates it
    for source in sources:
        ((kind, ref),) = source.items()
        obj = one(docs, {"configMap": "ConfigMap", "secret": "Secret"}[kind], ref["name"])
        assert "data" not in obj and "stringData" not in obj and "binaryData" not in obj
    # (and the data-plane template of dataPlane.mode=perGateway, mounted by the controller)
    assert len(by_kind(docs, "ConfigMap")) == parts + 2


def test_pre_created_lease_and_tls_secret(helm):
    docs = helm.template()
    lease = one(docs, "Lease", "titanium-gateway")
    assert lease["apiVersion"] == "coordination.k8s.io/v1"
    assert lease["spec"] == {}
    secret = one(docs, "Secret", "titanium-gateway-data-plane-tls")
    assert secret["type"] == "Opaque"
    assert "data" not in secret


@pytest.mark.parametrize("variant,service_type", [("default", "LoadBalancer"), ("cluster-ip", "ClusterIP")])
def test_data_plane_service(helm, variant, service_type):
    docs = helm.template(VARIANTS[variant])
    svc = one(docs, "Service", "titanium-gateway-data-plane")
    assert svc["spec"]["type"] == service_type
    _, c = data_plane(docs)
    container_ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    resolved = {p["port"]: container_ports[p["targetPort"]] for p in svc["spec"]["ports"]}
    assert resolved == {80: 8080, 443: 8443}  # the admin port 9901 is never exposed
    dep, _ = data_plane(docs)
    assert svc["spec"]["selector"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()
    controller_labels = one(docs, "Deployment", "titanium-gateway-controller")["spec"]["template"]["metadata"]["labels"]
    assert not svc["spec"]["selector"].items() <= controller_labels.items()


def test_bad_values_fail_the_render(helm):
    """values.schema.json and the template checks stop a render that could not work."""
    assert "containerPort: Must be greater than or equal to 1024" in helm.template_fails(
        {"dataPlane": {"ports": [{"name": "http", "port": 80, "containerPort": 80}]}})
    assert "is the admin port" in helm.template_fails(
        {"dataPlane": {"ports": [{"name": "http", "port": 80, "containerPort": 9901}]}})
    assert "dataPlane.service.type" in helm.template_fails({"dataPlane": {"service": {"type": "Ingress"}}})
    # a misspelt key is an error, not a silently ignored option
    assert "secretNamespace is not allowed" in helm.template_fails({"controller": {"secretNamespace": ["a"]}})
    assert "secretNamespaces.0" in helm.template_fails({"controller": {"secretNamespaces": ["Not_A_Namespace"]}})


# -- admin token ------------------------------------------------------------------------------

def test_admin_token_secret_is_generated_and_shared(helm):
    docs = helm.template()
    secret = one(docs, "Secret", "titanium-gateway-admin-token")

    token = base64.b64decode(secret["data"]["token"]).decode()
    assert re.fullmatch(r"[A-Za-z0-9]{48}", token)
    # generated once: the template reuses the live Secret's token on upgrade (lookup)
    source = (CHART / "templates" / "admin-token-secret.yaml").read_text()
    assert 'lookup "v1" "Secret" .Release.Namespace $name' in source
    assert "randAlphaNum" in source


def test_admin_token_existing_secret_and_manual(helm):
    for values, name in (({"adminToken": {"existingSecret": "my-token"}}, "my-token"),
                         ({"adminToken": {"create": False}}, "titanium-gateway-admin-token")):
        docs = helm.template(values)
        assert [s["metadata"]["name"] for s in by_kind(docs, "Secret")] == ["titanium-gateway-data-plane-tls"]
        for dep in by_kind(docs, "Deployment"):
            env = env_of(dep["spec"]["template"]["spec"]["containers"][0])
            assert env["TITANIUM_ADMIN_TOKEN"]["secretKeyRef"]["name"] == name


def test_kind_values_use_local_images(helm):
    docs = helm.template(VARIANTS["kind"])
    for dep in by_kind(docs, "Deployment"):
        container = dep["spec"]["template"]["spec"]["containers"][0]
        assert container["imagePullPolicy"] == "Never"
        assert container["image"].endswith(":conformance")
    assert one(docs, "Service")["spec"]["type"] == "LoadBalancer"
