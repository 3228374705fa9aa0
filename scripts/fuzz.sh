#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz/ and runs each for a bounded
# time, with a fixed seed, over a temporary copy of its corpus (the repo stays clean):
#   pylon_config_fuzz  fuzz/config/  the config parsers and validator
#   pylon_http_fuzz    fuzz/http/    the HTTP/1.1 request parser the agent serves on every node
# Exits non-zero on a crash, a sanitizer report or a broken invariant; the crashing input is kept
# in build-fuzz/fuzz-artifacts/<target>/ (copy it into the target's corpus/ once fixed).
# Environment: PYLON_FUZZ_SECONDS (per target, default 25), PYLON_FUZZ_SEED (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-fuzz
seconds=${PYLON_FUZZ_SECONDS:-25}
seed=${PYLON_FUZZ_SEED:-1}
# Every library the targets link is instrumented for coverage and the sanitizers; the targets
# themselves add -fsanitize=fuzzer (fuzz/<module>/CMakeLists.txt).
san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"

CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ \
  -DPYLON_FUZZ=ON -DPYLON_TESTS=OFF -DPYLON_BENCH=OFF \
  -DCMAKE_CXX_FLAGS="$san" >/dev/null
cmake --build "$build" --target pylon_config_fuzz pylon_http_fuzz -j2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

# run <module> <max_len>: fuzz/<module>/corpus, fuzz/<module>/<module>.dict.
run() {
  local module=$1 max_len=$2 target="pylon_$1_fuzz" status=0
  local dir="$work/$module"
  mkdir -p "$dir/artifacts"
  cp -r "fuzz/$module/corpus" "$dir/corpus"
  "$build/fuzz/$module/$target" "$dir/corpus" \
    -max_total_time="$seconds" -seed="$seed" -dict="fuzz/$module/$module.dict" \
    -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/" >"$dir/log" 2>&1 || status=$?
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  if [[ $status -ne 0 ]]; then
    tail -n 80 "$dir/log"
    mkdir -p "$build/fuzz-artifacts/$target"
    cp -r "$dir/artifacts/." "$build/fuzz-artifacts/$target/" 2>/dev/null || true
    echo "fuzz: $target FAILED (exit $status) after ${execs:-?} executions;" \
      "artifacts in $build/fuzz-artifacts/$target/"
    failed=$((failed + 1))
    return
  fi
  grep -E '^(#[0-9]+.*DONE|Done [0-9]+ runs)' "$dir/log" | tail -1 || true
  echo "fuzz: $target ran ${execs:-?} executions in ${seconds}s (seed $seed), no crash;" \
    "corpus grew from $(ls "fuzz/$module/corpus" | wc -l) to $(ls "$dir/corpus" | wc -l) inputs"
  passed=$((passed + 1))
}

run config 8192
run http 4096
echo "fuzz: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
