#!/usr/bin/env bash
# The upstream Gateway API v1.6.3 conformance suite (profiles GATEWAY-HTTP and GATEWAY-GRPC, one
# run, one report) against
# titanium-gateway on the local control plane, without Docker (make conformance-local):
#
#   1. builds the control plane (hack/kube/build.sh), the suite and echo-basic
#      (conformance/build.sh), all from Go modules;
#   2. starts a cluster of its own (hack/kube/up.sh .cache/conformance/cluster) and the pod
#      runner in its network namespace (tools/podrunner: pods as local processes, the
#      load-balancer stand-in, the kubelet's log API);
#   3. installs the chart with conformance/local-values.yaml (the controller of this checkout,
#      the reference data plane);
#   4. runs the suite with exactly the features of conformance/supported-features.txt and writes
#      its report to artifacts/gateway-conformance-report.yaml and its log to
#      artifacts/conformance.log (base resources are left for the next step: the cluster is
#      thrown away anyway);
#   5. runs the tests that failed on the header join alone again with the join normalized (a
#      diagnosis run, no report: artifacts/conformance-join-normalized.log; a run whose setup
#      failed before any test is tried once more), then prints the summary (conformance/summary.py, artifacts/conformance-summary.txt);
#   6. stops everything it started (trap), keeping the logs in artifacts/.
#
# The exit status is 0 when the suite ran and every failing test is one listed in
# conformance/expected-failures.txt failing for its stated reason only (and, for the header
# join, not failing in the diagnosis run; one it could not run is reported as inconclusive, with
# the log's reasons); 1 otherwise; 2 when a prerequisite is missing.
#
# Needs root (network namespaces), iproute2, util-linux (nsenter, unshare), Go with the module
# proxy, and the Python packages of `pip install -e '.[test]'`.
# Environment:
#   CONFORMANCE_RUN_TEST     run one test (the suite's -run-test), e.g. HTTPRouteSimpleSameNamespace
#   CONFORMANCE_SKIP_TESTS   comma-separated tests to skip (the suite's -skip-tests)
#   CONFORMANCE_PROFILES     the suite's -conformance-profiles (default GATEWAY-HTTP,GATEWAY-GRPC)
#   CONFORMANCE_EXTRA_ARGS   more suite flags
#   CONFORMANCE_CLUSTER_DIR  the cluster directory (default .cache/conformance/cluster)
#   KEEP_CLUSTER=1           leave the cluster and the pod runner running (stop with
#                            hack/kube/down.sh <dir>, which also ends the pod runner)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
DIR="$(realpath -m "${CONFORMANCE_CLUSTER_DIR:-$ROOT/.cache/conformance/cluster}")"
BIN="$ROOT/.cache/conformance/bin"
STATE="$ROOT/.cache/conformance/pods"
ARTIFACTS="$ROOT/artifacts"
REPORT="$ARTIFACTS/gateway-conformance-report.yaml"
LOG="$ARTIFACTS/conformance.log"
NAMESPACE=gateway-system
RELEASE=titanium-gateway
PYTHON="${PYTHON:-python3}"
PROFILES="${CONFORMANCE_PROFILES:-GATEWAY-HTTP,GATEWAY-GRPC}"
t0=$SECONDS
step() { echo "== [$((SECONDS - t0))s] $*" >&2; }
die() { echo "conformance/local.sh: $*" >&2; exit 2; }

[[ "$(id -u)" == 0 ]] || die "needs root: the cluster and its pods run in network namespaces of their own"
for tool in ip nsenter unshare go; do
  command -v "$tool" >/dev/null 2>&1 || die "needs $tool"
done
"$PYTHON" -c "import kubernetes, yaml, cryptography, aiohttp, prometheus_client, h2" 2>/dev/null || die "needs the Python packages of: pip install -e '.[test]'"
supported_features="$(grep -v '^[[:space:]]*#' conformance/supported-features.txt | sed '/^[[:space:]]*$/d' | paste -sd, -)"
[[ -n "$supported_features" ]] || die "conformance/supported-features.txt lists no feature"

mkdir -p "$ARTIFACTS"
rm -f "$REPORT" "$LOG" "$ARTIFACTS/conformance-summary.txt"

step "building the control plane, the suite and echo-basic (Go caches reused)"
hack/kube/build.sh
conformance/build.sh
HELM="$(hack/helm.sh --print-path)"  # fetched now: nothing inside the cluster's namespace can
export HELM_CACHE_HOME="$ROOT/.cache/helm/home/cache" HELM_CONFIG_HOME="$ROOT/.cache/helm/home/config" \
  HELM_DATA_HOME="$ROOT/.cache/helm/home/data"

step "starting the cluster in $DIR"
hack/kube/up.sh "$DIR"
# shellcheck disable=SC1091
source "$DIR/cluster.env"
export TITANIUM_KUBE_DIR="$DIR"
ex() { hack/kube/exec.sh "$@"; }

RUNNER_PID=""
cleanup() {
  local rc=$?
  set +e
  if [[ -n "${KEEP_CLUSTER:-}" ]]; then
    echo "conformance/local.sh: KEEP_CLUSTER: the cluster and the pod runner keep running (hack/kube/down.sh $DIR)" >&2
    exit "$rc"
  fi
  step "collecting logs into artifacts/ and stopping"
  ex kubectl -n "$NAMESPACE" logs -l app.kubernetes.io/component=controller --all-containers --prefix --tail=-1 \
    >"$ARTIFACTS/controller.log" 2>&1
  ex kubectl -n "$NAMESPACE" logs -l app.kubernetes.io/component=data-plane --all-containers --prefix --tail=-1 \
    >"$ARTIFACTS/data-plane.log" 2>&1
  # the data planes of the Gateways still there (those of deleted Gateways went with them)
  for ns in $(ex kubectl get pods -A -l app.kubernetes.io/managed-by=titanium-gateway \
                -o jsonpath='{range .items[*]}{.metadata.namespace}{"\n"}{end}' 2>/dev/null | sort -u); do
    ex kubectl -n "$ns" logs -l app.kubernetes.io/managed-by=titanium-gateway --all-containers --prefix --tail=-1 \
      >>"$ARTIFACTS/data-plane.log" 2>&1
  done
  ex kubectl get pods,services -A -o wide >"$ARTIFACTS/cluster-state.txt" 2>&1
  if [[ -n "$RUNNER_PID" ]] && kill -0 "$RUNNER_PID" 2>/dev/null; then
    kill -TERM "$RUNNER_PID"
    for _ in $(seq 1 300); do kill -0 "$RUNNER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$RUNNER_PID" 2>/dev/null
  fi
  mkdir -p "$ARTIFACTS/cluster-logs"
  cp -f "$DIR"/logs/*.log "$ARTIFACTS/cluster-logs/" 2>/dev/null
  hack/kube/down.sh "$DIR"
  step "done (exit $rc)"
  exit "$rc"
}
trap cleanup EXIT

step "starting the pod runner (log: artifacts/podrunner.log)"
rm -rf "$STATE"
nsenter --net="/run/netns/$TITANIUM_KUBE_NETNS" -- env KUBECONFIG="$DIR/admin.kubeconfig" PYTHONPATH="$ROOT" \
  "$PYTHON" -m tools.podrunner --images conformance/podrunner-images.yaml --var "bin=$BIN" \
  --state-dir "$STATE" --netns-prefix "tgp-$TITANIUM_KUBE_ID-" --node-name "$TITANIUM_KUBE_NODE" \
  --sync-period 10 --backoff 1 >"$ARTIFACTS/podrunner.log" 2>&1 &
RUNNER_PID=$!

step "installing the chart (conformance/local-values.yaml)"
ex "$HELM" upgrade --install "$RELEASE" charts/titanium-gateway --namespace "$NAMESPACE" --create-namespace \
  --values conformance/local-values.yaml --wait --timeout 5m
ex kubectl wait --for=condition=Accepted gatewayclass/titanium --timeout=120s

version="$(git describe --tags --always --dirty 2>/dev/null || echo dev)"
step "the suite: Gateway API v1.6.3, $PROFILES, features $supported_features"
suite_args=(
  -test.run '^TestConformance$' -test.v -test.timeout 40m
  -gateway-class=titanium -conformance-profiles="$PROFILES" -supported-features="$supported_features"
  -cleanup-base-resources=false
  -organization=justcoding121 -project=titanium-gateway -url=https://github.com/justcoding121/titanium-gateway
  -version="$version" -contact=https://github.com/justcoding121/titanium-gateway/issues
  -report-output="$REPORT"
  # GatewayStaticAddresses: an address the pod runner's load balancer gives on request (its
  # static range) and one outside dataPlane.service.addressRanges (local-values.yaml)
  -usable-address=198.18.251.10 -unusable-address=203.0.113.10
)
[[ -n "${CONFORMANCE_RUN_TEST:-}" ]] && suite_args+=(-run-test="$CONFORMANCE_RUN_TEST")
[[ -n "${CONFORMANCE_SKIP_TESTS:-}" ]] && suite_args+=(-skip-tests="$CONFORMANCE_SKIP_TESTS")
# shellcheck disable=SC2206
[[ -n "${CONFORMANCE_EXTRA_ARGS:-}" ]] && suite_args+=($CONFORMANCE_EXTRA_ARGS)
set +e
(cd "$ARTIFACTS" && "$ROOT/hack/kube/exec.sh" "$BIN/conformance.test" "${suite_args[@]}") 2>&1 | tee "$LOG" \
  | sed -nu 's/.*: Running \([A-Za-z0-9]*\), relying on.*/   running \1/p; s/.*Test Setup: \(.*\)/   setup: \1/p' >&2
suite_rc=${PIPESTATUS[0]}
set -e
"$BIN/conformance.test" -test.run '^TestListTests$' -titanium.list-tests="$ARTIFACTS/conformance-tests.json" >/dev/null
[[ -f "$REPORT" ]] || { echo "conformance/local.sh: the suite wrote no report (exit $suite_rc); see artifacts/conformance.log" >&2; exit 1; }

# The diagnosis run: the tests that failed on the header join alone, again, with ", " in the
# header values the backend received read as "," (-titanium.join-normalized; no report). Passing
# there shows they failed on that and on nothing else.
NORMALIZED_LOG="$ARTIFACTS/conformance-join-normalized.log"
rm -f "$NORMALIZED_LOG"
joined="$(sed -n 's/^\s*--- FAIL: TestConformance\/\([A-Za-z0-9]*\) .*/\1/p' "$LOG" \
  | grep -xF -f <(awk '$2 == "header-join" {print $1}' conformance/expected-failures.txt) || true)"
summary_extra=()
if [[ -n "$joined" && -z "${CONFORMANCE_RUN_TEST:-}" ]]; then
  skip="$("$PYTHON" -c 'import json,sys; keep=set(sys.argv[2].split()); print(",".join(t["name"] for t in json.load(open(sys.argv[1]))["tests"] if t["name"] not in keep))' \
    "$ARTIFACTS/conformance-tests.json" "$joined")"
  diagnose() {
    (cd "$ARTIFACTS" && "$ROOT/hack/kube/exec.sh" "$BIN/conformance.test" -test.run '^TestConformance$' -test.v \
      -test.timeout 15m -titanium.join-normalized -gateway-class=titanium -conformance-profiles="$PROFILES" \
      -supported-features="$supported_features" -skip-tests="$skip") >"$NORMALIZED_LOG" 2>&1
  }
  step "diagnosis run: $(echo $joined) with the append join normalized"
  set +e
  diagnose
  diagnosis_rc=$?
  # A run that reached none of the tests (its setup failed) is tried once more; its first log is kept.
  if ! grep -qE '^\s*--- (PASS|FAIL): TestConformance/[A-Za-z0-9]+ ' "$NORMALIZED_LOG"; then
    cp "$NORMALIZED_LOG" "$ARTIFACTS/conformance-join-normalized.first.log"
    step "the diagnosis run ran no test (exit $diagnosis_rc; artifacts/conformance-join-normalized.first.log): once more"
    tail -n 15 "$NORMALIZED_LOG" | sed 's/^/   | /' >&2
    sleep 10
    diagnose
  fi
  set -e
  summary_extra=(--normalized-log "$NORMALIZED_LOG")
fi

step "summary (artifacts/conformance-summary.txt)"
set +e
"$PYTHON" conformance/summary.py --report "$REPORT" --log "$LOG" --tests "$ARTIFACTS/conformance-tests.json" \
  --features conformance/supported-features.txt --expected conformance/expected-failures.txt "${summary_extra[@]}" \
  | tee "$ARTIFACTS/conformance-summary.txt"
summary_rc=${PIPESTATUS[0]}
set -e
exit "$summary_rc"
