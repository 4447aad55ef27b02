"""The controller accepts exactly what the chart gives it.

An unknown TITANIUM_GATEWAY_* variable stops the controller at start (exit 2), so a chart
that sets one the controller does not know would crash-loop every install. For every chart
variant, the controller container's args and environment are parsed by the controller's own
option parser, and the result must match the chart's objects (names, namespaces, ports).
"""

from __future__ import annotations

import pytest

from titanium_gateway.controller.options import parse_options

from .conftest import NAMESPACE, VARIANTS, by_kind, one

POD_ENV = {"POD_NAMESPACE": NAMESPACE, "POD_NAME": "titanium-gateway-controller-abc12"}


def controller_container(docs: list[dict]) -> dict:
    deployments = [d for d in by_kind(docs, "Deployment")
                   if d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "controller"]
    assert len(deployments) == 1, [d["metadata"]["name"] for d in by_kind(docs, "Deployment")]
    containers = deployments[0]["spec"]["template"]["spec"]["containers"]
    return containers[0]


def chart_environ(container: dict) -> dict[str, str]:
    env = dict(POD_ENV)
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = str(item["value"])
        else:  # valueFrom: the downward API or a Secret; stand in a plausible value
            field = item.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath", "")
            env[item["name"]] = {"metadata.namespace": NAMESPACE}.get(field, POD_ENV["POD_NAME"])
    return env


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_controller_parses_the_charts_args_and_environment(helm, variant: str) -> None:
    docs = helm.template(VARIANTS[variant])
    container = controller_container(docs)
    args = list(container.get("args") or [])
    if not (container.get("command") and container["command"][-1] == "controller"):
        assert args and args[0] == "controller", container
        args = args[1:]
    opts = parse_options(args, chart_environ(container))  # raises (exit 2) on any unknown option

    assert opts.data_plane_namespace == NAMESPACE
    svc_names = {s["metadata"]["name"] for s in by_kind(docs, "Service")}
    assert opts.data_plane_service in svc_names
    cm_names = {c["metadata"]["name"] for c in by_kind(docs, "ConfigMap")}
    assert opts.config_map in cm_names
    assert all(f"{opts.config_map}-part-{n}" in cm_names for n in range(1, opts.config_parts + 1))
    one(docs, "Secret", opts.tls_secret)
    lease = one(docs, "Lease", opts.lease_name)
    assert lease["metadata"].get("namespace", NAMESPACE) == opts.lease_namespace
    deployment_names = {d["metadata"]["name"] for d in by_kind(docs, "Deployment")}
    assert opts.data_plane_deployment in deployment_names
    service = one(docs, "Service", opts.data_plane_service)
    target_ports = sorted(int(p["targetPort"]) for p in service["spec"]["ports"] if str(p["targetPort"]).isdigit())
    assert set(opts.data_plane_ports) <= set(target_ports) or not target_ports
    controller_values = VARIANTS[variant].get("controller", {})
    listed = [*controller_values.get("secretNamespaces", []),
              *VARIANTS[variant].get("dataPlane", {}).get("gatewayNamespaces", [])]
    if controller_values.get("secretsClusterWide") or not listed:
        assert opts.secret_namespaces == ()  # the flag's default: every namespace
    else:  # the release namespace and the listed ones, as the RBAC grants
        assert opts.secret_namespaces == tuple(sorted({NAMESPACE, *listed}))
    mode = VARIANTS[variant].get("dataPlane", {}).get("mode", "perGateway")
    assert opts.admission_policy == ("titanium-gateway-controller-writes" if mode == "perGateway" else "")
    legacy = VARIANTS[variant].get("controller", {}).get("watchLegacyAnnotation", False)
    assert opts.watch_legacy_annotation is bool(legacy)
