#!/usr/bin/env bash
# Run the controller from this checkout against the cluster of the current kubeconfig, with no
# leader election (it is the only writer: scale the in-cluster controller to 0 first).
#   hack/run-local.sh [extra controller flags...]
# Environment: NAMESPACE (default gateway-system), RELEASE (default titanium-gateway), PYTHON.
# The admin token is read from the Secret <release>-admin-token unless TITANIUM_ADMIN_TOKEN is set.
# Note: the data-plane pods' admin port is reached at their pod IPs, so Programmed is confirmed
# only where the pod network is routable from this machine.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NAMESPACE="${NAMESPACE:-gateway-system}"
RELEASE="${RELEASE:-titanium-gateway}"
PYTHON="${PYTHON:-python3}"

command -v kubectl >/dev/null 2>&1 || { echo "hack/run-local.sh: kubectl is required" >&2; exit 2; }
context="$(kubectl config current-context 2>/dev/null)" || {
  echo "hack/run-local.sh: no current kubeconfig context" >&2; exit 2; }
echo "hack/run-local.sh: context $context, namespace $NAMESPACE, release $RELEASE" >&2

replicas="$(kubectl -n "$NAMESPACE" get deployment "$RELEASE-controller" -o jsonpath='{.spec.replicas}' 2>/dev/null || true)"
if [[ -n "$replicas" && "$replicas" != "0" ]]; then
  echo "hack/run-local.sh: WARNING: deployment/$RELEASE-controller runs $replicas replica(s); two writers will fight." >&2
  echo "  kubectl -n $NAMESPACE scale deployment/$RELEASE-controller --replicas=0" >&2
fi

if [[ -z "${TITANIUM_ADMIN_TOKEN:-}" ]]; then
  TITANIUM_ADMIN_TOKEN="$(kubectl -n "$NAMESPACE" get secret "$RELEASE-admin-token" -o jsonpath='{.data.token}' 2>/dev/null | base64 -d || true)"
  [[ -n "$TITANIUM_ADMIN_TOKEN" ]] || echo "hack/run-local.sh: no admin token found; /version probes will get 401" >&2
fi
export TITANIUM_ADMIN_TOKEN
export POD_NAMESPACE="$NAMESPACE"

cd "$ROOT"
exec "$PYTHON" -m titanium_gateway controller \
  --no-leader-election \
  --data-plane-service "$RELEASE-data-plane" \
  --data-plane-namespace "$NAMESPACE" \
  --data-plane-deployment "$RELEASE-data-plane" \
  --identity "local-$(hostname)" \
  "$@"
