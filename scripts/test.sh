#!/usr/bin/env bash
# The test command: installs what is needed, builds, runs every CPU test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# Tests and the lock order check on, whatever an earlier build
# (scripts/quickstart.sh) left in the cache; the binaries standalone, as
# users get them (fmt and spdlog compiled in once); line tables (-g1) rather
# than full debug information, which is a sixth of each file's compile time
# and not needed for a failing test's stack; -O1, which compiles the test
# programs about a third faster than -O2 (the sanitized build is -O0); and no tests at
# all is a failure, not a pass.
scripts/build.sh -DSCUDA_BUILD_TESTS=ON -DSCUDA_CHECK_LOCK_ORDER=ON -DSCUDA_STANDALONE=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
# The packaging check (packages_build) builds the release tree with line
# tables and -O1 too: its link-time-optimised links are a third shorter so,
# its compiles shorter still, and what it checks (the wheel's and the
# packages' contents and size, that they install and run) depends on
# neither the debug information's depth nor the optimisation level.
export SCUDA_PACKAGE_CXX_FLAGS=${SCUDA_PACKAGE_CXX_FLAGS:-"-O1 -g1 -DNDEBUG"}
ctest --test-dir build --output-on-failure --no-tests=error -j "$(nproc)"
# The CPU tests again under ASan and UBSan, built unoptimised with clang;
# then, from the same build, every decoder of network bytes under libFuzzer
# for 10 s each: this run checks the harnesses, a long one (fuzz/README.md)
# searches.
sanitized_flags="-O0 -gline-tables-only"
SANITIZED_BUILD=build-fuzz SANITIZED_OPT=$sanitized_flags scripts/sanitized_test.sh
FUZZ_SECONDS=${FUZZ_SECONDS:-10} FUZZ_BUILD=build-fuzz FUZZ_TESTS=ON FUZZ_OPT=$sanitized_flags \
  scripts/fuzz.sh
