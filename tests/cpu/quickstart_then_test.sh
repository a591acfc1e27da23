#!/usr/bin/env bash
# scripts/quickstart.sh then scripts/test.sh on one clone runs every test:
# the build options quickstart leaves in the cache (tests off) must not
# survive test.sh's configure. Configures a scratch tree with the options
# each script passes to scripts/build.sh, in that order, and checks that
# tests are on and registered.
# Usage: quickstart_then_test.sh SOURCE_DIR
set -euo pipefail
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The arguments SCRIPT gives scripts/build.sh (its one call, lines joined).
build_args() {
  sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$src/$1" | grep -m1 '^scripts/build.sh' |
    sed 's|^scripts/build.sh||'
}
configure() {
  local args
  eval "args=($(build_args "$1"))"
  echo "$1 configures with: ${args[*]}"
  cmake -S "$src" -B "$work" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${args[@]}" >"$work.log" 2>&1 ||
    { cat "$work.log"; exit 1; }
}
configure scripts/quickstart.sh
grep -q '^SCUDA_BUILD_TESTS:BOOL=OFF' "$work/CMakeCache.txt" ||
  { echo "quickstart.sh no longer turns tests off: this check tests nothing" >&2; exit 1; }
configure scripts/test.sh
rm -f "$work.log"
grep -q '^SCUDA_BUILD_TESTS:BOOL=ON' "$work/CMakeCache.txt" ||
  { echo "after quickstart.sh, test.sh's configure leaves tests off" >&2; exit 1; }
listed=$(ctest --test-dir "$work" -N)
count=$(grep -c 'Test *#' <<<"$listed" || true)
[ "$count" -gt 0 ] || { echo "after quickstart.sh, test.sh's configure registers no test" >&2; exit 1; }
echo "quickstart.sh then test.sh: tests on, $count registered before the build"
