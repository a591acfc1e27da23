#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang into build-fuzz/ and runs each
# over its corpus (fuzz/README.md). FUZZ_SECONDS: time per harness (20);
# FUZZ_BUILD: the build folder (build-fuzz); FUZZ_HARNESSES: which ones
# (all); FUZZ_OPT: the harnesses' optimisation and debug flags
# (-O1 -gline-tables-only); FUZZ_TESTS: ON when the folder also holds the
# sanitized CPU tests (scripts/sanitized_test.sh), so that it is not rebuilt
# without them (OFF). Exits non-zero if a harness finds a crash; the input
# is in the build folder.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=${FUZZ_SECONDS:-20}
build=${FUZZ_BUILD:-build-fuzz}
harnesses=${FUZZ_HARNESSES:-frames handshake pieces ipc_handle ops replies}
command -v clang++ >/dev/null || { echo "fuzz.sh: needs clang++ (apt-get install clang)" >&2; exit 1; }
# -O1 and line tables: the harnesses link most of the tree, which builds
# much faster so, and reports still name lines. A short run that only
# checks the harnesses (scripts/test.sh) takes -O0, which halves the build
# again at the cost of fewer runs per second.
opt=${FUZZ_OPT:--O1 -gline-tables-only}
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$opt" \
  -DSCUDA_FUZZ=ON "-DSCUDA_BUILD_TESTS=${FUZZ_TESTS:-OFF}" >"$build.log" 2>&1 || { tail -n 30 "$build.log"; exit 1; }
cmake --build "$build" --target fuzzers >>"$build.log" 2>&1 || { tail -n 30 "$build.log"; exit 1; }
"$build/bin/make_seeds" fuzz/corpus
status=0
for name in $harnesses; do
  # New inputs go to a scratch folder: the kept corpus changes only by hand.
  work=$build/corpus-$name
  mkdir -p "$work"
  if (cd "$build" && "bin/${name}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 "corpus-$name" "$root/fuzz/corpus/$name" >"fuzz-$name.log" 2>&1); then
    echo "$name: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz-$name.log" | grep -o '[0-9]*$') runs, no crash"
  else
    echo "$name: FAILED ($build/fuzz-$name.log)"; tail -n 30 "$build/fuzz-$name.log"; status=1
  fi
done
exit $status
