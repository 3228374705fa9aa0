#!/usr/bin/env bash
# The one test command (README quick start, and .ci/run): installs packages, builds, runs the
# fuzzers (config parser, HTTP parser) for a bounded time, then every ctest label (unit, root,
# e2e). ctest's summary is the last thing printed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
status=0
if [[ -x scripts/fuzz.sh ]]; then
  bash scripts/fuzz.sh || status=$?
fi
(cd build && ctest --output-on-failure -j2 --timeout 900) || status=$?
exit $status
