#!/usr/bin/env bash
# Run a command against the local cluster, inside its network namespace, with KUBECONFIG set to
# its admin kubeconfig and the cluster's kubectl first on PATH:
#   hack/kube/exec.sh kubectl get ns
#   hack/kube/exec.sh bash          a shell there (the Gateway's address answers curl)
# The cluster is that of $TITANIUM_KUBE_DIR (default .cache/kube/cluster). Every local cluster
# serves at the same address (https://198.18.0.1:6443, each in its own network namespace), so
# kubectl's discovery cache is kept per cluster (KUBECACHEDIR=DIR/kubectl-cache): one cluster's
# cached API versions never answer for another's.
set -euo pipefail
# shellcheck source=hack/kube/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root hack/kube/exec.sh
if [[ $# -eq 0 ]]; then
  echo "usage: hack/kube/exec.sh CMD [ARGS...]" >&2
  exit 2
fi
DIR="$(cluster_dir)"
NS="$(cluster_netns "$DIR")"
if ! netns_exists "$NS" || [[ ! -f "$DIR/admin.kubeconfig" ]]; then
  echo "hack/kube/exec.sh: no cluster running in $DIR (start it with hack/kube/up.sh${TITANIUM_KUBE_DIR:+ $DIR})" >&2
  exit 2
fi
export KUBECONFIG="$DIR/admin.kubeconfig" TITANIUM_KUBE_DIR="$DIR" PATH="$KUBE_BIN:$PATH" \
  KUBECACHEDIR="$DIR/kubectl-cache"
if [[ "$(ip netns identify $$ 2>/dev/null)" == "$NS" ]]; then
  exec "$@"
fi
exec ip netns exec "$NS" "$@"
