#!/usr/bin/env bash
# Build Prometheus's promtool from the Go module proxy into .cache/promtool/bin/promtool (the
# chart test checks the PrometheusRule's PromQL and rules with it, and skips without it).
#   hack/promtool.sh                 build (seconds when built; a first build takes minutes)
#   hack/promtool.sh --print-path    print the binary's path (building it if needed)
# Environment: PROMETHEUS_MODULE_VERSION (default below: the version the test was written against).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="${PROMETHEUS_MODULE_VERSION:-v0.316.0}"  # Prometheus 3.16 (its Go module is v0.3xx.y)
BIN_DIR="$ROOT/.cache/promtool/bin"
BIN="$BIN_DIR/promtool"
if ! command -v go >/dev/null 2>&1; then
  echo "hack/promtool.sh: no Go toolchain on PATH (promtool is built from the Go module proxy)" >&2
  exit 3
fi
mkdir -p "$BIN_DIR"
exec 9>"$BIN_DIR/.build.lock"
flock 9
if [[ ! -x "$BIN" || "$(cat "$BIN_DIR/.version" 2>/dev/null)" != "$VERSION" ]]; then
  start=$SECONDS
  echo "hack/promtool.sh: building promtool from github.com/prometheus/prometheus@$VERSION" >&2
  GOBIN="$BIN_DIR" GOFLAGS=-mod=mod go install "github.com/prometheus/prometheus/cmd/promtool@$VERSION"
  echo "$VERSION" >"$BIN_DIR/.version"
  echo "hack/promtool.sh: done in $((SECONDS - start)) s" >&2
fi
if [[ "${1:-}" == "--print-path" ]]; then
  echo "$BIN"
fi
