#!/usr/bin/env bash
# The test command: installs what is needed, builds, runs every CPU test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
