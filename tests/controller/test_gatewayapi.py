"""Discovery of the Gateway API kinds from the CRDs (controller/crds.py, controller/gatewayapi.py),
without a server: the CRD summaries, the version chosen for each kind, the bundle reported."""

from __future__ import annotations

import json

import yaml

from tests.support.crdschema import CRD_DIR
from tests.support.gatewayapi_crds import chart_crds, serving, v1_2_1_standard
from titanium_gateway.controller.crds import Served, crd_transform
from titanium_gateway.controller.gatewayapi import KINDS, info_for, plan_for
from titanium_gateway.controller.transform import config_map_transform

GROUP = "gateway.networking.k8s.io"


def summaries(crds: list[dict]) -> list[dict]:
    return [crd_transform(c) for c in crds]


def test_the_cached_summary_of_a_real_crd_is_small_and_keeps_what_discovery_reads() -> None:
    crd = next(yaml.safe_load_all((CRD_DIR / "gateway.networking.k8s.io_gatewayclasses.yaml").read_text()))
    crd = {**crd, "status": {"conditions": [{"type": "Established", "status": "True"}]}}
    summary = crd_transform(crd)
    assert len(json.dumps(summary)) < 1000 < len(json.dumps(crd)) // 10
    assert summary["metadata"]["annotations"] == {f"{GROUP}/bundle-version": "v1.6.3", f"{GROUP}/channel": "standard"}
    assert summary["spec"]["versions"] == [
        {"name": "v1", "served": True, "storage": True, "supportedFeatures": "objects"},
        {"name": "v1beta1", "served": True, "storage": False, "supportedFeatures": "objects"}]
    assert summary["status"] == {"established": True}
    assert crd["spec"]["versions"][0]["schema"]  # the input is left alone


def test_the_v1_6_3_bundle_every_kind_at_v1_and_the_configmaps_of_backend_tls_policies() -> None:
    served = Served(summaries(chart_crds()), GROUP)
    plan = plan_for(served)
    assert {kind: res.api_version for kind, res in plan.items()} == {
        **{w.kind: f"{GROUP}/v1" for w in KINDS if w.resource.group == GROUP}, "ConfigMap": "v1"}
    info = info_for(served, plan)
    assert info.bundle == "v1.6.3 (standard)" and info.supported_features == "objects"


def test_the_v1_2_1_bundle_grants_as_v1beta1_and_no_new_kind() -> None:
    served = Served(summaries(v1_2_1_standard()), GROUP)
    plan = plan_for(served)
    assert {kind: res.version for kind, res in plan.items()} == {
        "GatewayClass": "v1", "Gateway": "v1", "HTTPRoute": "v1", "GRPCRoute": "v1", "ReferenceGrant": "v1beta1"}
    info = info_for(served, plan)
    assert info.bundle == "v1.2.1 (standard)" and info.supported_features == ""


def test_versions_not_read_not_established_and_mixed_bundles() -> None:
    crds = chart_crds()
    for crd in crds:
        kind = crd["spec"]["names"]["kind"]
        if kind == "BackendTLSPolicy":  # as the v1.3 experimental channel served it
            crd["spec"]["versions"] = [{**crd["spec"]["versions"][1], "served": True, "storage": True}]
        if kind == "ListenerSet":
            crd["status"]["conditions"] = [{"type": "Established", "status": "False"}]
        if kind == "TLSRoute":
            crd["metadata"]["annotations"][f"{GROUP}/bundle-version"] = "v1.5.1"
    served = Served(summaries(crds), GROUP)
    plan = plan_for(served)
    assert "BackendTLSPolicy" not in plan and "ConfigMap" not in plan and "ListenerSet" not in plan
    assert served.crds["BackendTLSPolicy"].served == ("v1alpha3",)
    info = info_for(served, plan)
    assert info.bundle == ""
    assert served.bundles()["v1.5.1 (standard)"] == ["TLSRoute"]


def test_gatewayclass_features_follow_the_version_read() -> None:
    crds = [serving(c, v1=False) if c["spec"]["names"]["kind"] == "GatewayClass" else c for c in chart_crds()]
    served = Served(summaries(crds), GROUP)
    plan = plan_for(served)
    assert plan["GatewayClass"].version == "v1beta1"
    assert info_for(served, plan).supported_features == "objects"


def test_config_maps_keep_only_the_ca_certificate() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ca", "namespace": "apps", "managedFields": [{}]},
          "data": {"ca.crt": "PEM", "other": "x" * 1000}, "binaryData": {"blob": "AAAA"}}
    out = config_map_transform(cm)
    assert out == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ca", "namespace": "apps"},
                   "data": {"ca.crt": "PEM"}}
    assert cm["data"]["other"]  # the input is left alone
    plain = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"}, "data": {"a": "b"}}
    assert config_map_transform(plain) == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"}}
    only_ca = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"ca.crt": "PEM"}}
    assert config_map_transform(only_ca) is only_ca
