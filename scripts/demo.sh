#!/usr/bin/env bash
# The demo command (README quick start): installs packages, builds, runs `pylon-dev lab demo` as root.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
# Without arguments: the whole data path (kube-proxy and pods) and BGP to an upstream router.
if (($# == 0)); then set -- --kube-proxy --bgp; fi
exec build/pylon-dev lab demo "$@"
