#!/usr/bin/env bash
# Restart one component of a running local cluster (same command line, same state):
#   hack/kube/restart.sh kube-apiserver|kube-controller-manager|kube-scheduler [DIR]
# The old process gets SIGTERM (SIGKILL after 30 s; the API server as soon as it has stopped
# listening, see lib.sh: about 1 s instead of its 60 s wait for open watches); for the API
# server the script waits until /readyz answers again. Every client's connections break; the
# API server's watch cache starts afresh (with etcd compacted first, watches from older
# resourceVersions then get 410 Gone).
set -euo pipefail
# shellcheck source=hack/kube/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root hack/kube/restart.sh
NAME="${1:?usage: hack/kube/restart.sh kube-apiserver|kube-controller-manager|kube-scheduler [DIR]}"
DIR="$(cluster_dir "${2:-}")"
NS="$(cluster_netns "$DIR")"
[[ -f "$DIR/run/$NAME.args" ]] || { echo "hack/kube/restart.sh: no $NAME in $DIR" >&2; exit 2; }
stop_component "$DIR" "$NS" "$NAME" 30
start_component "$DIR" "$NS" "$NAME"
if [[ $NAME == kube-apiserver ]]; then
  wait_api_ready "$DIR" "$NS" "${TITANIUM_KUBE_READY_TIMEOUT:-300}"
fi
echo "hack/kube/restart.sh: $NAME restarted in $DIR" >&2
