#!/usr/bin/env bash
# Start the local control plane in the background and wait until it serves:
#   hack/kube/up.sh [DIR]        (DIR: $TITANIUM_KUBE_DIR, else .cache/kube/cluster)
# kube-apiserver (embedded etcd; RBAC; static tokens; TokenRequest; audit log),
# kube-controller-manager (deployment, replicaset, endpointslice, namespace, garbage-collector,
# serviceaccount and root-ca-certificate-publisher controllers) and kube-scheduler, one process each, inside the network namespace
# tgk-<id> (docs/development.md, "The local cluster"). Writes DIR/admin.kubeconfig; logs in
# DIR/logs/. A cluster already running in DIR is left as it is; otherwise DIR's old state is
# wiped and a fresh cluster starts. Stop it with hack/kube/down.sh [DIR].
# Environment: TITANIUM_KUBE_READY_TIMEOUT (seconds to wait for /readyz, default 300).
set -euo pipefail
# shellcheck source=hack/kube/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root hack/kube/up.sh
DIR="$(cluster_dir "${1:-}")"
NS="$(cluster_netns "$DIR")"
ADMIN="$DIR/admin.kubeconfig"
TIMEOUT="${TITANIUM_KUBE_READY_TIMEOUT:-300}"
say() { echo "hack/kube/up.sh: $*" >&2; }

[[ -x "$KUBE" ]] || "$KUBE_ROOT/hack/kube/build.sh"

kubectl_ns() { ip netns exec "$NS" "$KUBE" kubectl --kubeconfig "$ADMIN" "$@"; }

if netns_exists "$NS" && [[ -f "$ADMIN" ]] && api_ready "$DIR" "$NS"; then
  say "already running in $DIR (network namespace $NS)"
  exit 0
fi
# Whatever is left of an earlier cluster in DIR (crashed, or half stopped) goes first.
"$KUBE_ROOT/hack/kube/down.sh" "$DIR" >/dev/null
rm -rf "$DIR/etcd" "$DIR/pki" "$DIR/logs" "$DIR/run" "$DIR"/*.kubeconfig "$DIR/cluster.env" "$DIR/kubectl-cache"
mkdir -p "$DIR/logs" "$DIR/run"
"$KUBE" init --server "$KUBE_NODE_IP:$KUBE_API_PORT" "$DIR"

ip netns add "$NS"
ip -n "$NS" link set lo up
ip -n "$NS" link add tgbr0 type bridge
ip -n "$NS" addr add "$KUBE_NODE_IP/16" dev tgbr0
ip -n "$NS" link set tgbr0 up
cat >"$DIR/cluster.env" <<ENV
# The local cluster in $DIR (hack/kube/up.sh)
TITANIUM_KUBE_DIR=$DIR
TITANIUM_KUBE_ID=$(cluster_id "$DIR")
TITANIUM_KUBE_NETNS=$NS
TITANIUM_KUBE_SERVER=https://$KUBE_NODE_IP:$KUBE_API_PORT
TITANIUM_KUBE_NODE=$KUBE_NODE_NAME
TITANIUM_KUBE_VERSION=$("$KUBE" version | cut -d' ' -f1)
ENV

# start NAME ARGS...: run one component in the cluster's namespace, in a session of its own
# (a Ctrl-C in this terminal does not reach it), logging to DIR/logs/NAME.log.
# The command line is kept in DIR/run/NAME.args for hack/kube/restart.sh.
start() {
  local name="$1"
  shift
  printf '%s\0' "$@" >"$DIR/run/$name.args"
  start_component "$DIR" "$NS" "$name"
}
alive() { kill -0 "$(cat "$DIR/run/$1.pid")" 2>/dev/null; }
fail() {
  say "$1; the last lines of DIR/logs/$2.log:"
  tail -n 30 "$DIR/logs/$2.log" >&2 || true
  "$KUBE_ROOT/hack/kube/down.sh" "$DIR" >/dev/null || true
  exit 1
}

PKI="$DIR/pki"
start kube-apiserver apiserver --etcd-dir "$DIR/etcd" --etcd-log "$DIR/logs/etcd.log" -- \
  --advertise-address="$KUBE_NODE_IP" --bind-address="$KUBE_NODE_IP" --secure-port="$KUBE_API_PORT" \
  --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
  --client-ca-file="$PKI/ca.crt" --token-auth-file="$PKI/tokens.csv" \
  --requestheader-client-ca-file="$PKI/ca.crt" --requestheader-allowed-names=front-proxy-client \
  --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
  --requestheader-extra-headers-prefix=X-Remote-Extra- \
  --proxy-client-cert-file="$PKI/front-proxy-client.crt" --proxy-client-key-file="$PKI/front-proxy-client.key" \
  --authorization-mode=RBAC \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
  --service-cluster-ip-range=198.19.0.0/16 --allow-privileged=true \
  --audit-policy-file="$KUBE_ROOT/hack/kube/audit-policy.yaml" --audit-log-path="$DIR/logs/audit.log" \
  --audit-log-format=json --audit-log-mode=blocking \
  --cert-dir="$PKI" --profiling=false

start_time=$SECONDS
wait_api_ready "$DIR" "$NS" "$TIMEOUT" || fail "kube-apiserver not ready" kube-apiserver
say "kube-apiserver ready after $((SECONDS - start_time)) s"

for c in kube-controller-manager kube-scheduler; do
  kc="$DIR/$c.kubeconfig"
  extra=()
  if [[ $c == kube-controller-manager ]]; then
    # root-ca-certificate-publisher-controller: the ConfigMap kube-root-ca.crt (ca.crt = the
    # --root-ca-file) in every namespace, which every pod with a service-account token mounts.
    extra=(--controllers=deployment-controller,replicaset-controller,endpointslice-controller,namespace-controller,garbage-collector-controller,serviceaccount-controller,root-ca-certificate-publisher-controller
      --use-service-account-credentials=true --service-cluster-ip-range=198.19.0.0/16
      --root-ca-file="$PKI/ca.crt" --cluster-name=titanium)
  fi
  start "$c" "$c" --kubeconfig="$kc" --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
    --leader-elect=false --bind-address=127.0.0.1 "${extra[@]}"
done

# The one Node the scheduler binds pods to (no kubelet: nothing heart-beats it).
kubectl_ns apply -f - >/dev/null <<NODE
apiVersion: v1
kind: Node
metadata:
  name: $KUBE_NODE_NAME
  labels: {kubernetes.io/hostname: $KUBE_NODE_NAME, kubernetes.io/os: linux, kubernetes.io/arch: amd64}
NODE
now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
kubectl_ns patch node "$KUBE_NODE_NAME" --subresource=status --type=merge -p "$(cat <<JSON
{"status": {"capacity": {"cpu": "64", "memory": "256Gi", "pods": "2000", "ephemeral-storage": "1Ti"},
 "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "2000", "ephemeral-storage": "1Ti"},
 "addresses": [{"type": "InternalIP", "address": "$KUBE_NODE_IP"}, {"type": "Hostname", "address": "$KUBE_NODE_NAME"}],
 "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "no kubelet: registered by hack/kube/up.sh",
                 "lastHeartbeatTime": "$now", "lastTransitionTime": "$now"}]}}
JSON
)" >/dev/null
# The node-lifecycle controller is not running: nothing would lift the not-ready taint the API
# server puts on a new Node.
kubectl_ns taint node "$KUBE_NODE_NAME" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true

# Pods need their namespace's default ServiceAccount (the serviceaccount controller's work).
until kubectl_ns -n default get serviceaccount default >/dev/null 2>&1; do
  alive kube-controller-manager || fail "kube-controller-manager exited" kube-controller-manager
  alive kube-scheduler || fail "kube-scheduler exited" kube-scheduler
  ((SECONDS - start_time < TIMEOUT)) || fail "no default ServiceAccount after ${TIMEOUT}s" kube-controller-manager
  sleep 0.5
done
say "cluster up in $((SECONDS - start_time)) s: $DIR (network namespace $NS, https://$KUBE_NODE_IP:$KUBE_API_PORT)"
if [[ "$DIR" == "$(cluster_dir "")" ]]; then
  say "  hack/kube/exec.sh kubectl get ns"
else
  say "  TITANIUM_KUBE_DIR=$DIR hack/kube/exec.sh kubectl get ns"
fi
