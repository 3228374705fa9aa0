#!/usr/bin/env bash
# The longest functions and .cc files of a source tree (issue "a codebase others copy from" sets
# 120 lines a function and 600 a .cc file). Function extents come from universal-ctags (a lambda
# is its own entry).
#   scripts/sizes.sh [DIR] [--top N]        print the N longest of each (default 15)
#   scripts/sizes.sh [DIR] --check          exit 1 and name them if any is over its limit
set -euo pipefail
dir=src top=15 check=0
while (($#)); do
  case $1 in
    --top) top=$2; shift ;;
    --check) check=1 ;;
    *) dir=$1 ;;
  esac
  shift
done
command -v ctags >/dev/null || { echo "sizes: ctags missing (scripts/deps.sh)" >&2; exit 2; }
readonly max_function=120 max_file=600
functions=$(ctags --fields=+ne --c++-kinds=f --languages=C++ -o - -R "$dir" |
  awk -F'\t' '{ l = 0; e = 0
    for (i = 4; i <= NF; i++) { if ($i ~ /^line:/) l = substr($i, 6); if ($i ~ /^end:/) e = substr($i, 5) }
    if (e > 0) print e - l + 1 "\t" $2 ":" l "\t" $1 }' | sort -rn)
files=$(find "$dir" -name '*.cc' -print0 | xargs -0 wc -l | grep -v ' total$' |
  awk '{ print $1 "\t" $2 }' | sort -rn)
if ((check)); then
  over_f=$(awk -F'\t' -v m=$max_function '$1 > m' <<<"$functions")
  over_c=$(awk -F'\t' -v m=$max_file '$1 > m' <<<"$files")
  [[ -n $over_f ]] && printf 'functions over %d lines:\n%s\n' $max_function "$over_f"
  [[ -n $over_c ]] && printf '.cc files over %d lines:\n%s\n' $max_file "$over_c"
  [[ -z $over_f && -z $over_c ]] && { echo "sizes: every function <= $max_function lines, every .cc <= $max_file"; exit 0; }
  exit 1
fi
echo "longest functions (lines, where, name):"
head -n "$top" <<<"$functions"
echo "longest .cc files (lines, file):"
head -n "$top" <<<"$files"
