#!/usr/bin/env bash
# make dev: the local cluster up; the pod runner (tools/podrunner: the kubelet and load-balancer
# stand-in) running its pods as local programs; the chart installed with Helm
# (hack/kube/dev-values.yaml: the controller of this working tree and the reference data plane
# as the chart's own pods); the quick start and echo backends for it applied; a request sent
# through the Gateway's address. Run it again after a code change: the controller restarts with
# it, and the quick start is left as you edited it. docs/development.md.
#   hack/kube/dev.sh [DIR]      (DIR: $TITANIUM_KUBE_DIR, else .cache/kube/cluster)
# Environment: PYTHON (default python3), the interpreter with `pip install -e '.[test]'`: it runs
# the pod runner, and through it the controller, the data plane and the backends.
# DEV_VALUES: values files of yours (space-separated), applied after hack/kube/dev-values.yaml;
# remembered in DIR/dev/values-files, so a later run without DEV_VALUES applies them again
# (DEV_VALUES=none forgets them).
# PODRUNNER_CHANGE_DETECTION: the pod runner's ConfigMap/Secret change detection, Cache (default)
# or Watch (the kubelet's default; tools/podrunner/README.md), for a pod runner it starts.
set -euo pipefail
# shellcheck source=hack/kube/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root hack/kube/dev.sh
command -v nsenter >/dev/null 2>&1 || { echo "hack/kube/dev.sh: needs nsenter (util-linux)" >&2; exit 2; }
PYTHON="${PYTHON:-python3}"
DIR="$(cluster_dir "${1:-}")"
"$PYTHON" -c "import kubernetes, yaml, cryptography, aiohttp, prometheus_client, h2, grpc, google.protobuf" 2>/dev/null || {
  echo "hack/kube/dev.sh: $PYTHON lacks the packages of pip install -e '.[test]' (make install; or PYTHON=.venv/bin/python)" >&2
  exit 2
}
# The user's values files, as absolute paths (checked before anything starts).
USER_VALUES=()
if [[ -n "${DEV_VALUES:-}" && "$DEV_VALUES" != none ]]; then
  for f in $DEV_VALUES; do
    [[ -f "$f" ]] || { echo "hack/kube/dev.sh: DEV_VALUES: no file $f" >&2; exit 2; }
    USER_VALUES+=("$(realpath "$f")")
  done
fi
"$KUBE_ROOT/hack/kube/build.sh"
"$KUBE_ROOT/hack/kube/up.sh" "$DIR"
mkdir -p "$DIR/dev"
REMEMBERED="$DIR/dev/values-files"
if [[ "${DEV_VALUES:-}" == none ]]; then
  rm -f "$REMEMBERED"
elif [[ ${#USER_VALUES[@]} -gt 0 ]]; then
  printf '%s\n' "${USER_VALUES[@]}" >"$REMEMBERED"
elif [[ -s "$REMEMBERED" ]]; then
  mapfile -t USER_VALUES <"$REMEMBERED"
  for f in "${USER_VALUES[@]}"; do
    [[ -f "$f" ]] || { echo "hack/kube/dev.sh: your values file $f (from an earlier make dev) is gone: DEV_VALUES=none forgets it" >&2; exit 2; }
  done
  echo "hack/kube/dev.sh: with your values from an earlier run: ${USER_VALUES[*]} (DEV_VALUES=none forgets them)" >&2
fi
VALUES_ARGS=()
for f in "${USER_VALUES[@]}"; do VALUES_ARGS+=(--values "$f"); done
# shellcheck disable=SC1091
source "$DIR/cluster.env"
# Helm is fetched (once) outside the cluster's network, which has no way out.
HELM="$("$KUBE_ROOT/hack/helm.sh" --print-path)"
cd "$KUBE_ROOT"

# The pod runner, once per cluster: started with nsenter --net (ip netns exec would give it a
# mount namespace of its own, hiding the pod namespaces it creates from hack/kube/down.sh), in a
# session of its own; down.sh stops it with everything else in the cluster's network.
RUNNER_PID="$DIR/run/dev-podrunner.pid"
if [[ -f "$RUNNER_PID" ]] && kill -0 "$(cat "$RUNNER_PID")" 2>/dev/null; then
  echo "hack/kube/dev.sh: the pod runner is running (pid $(cat "$RUNNER_PID"), log ${DIR#"$KUBE_ROOT"/}/logs/dev-podrunner.log)" >&2
else
  rm -rf "$DIR/dev/pods"
  mkdir -p "$DIR/dev"
  nsenter --net="/run/netns/$TITANIUM_KUBE_NETNS" -- setsid env KUBECONFIG="$DIR/admin.kubeconfig" \
    PYTHONPATH="$KUBE_ROOT" "$PYTHON" -m tools.podrunner --images hack/kube/dev-images.yaml \
    --state-dir "$DIR/dev/pods" --netns-prefix "tgp-$TITANIUM_KUBE_ID-" --node-name "$TITANIUM_KUBE_NODE" \
    --sync-period 10 --backoff 1 \
    --config-map-and-secret-change-detection-strategy "${PODRUNNER_CHANGE_DETECTION:-Cache}" </dev/null >>"$DIR/logs/dev-podrunner.log" 2>&1 &
  echo $! >"$RUNNER_PID"
  echo "hack/kube/dev.sh: started the pod runner (pid $!, log ${DIR#"$KUBE_ROOT"/}/logs/dev-podrunner.log)" >&2
fi

TITANIUM_KUBE_DIR="$DIR" PYTHONPATH="$KUBE_ROOT${PYTHONPATH:+:$PYTHONPATH}" \
  "$KUBE_ROOT/hack/kube/exec.sh" "$PYTHON" "$KUBE_ROOT/hack/kube/dev.py" --helm "$HELM" "${VALUES_ARGS[@]}"

# How to reach this cluster from here on (its directory is named unless it is the default one).
ex="hack/kube/exec.sh" again="make dev" down="make cluster-down"
if [[ "$DIR" != "$(TITANIUM_KUBE_DIR='' cluster_dir "")" ]]; then
  rel="${DIR#"$KUBE_ROOT"/}"
  ex="TITANIUM_KUBE_DIR=$rel hack/kube/exec.sh" again="make dev KUBE_DIR=$rel" down="make cluster-down KUBE_DIR=$rel"
fi
address="$(cat "$DIR/dev/gateway-address" 2>/dev/null || echo ADDRESS)"
cat >&2 <<MSG
make dev: everything keeps running in the background. The Gateway's address is inside the
cluster's network: run commands there with hack/kube/exec.sh (kubectl is set up there too).
  $ex curl -H 'Host: shop.example.com' http://$address/api/items
  $ex bash
      a shell there: the README's kubectl and curl commands work as they are
  $ex kubectl -n gateway-system logs -f deploy/titanium-gateway-controller
      the controller's log (--previous: before its last restart)
  $again
      after a code change: the controller restarts with it (your edits to the quick start stay)
  $again DEV_VALUES=my-values.yaml
      chart values of yours on top of hack/kube/dev-values.yaml, kept for later runs
  $down
      stop everything
MSG
