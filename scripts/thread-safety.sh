#!/usr/bin/env bash
# clang's thread-safety analysis (-Wthread-safety, as errors) on every source that uses
# common/mutex.h's annotations, compiled as the build compiles it (compile_commands.json of the
# given build directory) but by clang++ and without output. First, no standard mutex may be left
# in src/ (scripts/bare-mutex.sh): every mutex is a pylon::Mutex, so the analysis sees them all.
# Run by ctest (thread_safety_check).
#   scripts/thread-safety.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: thread-safety.sh BUILD_DIR}
scripts=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$scripts/../src" && pwd)
db="$build/compile_commands.json"
status=0
bash "$scripts/bare-mutex.sh" "$src" || status=1
[[ -f $db ]] || { echo "thread-safety: no $db" >&2; exit 1; }
command -v clang++ >/dev/null || { echo "thread-safety: clang++ missing (scripts/deps.sh)" >&2; exit 1; }
# The sources: those that use the annotations, and for every header that does, the .cc files
# beside it that include it and carry its name (agent.h: agent.cc, agent_inputs.cc, ...), where
# its class's members are defined.
headers=$(grep -rlE 'PYLON_(GUARDED_BY|REQUIRES)' "$src" --include='*.h')
mapfile -t files < <(
  {
    grep -rlE 'PYLON_(GUARDED_BY|REQUIRES)' "$src" --include='*.cc'
    for h in $headers; do
      rel=${h#"$src"/}
      for c in "${h%.h}.cc" "${h%.h}"_*.cc; do
        [[ -f $c ]] && grep -qF "#include \"$rel\"" "$c" && echo "$c"
      done
    done
  } | sort -u)
for f in "${files[@]}"; do
  [[ -f $f ]] || continue
  # The compile command of $f: the "command" line just before its "file" line.
  cmd=$(grep -B1 -F "\"file\": \"$f\"" "$db" | sed -nE 's/^ *"command": "(.*)",$/\1/p' | head -n 1)
  if [[ -z $cmd ]]; then
    echo "thread-safety: $f is not in $db" >&2
    status=1
    continue
  fi
  cmd=${cmd//\\\"/\"}
  read -r -a argv <<<"$cmd"
  out=(clang++)
  skip=0
  for a in "${argv[@]:1}"; do
    if ((skip)); then skip=0; continue; fi
    case $a in
      */ccache | */c++ | */g++) ;;
      -o | -MF | -MT) skip=1 ;;
      -c | -MD) ;;
      *) out+=("$a") ;;
    esac
  done
  if ! "${out[@]}" -fsyntax-only -Wthread-safety -Werror -Wno-unknown-warning-option; then
    status=1
  fi
  echo "thread-safety: ${f#"$src"/} checked"
done
exit $status
