#!/usr/bin/env bash
# Application benchmarks on a GPU host: each model natively, then through a
# loopback scuda server (behind scuda-link when SCUDA_LINK names a profile).
# Usage: bench/apps/run.sh [mlp] [resnet50]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=build/bin
PYTHON=${PYTHON:-python3}
if (($#)); then MODELS=("$@"); else MODELS=(mlp resnet50); fi
PORT=${SCUDA_BENCH_PORT:-14933}
LINK_PORT=$((PORT + 1))

"$BIN/scuda" server -l "127.0.0.1:$PORT" &
PIDS=($!)
trap 'kill "${PIDS[@]}" 2>/dev/null || true' EXIT
SERVER="127.0.0.1:$PORT"
case "${SCUDA_LINK:-none}" in
  none) ;;
  1ms-10gbit) LINK_ARGS=(--rtt-ms 1 --gbit 10) ;;
  150ms) LINK_ARGS=(--rtt-ms 150) ;;
  *) echo "SCUDA_LINK must be none, 1ms-10gbit or 150ms" >&2; exit 2 ;;
esac
if [[ -n "${LINK_ARGS+x}" ]]; then
  "$BIN/scuda-link" --listen "127.0.0.1:$LINK_PORT" --to "$SERVER" "${LINK_ARGS[@]}" &
  PIDS+=($!)
  SERVER="127.0.0.1:$LINK_PORT"
fi
sleep 1

for model in "${MODELS[@]}"; do
  echo "native: $("$PYTHON" bench/apps/step_time.py "$model")"
  echo "scuda (${SCUDA_LINK:-none}): $("$BIN/scuda" run --server "$SERVER" -- "$PYTHON" bench/apps/step_time.py "$model")"
done
