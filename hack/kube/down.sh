#!/usr/bin/env bash
# Stop the local cluster of DIR and leave nothing running:
#   hack/kube/down.sh [DIR]        (DIR: $TITANIUM_KUBE_DIR, else .cache/kube/cluster)
# Every process in its network namespace (control plane, controllers, pods) gets SIGTERM, then
# SIGKILL (after 20 s; the API server once it has stopped listening); the pod namespaces tgp-<id>-* and the cluster namespace tgk-<id> are deleted.
# DIR keeps the logs (DIR/logs/) until the next hack/kube/up.sh.
set -euo pipefail
# shellcheck source=hack/kube/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root hack/kube/down.sh
DIR="$(cluster_dir "${1:-}")"
ID="$(cluster_id "$DIR")"
NS="tgk-$ID"

if [[ "$(ip netns identify $$ 2>/dev/null)" == "$NS" ]]; then
  echo "hack/kube/down.sh: run it outside the cluster's network namespace (not through exec.sh)" >&2
  exit 2
fi
stopped=0
for pod_ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^tgp-$ID-" || true); do
  kill_netns_processes "$pod_ns" 5 || true
  ip netns delete "$pod_ns"
done
if netns_exists "$NS"; then
  kill_netns_processes "$NS" 20 "$(cat "$DIR/run/kube-apiserver.pid" 2>/dev/null || true)"
  ip netns delete "$NS"
  stopped=1
fi
# A component whose namespace went away some other way.
for f in "$DIR"/run/*.pid; do
  [[ -e "$f" ]] || continue
  pid="$(cat "$f")"
  if [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == "$KUBE"* ]]; then
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
done
if ((stopped)); then echo "hack/kube/down.sh: stopped the cluster in $DIR" >&2; fi
