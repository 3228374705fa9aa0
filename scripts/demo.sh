#!/usr/bin/env bash
# The demo command (README quick start): installs packages, builds, runs `pylon lab demo` as root.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
exec build/pylon lab demo "$@"
