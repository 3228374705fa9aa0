#!/usr/bin/env bash
# Configures and builds Pylon into build/ (build/pylon, the product;
# build/pylon-dev, the lab and fault proxy). Installs Debian packages
# first, and builds (or finds in its cache) the Kubernetes components the lab and the tests run:
# scripts/k8s-components.sh, and helm for the chart test: scripts/helm.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
k8s_bin=$(bash scripts/k8s-components.sh | tail -n 1)
helm_bin=$(bash scripts/helm.sh | tail -n 1)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPYLON_MODULES= \
  -DPYLON_K8S_BIN_DIR="$k8s_bin" -DPYLON_HELM_BIN="$helm_bin" >/dev/null
cmake --build build -j"$(nproc)" "$@"
