#!/usr/bin/env bash
# Builds the config-parser fuzzer (clang, libFuzzer, ASan + UBSan) in build-fuzz/ and runs it for a
# bounded time, with a fixed seed, over a temporary copy of fuzz/config/corpus (the repo stays
# clean). Exits non-zero on a crash, a sanitizer report or a broken invariant; the crashing input
# is kept in build-fuzz/fuzz-artifacts/.
# Environment: PYLON_FUZZ_SECONDS (default 30), PYLON_FUZZ_SEED (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-fuzz
seconds=${PYLON_FUZZ_SECONDS:-30}
seed=${PYLON_FUZZ_SEED:-1}
# Every library the target links is instrumented for coverage and the sanitizers; the target
# itself adds -fsanitize=fuzzer (fuzz/config/CMakeLists.txt).
san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"

CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ \
  -DPYLON_FUZZ=ON -DPYLON_TESTS=OFF -DPYLON_BENCH=OFF \
  -DCMAKE_CXX_FLAGS="$san" >/dev/null
cmake --build "$build" --target pylon_config_fuzz -j2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r fuzz/config/corpus "$work/corpus"
mkdir -p "$work/artifacts"

status=0
"$build/fuzz/config/pylon_config_fuzz" "$work/corpus" \
  -max_total_time="$seconds" -seed="$seed" -dict=fuzz/config/config.dict \
  -max_len=8192 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" >"$work/log" 2>&1 || status=$?

execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
if [[ $status -ne 0 ]]; then
  tail -n 80 "$work/log"
  mkdir -p "$build/fuzz-artifacts"
  cp -r "$work/artifacts/." "$build/fuzz-artifacts/" 2>/dev/null || true
  echo "fuzz: pylon_config_fuzz FAILED (exit $status) after ${execs:-?} executions;" \
    "artifacts in $build/fuzz-artifacts/"
  echo "fuzz: 0 passed, 1 failed"
  exit 1
fi
grep -E '^(#[0-9]+.*DONE|Done [0-9]+ runs)' "$work/log" | tail -1 || true
echo "fuzz: pylon_config_fuzz ran ${execs:-?} executions in ${seconds}s (seed $seed), no crash;" \
  "corpus grew from $(ls fuzz/config/corpus | wc -l) to $(ls "$work/corpus" | wc -l) inputs"
echo "fuzz: 1 passed, 0 failed"
