#!/usr/bin/env bash
# user_flow.sh: a new user's steps from zero to `nvidia-smi` through a remote
# GPU, timed, on the GPU machine, with the packages scripts/package.sh made:
#   bash tests/gpu/user_flow.sh PACKAGES_DIR
# The GPU host installs the .debs and starts the server (as the unit would);
# the client installs the wheel into a fresh virtual environment (offline,
# from the file, where a user would name it to pip), then `scuda run --
# nvidia-smi`, inside isolate.sh so that only the server reaches the GPU;
# then the same with the scuda-client .deb's /usr/bin/scuda. Writes
# $OUT/user_flow.md; exits non-zero if a step failed or nvidia-smi through
# scuda names another GPU than natively.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
packages=$(realpath "${1:?usage: user_flow.sh PACKAGES_DIR}")
out=${OUT:-$(mktemp -d /tmp/scuda-flow.XXXXXX)}
report=$out/user_flow.md
work=$(mktemp -d /tmp/scuda-flow-work.XXXXXX)
port=14833
failed=0
server_pid=
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"' EXIT

printf '| step | seconds | result |\n|---|---:|---|\n' >"$report"
# step NAME CMD...: runs CMD, timed, its output in $work/NAME.log.
step() {
  local name=$1 t0 rc secs
  shift
  t0=$(date +%s.%N)
  "$@" >"$work/$name.log" 2>&1
  rc=$?
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  printf "| \`%s\` | %s | %s |\n" "$*" "$secs" "$([ "$rc" -eq 0 ] && echo ok || echo "FAIL rc=$rc")" \
    | sed "s|$packages/||g; s|$work/||g" | tee -a "$report"
  [ "$rc" -eq 0 ] || { failed=1; tail -n 5 "$work/$name.log"; }
  return "$rc"
}
# shellcheck disable=SC2317  # called through step
listening() {
  awk -v p="$(printf ':%04X' "$port")" '$4 == "0A" && $2 ~ p "$" { f = 1 } END { exit !f }' /proc/net/tcp
}
# shellcheck disable=SC2317  # called through step
wait_for_server() {
  for _ in $(seq 600); do listening && return 0; sleep 0.05; done
  return 1
}
# the GPU nvidia-smi -L names first, without its UUID
first_gpu() { grep -m1 '^GPU 0' "$1" | sed 's/ (UUID.*//'; }

nvidia-smi -L >"$work/native.log" 2>&1
echo "native: $(first_gpu "$work/native.log")"

# GPU host: the .debs, then the server.
step install_debs dpkg -i "$packages"/scuda-client_*.deb "$packages"/scuda-server_*.deb
scuda server -l "127.0.0.1:$port" >"$work/server.log" 2>&1 &
server_pid=$!
step server_listens wait_for_server
head -n 1 "$work/server.log"

# Client, with the wheel.
step make_venv python3 -m venv "$work/venv"
step pip_install "$work/venv/bin/pip" install -q --no-index "$packages"/scuda-*.whl
# The .deb's stand-ins are scuda's, not the driver's: isolate.sh keeps them.
export SCUDA_ISOLATE_KEEP=/usr/lib/scuda
step wheel_nvidia_smi tests/gpu/isolate.sh "$work/venv/bin/scuda" run \
  --server "127.0.0.1:$port" -- nvidia-smi -L
# Client, with the .deb's command.
step deb_nvidia_smi tests/gpu/isolate.sh /usr/bin/scuda run --server "127.0.0.1:$port" -- nvidia-smi -L

for via in wheel deb; do
  seen=$(first_gpu "$work/${via}_nvidia_smi.log")
  if [ -n "$seen" ] && [ "$seen" = "$(first_gpu "$work/native.log")" ]; then
    echo "- $via: nvidia-smi through scuda names $seen, as natively" | tee -a "$report"
  else
    echo "- $via: FAIL, nvidia-smi through scuda printed '$seen'" | tee -a "$report"
    failed=1
  fi
done
du -h "$packages"/* | sed 's|^|    |' | tee -a "$report"
exit "$failed"
