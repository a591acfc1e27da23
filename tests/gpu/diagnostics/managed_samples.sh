#!/usr/bin/env bash
# Where the unified-memory samples' time goes through scuda: managed_vector_add,
# managed_sgemm and managed_sparse twice each, natively and through a loopback
# server with SCUDA_STATS (inside isolate.sh), then managed_read.cu over
# 1 GiB and `scuda bench --quick` twice. On the GPU host, from the repository
# root, with .deps carried:
#
#     bash tests/gpu/diagnostics/managed_samples.sh
#
# Prints each run's `# ` lines; the stats tables, their JSON and the server's
# log go to $OUT/managed.tgz. Figures: docs/bench/managed.md.
set -u
out=${OUT:-/tmp/scuda-managed}
logs=$out/managed
mkdir -p "$logs"
source tests/gpu/build.sh
mkdir -p build/gpu
samples=(managed_vector_add managed_sgemm managed_sparse)
for s in "${samples[@]}"; do
  f=tests/gpu/samples/$s.cu
  # shellcheck disable=SC2046  # the sample's nvcc flags are words
  nvcc -O2 -arch=sm_90 -Itests/gpu/programs -o "build/gpu/sample_$s" "$f" \
    $(sed -n 's|^// nvcc: ||p' "$f") || echo "nvcc $s failed"
done
nvcc -O2 -o build/gpu/managed_read tests/gpu/diagnostics/managed_read.cu || echo "nvcc managed_read failed"
port=14999
build/bin/scuda server -l "127.0.0.1:$port" >"$logs/server.log" 2>&1 &
server=$!
sleep 2
for rep in 1 2; do
  for s in "${samples[@]}"; do
    echo "== $s native $rep"
    timeout 60 "build/gpu/sample_$s" 2>&1 | grep -a '^# \|RESULT'
    echo "== $s scuda $rep"
    timeout 60 tests/gpu/isolate.sh env SCUDA_STATS=1 SCUDA_STATS_JSON="$logs/$s.$rep.json" \
      build/bin/scuda run --server "127.0.0.1:$port" -- "build/gpu/sample_$s" \
      >"$logs/$s.$rep.out" 2>"$logs/$s.$rep.err"
    grep -a '^# \|RESULT' "$logs/$s.$rep.out"
  done
done
echo "== managed_read native"
timeout 60 build/gpu/managed_read 1024 3 2>&1 | tail -n 8
echo "== managed_read scuda"
timeout 90 tests/gpu/isolate.sh env SCUDA_STATS=1 build/bin/scuda run --server "127.0.0.1:$port" -- \
  build/gpu/managed_read 1024 3 >"$logs/read.out" 2>"$logs/read.err"
tail -n 8 "$logs/read.out"
for i in 1 2; do
  timeout 120 build/bin/scuda bench --quick --server "127.0.0.1:$port" --json "$logs/bench$i.json" \
    >/dev/null 2>&1
  python3 -c "import json, sys; d = json.load(open(sys.argv[1])); \
print({k: v for k, v in d.items() if 'managed' in k or 'raw_tcp' in k or 'local_query' in k})" \
    "$logs/bench$i.json"
done
# The server must end, or the device call that runs this never returns.
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
tar czf "$out/managed.tgz" -C "$out" managed && rm -rf "$logs"
