#!/usr/bin/env bash
# Build the local control plane (hack/kube: kube-apiserver with embedded etcd,
# kube-controller-manager, kube-scheduler, kubectl in one program) into .cache/kube/bin/.
# Go's own build and module caches are reused: a second run with nothing changed takes seconds.
#   hack/kube/build.sh
set -euo pipefail
# shellcheck source=hack/kube/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$KUBE_ROOT/hack/kube"

want_go="$(awk '$1 == "go" {print $2; exit}' go.mod)"
if ! command -v go >/dev/null 2>&1; then
  echo "hack/kube/build.sh: no Go toolchain on PATH (the local control plane needs Go >= $want_go and the Go module proxy)" >&2
  exit 3
fi
mkdir -p "$KUBE_BIN"
exec 9>"$KUBE_BIN/.build.lock"
flock 9  # one build at a time (CI and a test run may both ask)

# The version the servers report (kubectl version): that of the k8s.io/kubernetes module.
read -r version vtime < <(go list -m -f '{{.Version}} {{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
major="${version#v}"; major="${major%%.*}"
minor="${version#v*.}"; minor="${minor%%.*}"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$vtime -X $pkg.gitCommit=k8s.io/kubernetes@$version"
done

start=$SECONDS
echo "hack/kube/build.sh: building kube $version ($(go env GOVERSION)) into ${KUBE_BIN#"$KUBE_ROOT"/}" >&2
# go build leaves an up-to-date binary alone (no relink) and otherwise unlinks it before
# writing, so a running cluster keeps its old binary.
go build -ldflags "$ldflags" -o "$KUBE" .
ln -sfn kube "$KUBE_BIN/kubectl"
echo "hack/kube/build.sh: done in $((SECONDS - start)) s: $("$KUBE" version)" >&2
