#!/usr/bin/env bash
# The one test command (README quick start, and .ci/run): installs packages, builds, runs every
# ctest label (unit, root, e2e), then the config-parser fuzzer for a bounded time.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
status=0
(cd build && ctest --output-on-failure -j2 --timeout 900) || status=$?
if [[ -x scripts/fuzz.sh ]]; then
  bash scripts/fuzz.sh || status=$?
fi
exit $status
