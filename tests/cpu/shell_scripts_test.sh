#!/usr/bin/env bash
# Runs shellcheck over every shell script of the repository (those the READMEs
# name among them), so that CI catches a script's quoting or pipe mistakes
# before a user meets them. Usage: shell_scripts_test.sh REPO_ROOT
set -euo pipefail
cd "$1"
if ! command -v shellcheck >/dev/null; then
  echo "shellcheck is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
mapfile -t scripts < <(find scripts tests bench fuzz -type f -name '*.sh' | sort)
scripts+=(.ci/run packaging/slurm/scuda-slurm)
echo "shellcheck over ${#scripts[@]} scripts"
# -x follows `source`d scripts, resolved from the repository root.
shellcheck -x "${scripts[@]}"
