#!/usr/bin/env bash
# clang_tidy_test.sh SOURCE_DIR BUILD_DIR: the checks of SOURCE_DIR/.clang-tidy
# pass over src/protocol, src/common and src/server, the code that decodes
# every byte a client sends, compiled as BUILD_DIR's compile_commands.json
# says, two files at a time. GCC's
# precompiled headers, which clang cannot read, are left out of the
# commands; the headers they stand for are included as they are.
set -euo pipefail
src=${1:?usage: clang_tidy_test.sh SOURCE_DIR BUILD_DIR}
build=${2:?usage: clang_tidy_test.sh SOURCE_DIR BUILD_DIR}
command -v clang-tidy >/dev/null ||
  { echo "clang_tidy_test: clang-tidy is missing (scripts/setup.sh installs it)" >&2; exit 1; }
[ -f "$build/compile_commands.json" ] ||
  { echo "clang_tidy_test: no $build/compile_commands.json" >&2; exit 1; }
commands=$(mktemp -d)
trap 'rm -rf "$commands"' EXIT
python3 - "$build/compile_commands.json" "$commands/compile_commands.json" <<'PY'
import json, re, sys
entries = json.load(open(sys.argv[1]))
for e in entries:
    c = e["command"]
    c = re.sub(r"-include \S*cmake_pch\.hxx", "", c)
    e["command"] = c.replace("-Winvalid-pch", "")
json.dump(entries, open(sys.argv[2], "w"))
PY
cd "$src"
files=(src/protocol/*.cc src/common/*.cc src/server/*.cc src/server/status/*.cc)
echo "clang-tidy over ${#files[@]} files"
printf '%s\n' "${files[@]}" | xargs -P 2 -n 4 clang-tidy -p "$commands" --quiet
