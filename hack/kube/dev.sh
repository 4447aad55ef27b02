#!/usr/bin/env bash
# make dev: the local cluster up, the chart installed with Helm, the controller of this working
# tree running as the chart's ServiceAccount, examples/quickstart applied, the statuses shown.
# Run it again after a code change: the controller is restarted. docs/development.md.
#   hack/kube/dev.sh            (cluster: $TITANIUM_KUBE_DIR, default .cache/kube/cluster)
set -euo pipefail
# shellcheck source=hack/kube/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root hack/kube/dev.sh
DIR="$(cluster_dir "${1:-}")"
"$KUBE_ROOT/hack/kube/build.sh"
"$KUBE_ROOT/hack/kube/up.sh" "$DIR"
# Helm is fetched (once) outside the cluster's network, which has no way out.
HELM="$("$KUBE_ROOT/hack/helm.sh" --print-path)"
cd "$KUBE_ROOT"
TITANIUM_KUBE_DIR="$DIR" PYTHONPATH="$KUBE_ROOT${PYTHONPATH:+:$PYTHONPATH}" \
  "$KUBE_ROOT/hack/kube/exec.sh" "${PYTHON:-python3}" "$KUBE_ROOT/hack/kube/dev.py" --helm "$HELM"
cat >&2 <<MSG
make dev: the controller keeps running in the background:
  hack/kube/exec.sh kubectl get gateway,httproute -A     the statuses
  tail -f ${DIR#"$KUBE_ROOT"/}/logs/dev-controller.log    its log
  make dev                                               restart it with your changes
  make cluster-down                                      stop everything
MSG
