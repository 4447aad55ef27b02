"""The chart ships the Gateway API v1.6.3 standard channel unmodified (checked against SHA256SUMS):
ten CRDs and the bundle's ValidatingAdmissionPolicy."""

from __future__ import annotations

import hashlib

import yaml

from .conftest import CHART

CRDS = CHART / "crds"
BUNDLE = "v1.6.3"
# The sums of the files of sigs.k8s.io/gateway-api@v1.6.3 config/crd/standard/, also here so
# that editing a file and SHA256SUMS together still fails.
UPSTREAM_SHA256 = {
    "gateway.networking.k8s.io_backendtlspolicies.yaml": "d9824b82db284bdea67d2eb0297952be51e0e7a394f02daef0d6f3fefa5d01c0",
    "gateway.networking.k8s.io_gatewayclasses.yaml": "d32070cb6930273a07c5ca183135712b1918cc140c6d9b6cef441cdf0e562345",
    "gateway.networking.k8s.io_gateways.yaml": "905c89d8fefaab9088bf9d0a8d47ebd7ec4e653a914d4bfaa575a7716f07a828",
    "gateway.networking.k8s.io_grpcroutes.yaml": "a96b307008290c194ad346f9bb9346dd560c12e4d4e7dfbdbe7d2fb5e812d62e",
    "gateway.networking.k8s.io_httproutes.yaml": "a89d17ff5ed060fa0eac015524f9252bb291f616412c13ac8cb952ed9c25c5ad",
    "gateway.networking.k8s.io_listenersets.yaml": "b81f1771dcd96dfb3bb500e07dafef79a2aa58c4a9b4b366d54ca29e8ecccb5e",
    "gateway.networking.k8s.io_referencegrants.yaml": "ff8db85aaacc91fb4096975afb5782540572bf2f04842a258094cd7f50c7f38a",
    "gateway.networking.k8s.io_tcproutes.yaml": "5d2891484c870865e9ae61402b412a8b81eea381fbb71fdc56406e533c9643f1",
    "gateway.networking.k8s.io_tlsroutes.yaml": "b9277b755ee0f33dd245d3497ba842922ff2e2efe5070b0911e58d072d55ed9c",
    "gateway.networking.k8s.io_udproutes.yaml": "a552a9aa3726367c392000a45d13e6ba07985117a5e6826364640bedfeb5e922",
    "gateway.networking.k8s.io_vap_safeupgrades.yaml": "66b1d7b2c392c0e4dd4b2950e2af62811f8288a65e50708e2b3d26d4433af84c",
}
CRD_KINDS = {"GatewayClass", "Gateway", "HTTPRoute", "GRPCRoute", "ReferenceGrant", "BackendTLSPolicy",
             "ListenerSet", "TLSRoute", "TCPRoute", "UDPRoute"}


def sha256sums() -> dict[str, str]:
    out = {}
    for line in (CRDS / "SHA256SUMS").read_text().splitlines():
        if line.strip():
            digest, name = line.split()
            out[name.lstrip("*")] = digest
    return out


def documents() -> list[dict]:
    return [d for name in sorted(UPSTREAM_SHA256) for d in yaml.safe_load_all((CRDS / name).read_text()) if d]


def test_sha256sums_file_is_the_upstream_one():
    assert sha256sums() == UPSTREAM_SHA256


def test_crd_files_match_their_checksums():
    yaml_files = sorted(p.name for p in CRDS.glob("*.yaml")) + sorted(p.name for p in CRDS.glob("*.yml"))
    assert yaml_files == sorted(UPSTREAM_SHA256), "crds/ must hold exactly the eleven upstream files"
    for name, digest in sha256sums().items():
        assert hashlib.sha256((CRDS / name).read_bytes()).hexdigest() == digest, f"{name} was modified"


def test_licence_and_origin_note():
    assert "Apache License" in (CRDS / "LICENSE").read_text()
    origin = (CRDS / "ORIGIN.md").read_text()
    assert BUNDLE in origin and "standard" in origin and "sigs.k8s.io/gateway-api" in origin
    assert sorted(p.name for p in CRDS.iterdir()) == sorted([*UPSTREAM_SHA256, "LICENSE", "ORIGIN.md", "SHA256SUMS"])


def test_bundle_is_v1_6_3_standard_channel():
    docs = documents()
    assert {d["spec"]["names"]["kind"] for d in docs if d["kind"] == "CustomResourceDefinition"} == CRD_KINDS
    assert sorted(d["kind"] for d in docs if d["kind"] != "CustomResourceDefinition") == [
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]
    for d in docs:
        annotations = d["metadata"]["annotations"]
        assert annotations["gateway.networking.k8s.io/bundle-version"] == BUNDLE
        assert annotations["gateway.networking.k8s.io/channel"] == "standard"


def test_reference_grant_v1_and_v1beta1_are_both_served():
    """The controller reads ReferenceGrant v1 where it is served (v1.5+), v1beta1 otherwise."""
    crd = next(d for d in documents() if d.get("spec", {}).get("names", {}).get("kind") == "ReferenceGrant")
    served = {v["name"]: v["served"] for v in crd["spec"]["versions"]}
    assert served == {"v1": True, "v1beta1": True}
