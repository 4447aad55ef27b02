#!/usr/bin/env bash
# CI step: the upstream Gateway API v1.6.3 conformance suite, the whole of it (profiles GATEWAY-HTTP
# and GATEWAY-GRPC, one report), on the local control plane (make conformance-local;
# conformance/README.md). It fails the build when the run
# fails, or when a test fails that conformance/expected-failures.txt does not list, or a listed
# one fails for another reason. The suite's report and every log are in artifacts/.
# About 16 minutes on a fresh 2-core machine (9 to build the suite, 7 to run it), 7 with warm
# Go caches.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
status=0
make conformance-local || status=$?
echo "CI: upstream conformance (make conformance-local) exit $status in $((SECONDS - start)) s" >&2
exit "$status"
