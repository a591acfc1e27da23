#!/usr/bin/env bash
# shellcheck disable=SC2034,SC2154  # reads and sets the sourcing script's variables
# timed.sh: sourced by the GPU test scripts (run.sh, multi_gpu.sh), which set
# $logs (a folder) and $limit (seconds) first.
# timed NAME CMD...: runs CMD with a timeout, output in $logs/NAME.{out,err};
# sets rc, secs and detail (the RESULT line, else the reason it failed).
timed() {
  local name=$1 t0
  shift
  t0=$(date +%s.%N)
  timeout "$limit" "$@" >"$logs/$name.out" 2>"$logs/$name.err"
  rc=$?
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  detail=$(grep -a '^RESULT ' "$logs/$name.out" | tail -n1)
  [ "$rc" -eq 124 ] && detail="timeout after ${limit}s"
  [ -n "$detail" ] || detail="rc=$rc $(grep -av '^isolate:' "$logs/$name.err" | head -n1)"
}
