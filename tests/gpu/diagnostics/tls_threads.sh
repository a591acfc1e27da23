#!/usr/bin/env bash
# tls_threads.sh: where copies over TLS spend their CPU, beside plain TCP.
# Starts a plain and a TLS server on loopback (a fresh self-signed pair),
# runs the benchmark's pageable copies (scuda-bench-micro --copies-only)
# against each with SCUDA_LANES lanes, and prints each run's figures and its
# busiest threads (thread_cpu.py), client and server. Run from the repo
# root after scuda is built (tests/gpu/run.sh or tests/gpu/build.sh):
#   bash tests/gpu/diagnostics/tls_threads.sh
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d /tmp/scuda-tls-threads.XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$work"' EXIT
build/bin/scuda cert --out "$work" --name 127.0.0.1 >/dev/null || exit 1
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
plain=127.0.0.1:$(free_port) tls=127.0.0.1:$(free_port)
build/bin/scuda server -l "$plain" ${SCUDA_DRIVER:+--driver "$SCUDA_DRIVER"} >"$work/plain.log" 2>&1 &
pids+=($!)
build/bin/scuda server -l "$tls" ${SCUDA_DRIVER:+--driver "$SCUDA_DRIVER"} \
  --tls-cert "$work/server.pem" --tls-key "$work/server.key" >"$work/tls.log" 2>&1 &
pids+=($!)
sleep 2
for run in plain tls; do
  if [ "$run" = plain ]; then
    server=(--server "$plain") root=${pids[0]}
  else
    server=(--server "tls://$tls" --tls-ca "$work/ca.pem") root=${pids[1]}
  fi
  echo "== $run, ${SCUDA_LANES:-4} lanes"
  python3 "$here/thread_cpu.py" "$root" -- build/bin/scuda run "${server[@]}" -- \
    build/bin/scuda-bench-micro --copies-only --json "$work/$run.json" >"$work/$run.out" 2>&1
  grep -a '^#' "$work/$run.out"
  python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print({k: round(v, 1) for k, v in j.items() if k.endswith("gbps")})' \
    "$work/$run.json"
done
