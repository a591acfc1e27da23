#!/usr/bin/env bash
# trace.sh NAME CMD...: run CMD through scuda inside isolate.sh with
# SCUDA_LOG_LEVEL=trace against a fresh loopback server; client and server
# logs go to $OUT/trace_NAME.{client,server}.log. Needs an existing build/.
# SCUDA_TRACE_LEVEL picks another log level (debug, info) for long programs.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../../.." || exit 1
out=${OUT:-/tmp}
name=$1
shift
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(SCUDA_LOG_LEVEL=${SCUDA_TRACE_LEVEL:-trace} setsid build/bin/scuda server -l "127.0.0.1:$port" -v \
  >"$out/trace_$name.server.log" 2>&1 </dev/null &)
sleep 1
SCUDA_LOG_LEVEL=${SCUDA_TRACE_LEVEL:-trace} timeout "${SCUDA_TRACE_TIMEOUT:-120}" tests/gpu/isolate.sh \
  build/bin/scuda run --server "127.0.0.1:$port" -- "$@" >"$out/trace_$name.client.log" 2>&1 </dev/null
echo "trace $name: rc=$? $(tail -n1 "$out/trace_$name.client.log" | cut -c1-200)"
pkill -f "scuda server -l 127.0.0.1:$port"
