#!/usr/bin/env bash
# When the managed SGEMM's cuBLAS libraries are loaded and what each load
# costs, natively (driver_calls_timed.c, preloaded) and through scuda (the
# client's stats and the server's log), in one call. On the GPU host, from
# the repository root, with .deps carried:
#
#     bash tests/gpu/diagnostics/library_timing.sh
#
# Figures: docs/bench/managed.md.
set -u
out=${OUT:-/tmp/scuda-library-timing}
mkdir -p "$out"
source tests/gpu/build.sh
mkdir -p build/gpu
gcc -O2 -shared -fPIC -I/usr/local/cuda/include -o build/gpu/driver_calls_timed.so \
  tests/gpu/diagnostics/driver_calls_timed.c -ldl || echo "gcc driver_calls_timed failed"
nvcc -O2 -arch=sm_90 -Itests/gpu/programs -o build/gpu/sample_managed_sgemm \
  tests/gpu/samples/managed_sgemm.cu -lcublas || echo "nvcc managed_sgemm failed"
sample=build/gpu/sample_managed_sgemm
for rep in 1 2; do
  echo "== native $rep"
  timeout 60 "$sample" | grep -a '^# '
  echo "== native, driver calls timed $rep"
  LD_PRELOAD=$PWD/build/gpu/driver_calls_timed.so timeout 60 "$sample" 2>&1 |
    grep -a '^# \|\[spy\]' | head -n 20
done
echo "== native, CUDA_MODULE_LOADING=EAGER"
CUDA_MODULE_LOADING=EAGER timeout 60 "$sample" | grep -a '^# '
port=14998
SCUDA_LOG_LEVEL=debug build/bin/scuda server -l "127.0.0.1:$port" >"$out/server.log" 2>&1 &
server=$!
sleep 2
for rep in 1 2 3; do
  echo "== scuda $rep"
  timeout 60 tests/gpu/isolate.sh env SCUDA_STATS=1 \
    build/bin/scuda run --server "127.0.0.1:$port" -- "$sample" >"$out/scuda.$rep.out" \
    2>"$out/scuda.$rep.err"
  grep -a '^# ' "$out/scuda.$rep.out"
  grep -a '^image: \|^library-get-kernel \|^managed: load fault ' "$out/scuda.$rep.err"
done
grep -a 'image\|library' "$out/server.log" | tail -n 40
# The server must end, or the device call that runs this never returns.
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
