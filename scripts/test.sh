#!/usr/bin/env bash
# The test command: installs what is needed, builds, runs every CPU test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# Tests on, whatever an earlier build (scripts/quickstart.sh) left in the
# cache; the binaries standalone, as users get them (fmt and spdlog
# compiled in once); and no tests at all is a failure, not a pass.
scripts/build.sh -DSCUDA_BUILD_TESTS=ON -DSCUDA_STANDALONE=ON
ctest --test-dir build --output-on-failure --no-tests=error -j "$(nproc)"
# Every decoder of network bytes under libFuzzer for a short while.
FUZZ_SECONDS=${FUZZ_SECONDS:-15} scripts/fuzz.sh
