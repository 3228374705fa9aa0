#!/usr/bin/env bash
# Builds the real Kubernetes components the lab and the end-to-end tests run against:
# kube-apiserver, kube-proxy and kubectl of one pinned release, etcd of
# one pinned release, and for the kubelet lab (docs/lab.md) kubelet, kube-controller-manager and
# kube-scheduler of the same release. They are built from their published Go modules (a small wrapper module per
# project, as envtest does for Go controllers), cached outside the checkout and reused when
# present. Prints the directory that holds the binaries on its last line.
#
#   PYLON_K8S_CACHE   cache root (default /var/cache/pylon)
#
# First build on 2 cores: about 15 minutes (module download ~1 min, compile the rest) for the
# first four, and a few more for the kubelet lab's three (they share most packages with
# kube-apiserver); later runs find the cache and return at once. A cache made before the kubelet
# lab's binaries were added keeps its binaries: only the missing ones are built.
set -euo pipefail

K8S_VERSION=v1.35.4           # k8s.io/kubernetes; staging modules are v0.35.4
ETCD_VERSION=v3.6.16          # go.etcd.io/etcd/server/v3 and its sibling modules
CACHE=${PYLON_K8S_CACHE:-/var/cache/pylon}
BIN="$CACHE/k8s-$K8S_VERSION-etcd-$ETCD_VERSION/bin"
COMPONENTS=(kube-apiserver kube-proxy kubectl etcd kubelet kube-controller-manager kube-scheduler)
# Built from k8s.io/kubernetes/cmd/<name>.
KUBE_COMMANDS=(kube-apiserver kube-proxy kubectl kubelet kube-controller-manager kube-scheduler)

have_all() {
  local c
  for c in "${COMPONENTS[@]}"; do [[ -x "$BIN/$c" ]] || return 1; done
}
if have_all; then
  echo "$BIN"
  exit 0
fi

command -v go >/dev/null || { echo "pylon: Go is needed to build the Kubernetes components" >&2; exit 1; }
export GOFLAGS=-buildvcs=false CGO_ENABLED=0
mkdir -p "$BIN"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- Kubernetes: require k8s.io/kubernetes and replace each staging module (listed at v0.0.0 in
# its go.mod) by its published v0.Y.Z.
staging_version="v0.${K8S_VERSION#v1.}"
mkdir -p "$work/k8s"
cd "$work/k8s"
go mod init pylon.local/k8s-components >/dev/null 2>&1
modfile=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
[[ -f "$modfile" ]] || { echo "pylon: cannot download k8s.io/kubernetes@$K8S_VERSION" >&2; exit 1; }
go mod edit -require="k8s.io/kubernetes@$K8S_VERSION"
while read -r mod; do
  go mod edit -replace="$mod=$mod@$staging_version"
done < <(awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" {print $1}' "$modfile")
# The wrapper takes every other pin from k8s.io/kubernetes' own go.mod.
awk '/^require \(/{r=1;next} r&&/^\)/{r=0} r&&$1!~/^k8s\.io\//&&$2~/^v/{print $1"@"$2}' "$modfile" |
  while read -r dep; do go mod edit -require="$dep"; done
cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
go mod tidy -e >/dev/null 2>&1 || true
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2)"
ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2)"
for c in "${KUBE_COMMANDS[@]}"; do
  [[ -x "$BIN/$c" ]] && continue
  echo "pylon: building $c $K8S_VERSION (first time only)" >&2
  start=$SECONDS
  go build -trimpath -ldflags "$ldflags" -o "$BIN/$c.tmp" "k8s.io/kubernetes/cmd/$c"
  mv "$BIN/$c.tmp" "$BIN/$c"
  echo "pylon: built $c in $((SECONDS - start)) s" >&2
done

# --- etcd: the server module's main package.
if [[ ! -x "$BIN/etcd" ]]; then
  echo "pylon: building etcd $ETCD_VERSION (first time only)" >&2
  mkdir -p "$work/etcd"
  cd "$work/etcd"
  go mod init pylon.local/etcd >/dev/null 2>&1
  go mod edit -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  for m in api/v3 client/pkg/v3 client/v3 pkg/v3; do
    go mod edit -replace="go.etcd.io/etcd/$m=go.etcd.io/etcd/$m@$ETCD_VERSION"
  done
  cat > tools.go <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
  go mod tidy -e >/dev/null 2>&1 || true
  go build -trimpath -ldflags "-s -w" -o "$BIN/etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$BIN/etcd.tmp" "$BIN/etcd"
fi
have_all || { echo "pylon: Kubernetes components missing after the build" >&2; exit 1; }
echo "$BIN"
