#!/usr/bin/env bash
# Builds helm (the Helm 3 CLI) from its published Go module, as scripts/k8s-components.sh does for
# the Kubernetes components, into a cache outside the checkout, for the chart test
# (test/deploy/helm_test.cc). Prints the path of the binary on its last line.
#
#   PYLON_K8S_CACHE   cache root (default /var/cache/pylon)
#
# First build on 2 cores: several minutes; later runs find the cache and return at once.
set -euo pipefail

HELM_VERSION=v3.22.0
CACHE=${PYLON_K8S_CACHE:-/var/cache/pylon}
BIN="$CACHE/helm-$HELM_VERSION/bin"

if [[ -x "$BIN/helm" ]]; then
  echo "$BIN/helm"
  exit 0
fi
command -v go >/dev/null || { echo "pylon: Go is needed to build helm" >&2; exit 1; }
mkdir -p "$BIN"
GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOBIN="$BIN" \
  go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
"$BIN/helm" version --short >&2
echo "$BIN/helm"
