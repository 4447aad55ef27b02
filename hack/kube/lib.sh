# Shared by hack/kube/*.sh (sourced). The cluster directory, its id and network namespace
# (docs/development.md, "The local cluster").
# shellcheck shell=bash
KUBE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
KUBE_BIN="$KUBE_ROOT/.cache/kube/bin"
KUBE="$KUBE_BIN/kube"
KUBE_NODE_IP=198.18.0.1
KUBE_API_PORT=6443
KUBE_NODE_NAME=titanium-node-0

# cluster_dir [DIR]: the absolute cluster directory (argument, else $TITANIUM_KUBE_DIR, else
# .cache/kube/cluster of the repository).
cluster_dir() {
  local d="${1:-${TITANIUM_KUBE_DIR:-$KUBE_ROOT/.cache/kube/cluster}}"
  realpath -m "$d"
}

# cluster_id DIR: the first 8 hex digits of the sha256 of the absolute directory's path.
cluster_id() {
  printf '%s' "$1" | sha256sum | cut -c1-8
}

cluster_netns() {
  echo "tgk-$(cluster_id "$1")"
}

netns_exists() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$1"
}

need_root() {
  if [[ "$(id -u)" != 0 ]]; then
    echo "$1: the local cluster runs in a network namespace of its own: run as root" >&2
    exit 2
  fi
  command -v ip >/dev/null 2>&1 || { echo "$1: needs iproute2 (ip)" >&2; exit 2; }
}

# api_listening NS: the API server of the cluster in network namespace NS accepts connections.
api_listening() {
  ip netns exec "$1" bash -c "exec 3<>/dev/tcp/$KUBE_NODE_IP/$KUBE_API_PORT" 2>/dev/null
}

# After SIGTERM, kube-apiserver closes its port at once and finishes the requests in flight, then
# waits up to its request timeout (60 s) for the watches still open to end before it exits:
# nothing is left to do by then. So an API server that has not been listening for
# KUBE_API_IDLE_KILL tenths of a second gets SIGKILL (its embedded etcd runs without fsync and
# its data is in the page cache: a restart finds it as it was).
KUBE_API_IDLE_KILL=10

# kill_netns_processes NS GRACE [APISERVER_PID]: SIGTERM every process in network namespace NS,
# SIGKILL what is left after GRACE seconds; APISERVER_PID (if given) is killed as soon as it has
# stopped listening (above).
kill_netns_processes() {
  local ns="$1" grace="$2" api_pid="${3:-}" pids i idle=0
  pids="$(ip netns pids "$ns" 2>/dev/null || true)"
  [[ -n "$pids" ]] || return 0
  # shellcheck disable=SC2086
  kill -TERM $pids 2>/dev/null || true
  for ((i = 0; i < grace * 10; i++)); do
    pids="$(ip netns pids "$ns" 2>/dev/null || true)"
    [[ -n "$pids" ]] || return 0
    if [[ -n "$api_pid" ]] && kill -0 "$api_pid" 2>/dev/null; then
      if api_listening "$ns"; then idle=0; elif ((++idle >= KUBE_API_IDLE_KILL)); then kill -KILL "$api_pid" 2>/dev/null || true; fi
    fi
    sleep 0.1
  done
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    [[ -n "$(ip netns pids "$ns" 2>/dev/null || true)" ]] || return 0
    sleep 0.1
  done
  echo "hack/kube: processes left in $ns: $(ip netns pids "$ns" | tr '\n' ' ')" >&2
  return 1
}

# stop_component DIR NS NAME GRACE: SIGTERM the component of DIR/run/NAME.pid, SIGKILL after
# GRACE seconds (the API server: once it has stopped listening, see above); returns when it is gone.
stop_component() {
  local dir="$1" ns="$2" name="$3" grace="$4" pid i idle=0
  pid="$(cat "$dir/run/$name.pid" 2>/dev/null || true)"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid"
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    if [[ $name == kube-apiserver ]]; then
      if api_listening "$ns"; then idle=0; elif ((++idle >= KUBE_API_IDLE_KILL)); then break; fi
    fi
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}

# start_component DIR NS NAME: start `kube` with the arguments in DIR/run/NAME.args inside NS,
# in a session of its own (a Ctrl-C in the caller's terminal does not reach it), logging to
# DIR/logs/NAME.log (appended) and recording its pid in DIR/run/NAME.pid.
start_component() {
  local dir="$1" ns="$2" name="$3" args=()
  mapfile -d '' -t args <"$dir/run/$name.args"
  ip netns exec "$ns" setsid "$KUBE" "${args[@]}" </dev/null >>"$dir/logs/$name.log" 2>&1 &
  echo $! >"$dir/run/$name.pid"
}

api_ready() {
  ip netns exec "$2" "$KUBE" kubectl --kubeconfig "$1/admin.kubeconfig" get --raw /readyz >/dev/null 2>&1
}

# wait_api_ready DIR NS TIMEOUT: until /readyz answers; 1 if the API server exits or the time is up.
wait_api_ready() {
  local dir="$1" ns="$2" timeout="$3" start=$SECONDS
  until api_ready "$dir" "$ns"; do
    kill -0 "$(cat "$dir/run/kube-apiserver.pid")" 2>/dev/null || { echo "kube-apiserver exited" >&2; return 1; }
    ((SECONDS - start < timeout)) || { echo "kube-apiserver not ready after ${timeout}s" >&2; return 1; }
    sleep 0.5
  done
}
