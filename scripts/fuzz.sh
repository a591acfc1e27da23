#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang into build-fuzz/ and runs each
# over its corpus (fuzz/README.md). FUZZ_SECONDS: time per harness (20).
# Exits non-zero if a harness finds a crash; the input is in build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-20}
command -v clang++ >/dev/null || { echo "fuzz.sh: needs clang++ (apt-get install clang)" >&2; exit 1; }
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSCUDA_FUZZ=ON -DSCUDA_BUILD_TESTS=OFF >build-fuzz.log 2>&1 || { tail -n 30 build-fuzz.log; exit 1; }
cmake --build build-fuzz --target fuzzers >>build-fuzz.log 2>&1 || { tail -n 30 build-fuzz.log; exit 1; }
build-fuzz/bin/make_seeds fuzz/corpus
status=0
for name in frames handshake pieces ipc_handle; do
  # New inputs go to a scratch folder: the kept corpus changes only by hand.
  work=build-fuzz/corpus-$name
  mkdir -p "$work"
  if (cd build-fuzz && "bin/${name}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 "../$work" "../fuzz/corpus/$name" >"fuzz-$name.log" 2>&1); then
    echo "$name: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "build-fuzz/fuzz-$name.log" | grep -o '[0-9]*$') runs, no crash"
  else
    echo "$name: FAILED (build-fuzz/fuzz-$name.log)"; tail -n 30 "build-fuzz/fuzz-$name.log"; status=1
  fi
done
exit $status
