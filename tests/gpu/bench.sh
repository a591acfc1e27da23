#!/usr/bin/env bash
# bench.sh: issue 5's figures on the GPU machine, from the repo root, after a
# build (tests/gpu/build.sh): the micro benchmark through scuda on loopback
# and behind the 1 ms / 10 Gbit/s link, the same program natively, the
# unified-memory workloads, then the application benchmarks (by default the
# groups "training" and "generation"; arguments name others) with every scuda
# client inside isolate.sh. Writes $OUT/micro_{scuda,1ms,native}.json,
# $OUT/managed.tgz, $OUT/apps.{jsonl,md} and logs.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
out=${OUT:-$(mktemp -d /tmp/scuda-bench.XXXXXX)}
export OUT=$out
echo "== micro, loopback"
timeout 300 build/bin/scuda bench --json "$out/micro_scuda.json" >"$out/micro_scuda.md" 2>&1
tail -n 12 "$out/micro_scuda.md"
echo "== micro, 1ms-10gbit"
timeout 300 build/bin/scuda bench --link 1ms-10gbit --json "$out/micro_1ms.json" >"$out/micro_1ms.md" 2>&1
tail -n 12 "$out/micro_1ms.md"
echo "== micro, native (no server: the real driver)"
env -u SCUDA_SERVER timeout 300 build/bin/scuda-bench-micro --json "$out/micro_native.json" >"$out/micro_native.md" 2>&1
tail -n 12 "$out/micro_native.md"
echo "== unified memory: the managed samples, managed_read, scuda bench --quick"
OUT=$out SCUDA_SKIP_BUILD=1 bash tests/gpu/diagnostics/managed_samples.sh
echo "== apps"
[ $# -gt 0 ] || set -- training generation
SCUDA_ISOLATE=1 bash bench/apps/run.sh "$@"
