#!/usr/bin/env bash
# The one test command (README quick start, and .ci/run): installs packages, builds, runs the
# fuzzers (config parser, HTTP parser) for a bounded time, then every ctest label (unit, root,
# e2e). ctest's summary is the last thing printed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
# build.sh built the Kubernetes components: a test that needs kube-apiserver and does not find it
# fails here instead of skipping (test/support/apiserver.h).
export PYLON_REQUIRE_APISERVER=1
status=0
if [[ -x scripts/fuzz.sh ]]; then
  bash scripts/fuzz.sh || status=$?
fi
(cd build && ctest --output-on-failure -j2 --timeout 900) || status=$?
exit $status
