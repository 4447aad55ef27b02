"""The chart ships the Gateway API v1.2.1 standard CRDs unmodified (checked against SHA256SUMS)."""

from __future__ import annotations

import hashlib

import yaml

from .conftest import CHART

CRDS = CHART / "crds"
# The upstream sums, also here so that editing a CRD and SHA256SUMS together still fails.
UPSTREAM_SHA256 = {
    "gateway.networking.k8s.io_gatewayclasses.yaml": "f0dcbdd9fb49b4562dad27ceec96078b3846611708464120598949cd2ab1e765",
    "gateway.networking.k8s.io_gateways.yaml": "9aea7ae080dfe9c25a814d3d14eed28f335d28de3cbdc00a0351e0e99cb3bf06",
    "gateway.networking.k8s.io_grpcroutes.yaml": "8a705983343eabcb72c5bbfc2c090eed87b46763e2f6c67bd6b45552fcd5cc94",
    "gateway.networking.k8s.io_httproutes.yaml": "db36230a2f54ca3f1733bebc9d303d4db16c958856bf2be941a2c6269b872014",
    "gateway.networking.k8s.io_referencegrants.yaml": "d22a9164ae9ec443438dd3aaca7fb056d3264d76c880d949a1e6b2661ecb4234",
}


def sha256sums() -> dict[str, str]:
    out = {}
    for line in (CRDS / "SHA256SUMS").read_text().splitlines():
        if line.strip():
            digest, name = line.split()
            out[name.lstrip("*")] = digest
    return out


def test_sha256sums_file_is_the_upstream_one():
    assert sha256sums() == UPSTREAM_SHA256


def test_crd_files_match_their_checksums():
    yaml_files = sorted(p.name for p in CRDS.glob("*.yaml")) + sorted(p.name for p in CRDS.glob("*.yml"))
    assert yaml_files == sorted(UPSTREAM_SHA256), "crds/ must hold exactly the five upstream files"
    for name, digest in sha256sums().items():
        assert hashlib.sha256((CRDS / name).read_bytes()).hexdigest() == digest, f"{name} was modified"


def test_licence_and_origin_note():
    assert "Apache License" in (CRDS / "LICENSE").read_text()
    origin = (CRDS / "ORIGIN.md").read_text()
    assert "v1.2.1" in origin and "standard" in origin and "kubernetes-sigs/gateway-api" in origin
    assert sorted(p.name for p in CRDS.iterdir()) == sorted([*UPSTREAM_SHA256, "LICENSE", "ORIGIN.md", "SHA256SUMS"])


def test_bundle_is_v1_2_1_standard_channel():
    for name in UPSTREAM_SHA256:
        crd = yaml.safe_load((CRDS / name).read_text())
        annotations = crd["metadata"]["annotations"]
        assert annotations["gateway.networking.k8s.io/bundle-version"] == "v1.2.1"
        assert annotations["gateway.networking.k8s.io/channel"] == "standard"
