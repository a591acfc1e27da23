#!/usr/bin/env bash
# Where a cuda-sample's time goes through scuda: each named sample runs
# alone (not 8 at a time, as samples.sh runs them), natively and through
# scuda with SCUDA_STATS=1, after the fixed costs of a run: isolate.sh alone,
# `scuda run` of a program that does nothing, and of one that only calls
# cuInit. Run after samples.sh on the GPU host (it reuses its build, its
# unpacked samples and starts a server of its own):
#   bash tests/gpu/diagnostics/sample_costs.sh simpleStreams inlinePTX
# Writes sample_costs.txt (times, then each run's --stats) to $OUT.
set -u
repo=$PWD
out=${OUT:-/tmp}
report=$out/sample_costs.txt
work=$repo/.samples
: >"$report"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
server=127.0.0.1:$port
build/bin/scuda server -l "$server" >/tmp/sample_costs_server.log 2>&1 &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null' EXIT
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done

# timed LABEL CMD...: one line "LABEL seconds", the command's stderr kept.
timed() {
  local label=$1 t0
  shift
  t0=$(date +%s.%N)
  "$@" >/tmp/sample_costs.out 2>/tmp/sample_costs.err
  printf '%-40s %s s (rc %s)\n' "$label" \
    "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')" "$?" >>"$report"
}

cat >/tmp/cuinit.c <<'C'
#include <cuda.h>
int main(void) { return cuInit(0) != CUDA_SUCCESS; }
C
gcc -o /tmp/cuinit /tmp/cuinit.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda
scuda=("$repo/tests/gpu/isolate.sh" "$repo/build/bin/scuda" run --server "$server" --)
timed "isolate.sh true" tests/gpu/isolate.sh true
timed "scuda run -- true" "${scuda[@]}" true
timed "native cuInit" /tmp/cuinit
timed "scuda cuInit" "${scuda[@]}" /tmp/cuinit

for name in "$@"; do
  args=$(awk -F'|' -v n="$name" '{ gsub(/ /, "", $1) } $1 == n { print $2 }' tests/gpu/compliance/cuda-samples.txt)
  exes=("$work"/run/*/"$name/$name")
  dir=${exes[0]%/*}
  # shellcheck disable=SC2086
  (cd "$dir" && timed "$name native" "${exes[0]}" $args)
  # shellcheck disable=SC2086
  (cd "$dir" && SCUDA_STATS=1 timed "$name scuda" "${scuda[@]}" "${exes[0]}" $args)
  { echo "--- $name: scuda stderr (stats)"; tail -n 60 /tmp/sample_costs.err; } >>"$report"
done
cat "$report"
