#!/usr/bin/env bash
# Configures and builds Pylon into build/ (the binary is build/pylon). Installs Debian packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPYLON_MODULES= >/dev/null
cmake --build build -j"$(nproc)" "$@"
