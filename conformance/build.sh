#!/usr/bin/env bash
# Build the upstream Gateway API v1.6.3 conformance suite and its echo server from the Go
# module in conformance/suite/ (go.mod pins sigs.k8s.io/gateway-api/conformance v1.6.3 and, through
# it, sigs.k8s.io/gateway-api v1.6.3; go.sum is committed). Needs Go 1.26 (the suite's go.mod says
# so); GOTOOLCHAIN=local: an older Go fails with a clear message instead of fetching a toolchain.
#
#   conformance/build.sh            -> .cache/conformance/bin/{conformance.test,echo-basic}
#
# The Go build and module caches are the usual ones (GOCACHE, GOMODCACHE), so a rebuild after the
# first takes seconds. Environment: CONFORMANCE_BIN (output directory), GO (default go).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${CONFORMANCE_BIN:-$ROOT/.cache/conformance/bin}"
GO="${GO:-go}"
MODULE="$ROOT/conformance/suite"

command -v "$GO" >/dev/null 2>&1 || { echo "conformance/build.sh: no Go toolchain ($GO)" >&2; exit 2; }
mkdir -p "$BIN"
cd "$MODULE"
# -mod=readonly: a build never rewrites go.mod/go.sum (a missing sum is an error, not a download
# of whatever is newest). -trimpath keeps local paths out of the binaries.
export GOFLAGS="${GOFLAGS:-} -mod=readonly"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
start=$(date +%s)
echo "conformance/build.sh: echo-basic (sigs.k8s.io/gateway-api/conformance/echo-basic@v1.6.3)" >&2
"$GO" build -trimpath -o "$BIN/echo-basic.new" sigs.k8s.io/gateway-api/conformance/echo-basic
mv -f "$BIN/echo-basic.new" "$BIN/echo-basic"
echo "conformance/build.sh: the suite (go test -c, sigs.k8s.io/gateway-api/conformance@v1.6.3)" >&2
"$GO" test -c -trimpath -o "$BIN/conformance.test.new" .
mv -f "$BIN/conformance.test.new" "$BIN/conformance.test"
echo "conformance/build.sh: built in $(( $(date +%s) - start )) s -> ${BIN#"$ROOT"/}" >&2
