#!/usr/bin/env bash
# scripts/bare-mutex.sh, the part of thread_safety_check that rejects standard mutexes in src/:
# it fails on each kind, naming the file, and passes on pylon::Mutex, on comments and on
# common/mutex.h itself (the one place that wraps a std::mutex).
#   test/common/bare_mutex_test.sh SCRIPTS_DIR
set -uo pipefail
check="${1:?usage: bare_mutex_test.sh SCRIPTS_DIR}/bare-mutex.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# expect WANT_RC NAME FILE CONTENT: a tree holding only FILE with CONTENT; WANT_RC is 0 or 1; on
# a failure the message must name FILE.
expect() {
  local want=$1 name=$2 file=$3 content=$4
  rm -rf "$tmp/src"
  mkdir -p "$tmp/src/$(dirname "$file")"
  printf '%s\n' "$content" >"$tmp/src/$file"
  local out rc
  out=$(bash "$check" "$tmp/src" 2>&1)
  rc=$?
  if [[ $rc -ne $want ]]; then
    echo "FAIL $name: exit $rc, want $want: $out"
    failures=$((failures + 1))
  elif [[ $want -ne 0 && $out != *"$file:"* ]]; then
    echo "FAIL $name: the message does not name $file: $out"
    failures=$((failures + 1))
  else
    echo "ok   $name"
  fi
}

expect 1 "std::mutex member" k8s/thing.h $'class Thing {\n  mutable std::mutex mu_;\n};'
expect 1 "std::shared_mutex" agent/a.h '  std::shared_mutex mu_;'
expect 1 "std::recursive_mutex" agent/b.cc 'static std::recursive_mutex g_mu;'
expect 1 "std::timed_mutex" agent/c.cc '  std::timed_mutex mu_;'
expect 1 "lock_guard on a std::mutex" http/d.cc '  std::lock_guard<std::mutex> lock(mu_);'
expect 0 "pylon::Mutex" k8s/thing.h $'class Thing {\n  mutable Mutex mu_;\n  int n_ PYLON_GUARDED_BY(mu_);\n};'
expect 0 "a comment" k8s/e.cc '  // unlike std::mutex, pylon::Mutex is annotated'
expect 0 "common/mutex.h" common/mutex.h '  std::mutex mu_;'
expect 1 "another file named mutex.h" k8s/mutex.h '  std::mutex mu_;'

if ((failures)); then
  echo "$failures case(s) failed"
  exit 1
fi
echo "all cases passed"
