#!/usr/bin/env bash
# End-to-end test on kind (make e2e): builds the controller image, then runs tests/e2e with
# pytest-kind (which creates the cluster): the chart installs, the quick-start Gateway and
# HTTPRoute become Programmed and the data plane serves traffic to the backend.
# Without Docker (no client or no daemon) it prints SKIP and exits 0.
# Environment: TITANIUM_PROXY_SRC / TITANIUM_PROXY_IMAGE as in conformance/run.sh,
#              E2E_PYTEST_ARGS (e.g. "--keep-cluster").
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"

skip() {
  echo "SKIP: e2e not run: $*" >&2
  exit 0
}

[[ "$(uname -s)" == "Linux" || "$(uname -s)" == "Darwin" ]] || skip "needs Linux or macOS"
command -v docker >/dev/null 2>&1 || skip "docker is not installed"
docker info >/dev/null 2>&1 || skip "no Docker daemon is reachable (docker info failed)"
"$PYTHON" -c "import pytest_kind" 2>/dev/null || skip "pytest-kind is not installed (pip install -e '.[e2e]')"

docker build -t titanium-gateway:e2e "$ROOT"
if [[ -n "${TITANIUM_PROXY_SRC:-}" ]]; then
  docker build -t titanium:e2e "$TITANIUM_PROXY_SRC"
else
  proxy_image="${TITANIUM_PROXY_IMAGE:-ghcr.io/justcoding121/titanium:latest}"
  docker pull "$proxy_image"
  docker tag "$proxy_image" titanium:e2e
fi

"$ROOT/hack/helm.sh" version --short >/dev/null  # fetch helm once, before the cluster exists
export TITANIUM_E2E=1
# shellcheck disable=SC2086
exec "$PYTHON" -m pytest -m e2e -p no:cacheprovider -ra tests/e2e --cluster-name titanium-e2e ${E2E_PYTEST_ARGS:-}
