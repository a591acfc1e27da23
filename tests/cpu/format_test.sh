#!/usr/bin/env bash
# Every C++ and CUDA file of the repository is formatted as .clang-format
# says, so that a change's diff holds only its own lines (tables that the
# formatter would reflow sit between `// clang-format off` and `on`).
# Usage: format_test.sh REPO_ROOT
set -euo pipefail
cd "$1"
if ! command -v clang-format >/dev/null; then
  echo "clang-format is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu')
echo "clang-format over ${#files[@]} files"
if ! clang-format --dry-run --Werror "${files[@]}"; then
  echo "not formatted: run clang-format -i on the files named above" >&2
  exit 1
fi
