#!/usr/bin/env bash
# Re-pin hack/kube to a Kubernetes release: require k8s.io/kubernetes VERSION and replace each
# staging module (required at v0.0.0 by k8s.io/kubernetes, which replaces it with ./staging/...)
# by its published v0.<minor>.<patch>, the list derived from k8s.io/kubernetes@VERSION's own
# go.mod. The etcd server and client follow the etcd version that go.mod requires.
#   hack/kube/update-deps.sh v1.36.3
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
VERSION="${1:?usage: hack/kube/update-deps.sh vMAJOR.MINOR.PATCH}"
STAGING="v0.${VERSION#v1.}"
modfile="$(go mod download -json "k8s.io/kubernetes@$VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')"
# Staging modules: the "=> ./staging/..." replaces of k8s.io/kubernetes.
mapfile -t staging < <(awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print $1}' "$modfile")
etcd="$(awk '$1 == "go.etcd.io/etcd/client/v3" {print $2; exit}' "$modfile")"
[[ ${#staging[@]} -gt 0 && -n "$etcd" ]] || { echo "update-deps: could not read $modfile" >&2; exit 1; }
args=()
for m in "${staging[@]}"; do args+=("-replace=$m=$m@$STAGING"); done
go mod edit -dropreplace=k8s.io/kubernetes "${args[@]}"
go mod edit -require="k8s.io/kubernetes@$VERSION" -require="go.etcd.io/etcd/server/v3@$etcd" \
  -require="go.etcd.io/etcd/client/v3@$etcd"
go mod tidy
echo "hack/kube: k8s.io/kubernetes $VERSION, ${#staging[@]} staging modules at $STAGING, etcd $etcd"
