#!/usr/bin/env bash
# Upstream Gateway API conformance (v1.6.3, profile GATEWAY-HTTP) against titanium-gateway on kind.
#
#   conformance/run.sh        (make conformance)
#
# Builds the controller image (Dockerfile) and the data-plane image, creates a kind cluster,
# installs MetalLB (so the data-plane Service gets an address), installs the chart with
# charts/titanium-gateway/ci/kind-values.yaml, runs the upstream suite in a golang container on
# the kind network with only the features in conformance/supported-features.txt, and writes
# artifacts/gateway-conformance-report.yaml. The exit code is the suite's.
#
# Needs Linux, Docker, kind, kubectl (Helm comes from hack/helm.sh). Where Docker or kind is
# missing it prints SKIP and exits 0, so it never fails a machine that cannot run it.
#
# Environment:
#   TITANIUM_PROXY_SRC    a checkout of the Titanium proxy with a Dockerfile: built as the data plane
#   TITANIUM_PROXY_IMAGE  otherwise, a data-plane image to pull (default ghcr.io/justcoding121/titanium:latest)
#   KIND_CLUSTER          cluster name (default titanium-conformance); KEEP_CLUSTER=1 keeps it
#   KIND_NODE_IMAGE       kind node image (default: kind's own)
#   GOLANG_IMAGE          image that runs the suite (default golang:1.26-bookworm)
#   METALLB_VERSION       default v0.14.9
#   CONFORMANCE_EXTRA_ARGS  more suite flags, e.g. "--run-test=HTTPRouteSimpleSameNamespace"
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

GATEWAY_API_VERSION="v1.6.3"
CLUSTER="${KIND_CLUSTER:-titanium-conformance}"
NAMESPACE="gateway-system"
RELEASE="titanium-gateway"
CONTROLLER_IMAGE="titanium-gateway:conformance"
DATA_PLANE_IMAGE="titanium:conformance"
GOLANG_IMAGE="${GOLANG_IMAGE:-golang:1.26-bookworm}"
METALLB_VERSION="${METALLB_VERSION:-v0.14.9}"
ARTIFACTS="$ROOT/artifacts"
REPORT="$ARTIFACTS/gateway-conformance-report.yaml"
HELM="$ROOT/hack/helm.sh"

skip() {
  echo "SKIP: gateway conformance not run: $*" >&2
  exit 0
}

# -- prerequisites: skip cleanly where the suite cannot run --------------------------------
[[ "$(uname -s)" == "Linux" ]] || skip "needs Linux (the suite reaches the Gateway over the container network; use WSL 2 or a Linux machine)"
command -v docker >/dev/null 2>&1 || skip "docker is not installed"
docker info >/dev/null 2>&1 || skip "no Docker daemon is reachable (docker info failed)"
command -v kind >/dev/null 2>&1 || skip "kind is not installed (https://kind.sigs.k8s.io/)"
command -v kubectl >/dev/null 2>&1 || skip "kubectl is not installed"

supported_features="$(grep -v '^[[:space:]]*#' "$ROOT/conformance/supported-features.txt" | sed '/^[[:space:]]*$/d' | paste -sd, -)"
[[ -n "$supported_features" ]] || { echo "conformance/supported-features.txt lists no feature" >&2; exit 2; }

mkdir -p "$ARTIFACTS"
WORK="$(mktemp -d)"
KUBECONFIG_HOST="$WORK/kubeconfig"
export KUBECONFIG="$KUBECONFIG_HOST"

cleanup() {
  local rc=$?
  if [[ $rc -ne 0 ]]; then collect_logs || true; fi
  if [[ -z "${KEEP_CLUSTER:-}" ]]; then kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true; fi
  rm -rf "$WORK"
  exit $rc
}

collect_logs() {
  echo "== collecting logs into artifacts/" >&2
  kubectl -n "$NAMESPACE" get all,gatewayclass,configmap,lease -o wide >"$ARTIFACTS/cluster-state.txt" 2>&1 || true
  kubectl get gateways,httproutes -A -o yaml >"$ARTIFACTS/gateway-api-objects.yaml" 2>&1 || true
  kubectl -n "$NAMESPACE" logs -l app.kubernetes.io/component=controller --all-containers --tail=-1 --prefix \
    >"$ARTIFACTS/controller.log" 2>&1 || true
  kubectl -n "$NAMESPACE" logs -l app.kubernetes.io/component=data-plane --all-containers --tail=-1 --prefix \
    >"$ARTIFACTS/data-plane.log" 2>&1 || true
}
trap cleanup EXIT

# -- images --------------------------------------------------------------------------------
echo "== building $CONTROLLER_IMAGE" >&2
docker build -t "$CONTROLLER_IMAGE" "$ROOT"
if [[ -n "${TITANIUM_PROXY_SRC:-}" ]]; then
  echo "== building $DATA_PLANE_IMAGE from $TITANIUM_PROXY_SRC" >&2
  docker build -t "$DATA_PLANE_IMAGE" "$TITANIUM_PROXY_SRC"
else
  proxy_image="${TITANIUM_PROXY_IMAGE:-ghcr.io/justcoding121/titanium:latest}"
  echo "== data plane: $proxy_image (set TITANIUM_PROXY_SRC to build it from source)" >&2
  docker pull "$proxy_image"
  docker tag "$proxy_image" "$DATA_PLANE_IMAGE"
fi

# -- cluster -------------------------------------------------------------------------------
kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
kind_args=(create cluster --name "$CLUSTER" --kubeconfig "$KUBECONFIG_HOST" --wait 120s)
[[ -n "${KIND_NODE_IMAGE:-}" ]] && kind_args+=(--image "$KIND_NODE_IMAGE")
kind "${kind_args[@]}"
kind load docker-image --name "$CLUSTER" "$CONTROLLER_IMAGE" "$DATA_PLANE_IMAGE"

# -- MetalLB: LoadBalancer addresses from the kind network ----------------------------------
echo "== MetalLB $METALLB_VERSION" >&2
kubectl apply -f "https://raw.githubusercontent.com/metallb/metallb/${METALLB_VERSION}/config/manifests/metallb-native.yaml"
kubectl -n metallb-system wait --for=condition=Available deployment/controller --timeout=180s
kubectl -n metallb-system rollout status daemonset/speaker --timeout=180s
subnet="$(docker network inspect kind -f '{{range .IPAM.Config}}{{.Subnet}} {{end}}' | tr ' ' '\n' | grep -E '^[0-9]+\.' | head -n1)"
[[ -n "$subnet" ]] || { echo "no IPv4 subnet on the kind network" >&2; exit 1; }
prefix="$(echo "$subnet" | cut -d. -f1-2)"
for attempt in 1 2 3 4 5 6 7 8 9 10; do
  if kubectl apply -f - <<YAML
apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata:
  name: kind
  namespace: metallb-system
spec:
  addresses:
    - ${prefix}.255.200-${prefix}.255.239
---
# Given only to a Service that asks for one (the suite's GatewayStaticAddresses)
apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata:
  name: kind-static
  namespace: metallb-system
spec:
  autoAssign: false
  addresses:
    - ${prefix}.255.240-${prefix}.255.250
---
apiVersion: metallb.io/v1beta1
kind: L2Advertisement
metadata:
  name: kind
  namespace: metallb-system
YAML
  then break; fi
  [[ $attempt -lt 10 ]] || exit 1
  sleep 6  # the MetalLB webhook takes a moment
done

# -- titanium-gateway ------------------------------------------------------------------------
echo "== installing the chart" >&2
"$HELM" upgrade --install "$RELEASE" "$ROOT/charts/titanium-gateway" \
  --namespace "$NAMESPACE" --create-namespace \
  --values "$ROOT/charts/titanium-gateway/ci/kind-values.yaml" \
  --set "dataPlane.service.addressRanges={${prefix}.255.192/26}" \
  --wait --timeout 5m
kubectl wait --for=condition=Accepted gatewayclass/titanium --timeout=120s

# -- the suite --------------------------------------------------------------------------------
kind get kubeconfig --internal --name "$CLUSTER" >"$WORK/kubeconfig.internal"
chmod 0644 "$WORK/kubeconfig.internal"
version="$(git -C "$ROOT" describe --tags --always --dirty 2>/dev/null || echo dev)"
echo "== Gateway API $GATEWAY_API_VERSION conformance, GATEWAY-HTTP, features: $supported_features" >&2
set +e
docker run --rm --network kind \
  -v "$WORK/kubeconfig.internal:/kube/config:ro" \
  -v "$ARTIFACTS:/artifacts" \
  -e KUBECONFIG=/kube/config \
  "$GOLANG_IMAGE" bash -euc "
    git clone --quiet --depth 1 --branch $GATEWAY_API_VERSION https://github.com/kubernetes-sigs/gateway-api /src
    cd /src/conformance  # a module of its own since v1.5 (sigs.k8s.io/gateway-api/conformance)
    go test . -run TestConformance -count=1 -timeout 60m -v -args \
      --gateway-class=titanium \
      --conformance-profiles=GATEWAY-HTTP \
      --supported-features=$supported_features \
      --organization=justcoding121 \
      --project=titanium-gateway \
      --url=https://github.com/justcoding121/titanium-gateway \
      --version=$version \
      --contact=https://github.com/justcoding121/titanium-gateway/issues \
      --report-output=/artifacts/gateway-conformance-report.yaml \
      --usable-address=${prefix}.255.245 --unusable-address=203.0.113.10 \
      ${CONFORMANCE_EXTRA_ARGS:-}
    chmod a+r /artifacts/gateway-conformance-report.yaml 2>/dev/null || true
  " 2>&1 | tee "$ARTIFACTS/conformance.log"
suite_rc=${PIPESTATUS[0]}
set -e
if [[ -f "$REPORT" ]]; then
  echo "== report: ${REPORT#"$ROOT"/}" >&2
else
  echo "== the suite wrote no report" >&2
  [[ $suite_rc -ne 0 ]] || suite_rc=1
fi
exit "$suite_rc"
