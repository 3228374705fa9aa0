#!/usr/bin/env bash
# Fails, naming file and line, on every standard mutex type used under SRC_DIR outside
# common/mutex.h: a std::mutex carries no annotations, so clang's thread-safety analysis cannot
# check what it guards (use pylon::Mutex, MutexLock and PYLON_GUARDED_BY from common/mutex.h).
# Comment lines do not count. Run by scripts/thread-safety.sh (ctest thread_safety_check).
#   scripts/bare-mutex.sh SRC_DIR
set -euo pipefail
src=${1:?usage: bare-mutex.sh SRC_DIR}
src=${src%/}
hits=$(grep -rnE --include='*.h' --include='*.cc' \
  'std::(recursive_|shared_)?(timed_)?mutex\b' "$src" |
  grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' |
  grep -vE "^${src}/common/mutex\.h:" || true)
if [[ -n $hits ]]; then
  while IFS= read -r h; do
    file=${h%%:*}
    rest=${h#*:}
    echo "thread-safety: ${file#"$src"/}:${rest%%:*}: a bare standard mutex; use pylon::Mutex" \
      "(common/mutex.h) and annotate what it guards: ${rest#*:}" >&2
  done <<<"$hits"
  exit 1
fi
echo "thread-safety: no bare standard mutex under $src"
