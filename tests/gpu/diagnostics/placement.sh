#!/usr/bin/env bash
# placement.sh: whether the CPUs that the program and the server run on move
# a batch-8 GPT-2 generation step (bench/apps/generate.py), natively and
# through a loopback server. Prints the host's CPU topology, then for each
# placement the native and scuda step times and the busiest threads with
# the CPUs they were seen on (thread_cpu.py). Run from the repo root after
# scuda is built (tests/gpu/build.sh), as root for isolate.sh:
#   PLACEMENTS="any:any:any node0:0-7:0-7" bash tests/gpu/diagnostics/placement.sh
# A placement is LABEL:CLIENT_CPUS:SERVER_CPUS in taskset -c's syntax, or
# "any" for no pinning. MODEL (default gpt2-b8) picks generate.py's case.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
model=${MODEL:-gpt2-b8}
work=$(mktemp -d /tmp/scuda-placement.XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$work"' EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
pin() { if [ "$1" = any ]; then echo env; else echo "taskset -c $1"; fi; }
step() { grep -a '^{' "$1" | tail -n1 | python3 -c 'import json, sys; print(json.load(sys.stdin).get("step_ms"))'; }

lscpu | grep -E '^(Model name|Socket|Core|Thread|NUMA)'
lscpu -e=CPU,NODE,SOCKET,CORE 2>/dev/null | tr -s ' ' | paste -sd';'
nvidia-smi topo -m 2>/dev/null | head -3
export SCUDA_CACHE_DIR=$work/answers
for placement in ${PLACEMENTS:-any:any:any}; do
  IFS=: read -r label client server <<<"$placement"
  port=$(free_port)
  # shellcheck disable=SC2046
  $(pin "$server") build/bin/scuda server -l "127.0.0.1:$port" --module-cache "$work/modules" \
    >"$work/server.log" 2>&1 &
  pids+=($!)
  sleep 1
  # shellcheck disable=SC2046
  $(pin "$client") python3 bench/apps/generate.py "$model" >"$work/native.out" 2>&1
  # The first run through scuda fills the caches; the second is the one timed.
  # shellcheck disable=SC2046
  $(pin "$client") "$here/../isolate.sh" build/bin/scuda run --server "127.0.0.1:$port" -- \
    python3 bench/apps/generate.py "$model" >"$work/cold.out" 2>&1
  # shellcheck disable=SC2046
  python3 "$here/thread_cpu.py" "${pids[-1]}" -- $(pin "$client") "$here/../isolate.sh" \
    build/bin/scuda run --server "127.0.0.1:$port" -- python3 bench/apps/generate.py "$model" \
    >"$work/warm.out" 2>&1
  echo "== $label (client $client, server $server): native $(step "$work/native.out") ms," \
    "scuda cold $(step "$work/cold.out") ms, warm $(step "$work/warm.out") ms"
  grep -a '^#' "$work/warm.out"
  kill "${pids[-1]}" 2>/dev/null
  wait "${pids[-1]}" 2>/dev/null
done
