#!/usr/bin/env bash
# Application benchmarks on a GPU host (bench/apps/README.md): each model
# natively, then through a loopback scuda server with cold and then warm
# caches (the server's modules, the client's answers), then behind each
# emulated link; ratios from this one run.
# Usage: bench/apps/run.sh [MODEL|GROUP...]   (default: mlp resnet18)
# SCUDA_LINKS: profiles to add (default "1ms-10gbit 150ms"; "" for none).
# SCUDA_APP_REPEATS: how many times native and the warm loopback case run,
# alternately (default 3): the steady ratio is their median.
# SCUDA_APP_ROUNDS=N: generate.py's workloads run native and warm scuda as two
# long-lived processes, the same two for every workload, that alternate N
# rounds of each (alternate.py), in place of SCUDA_APP_REPEATS pairs of whole
# processes. SCUDA_APP_TIMEOUT then bounds the pair per workload.
# SCUDA_LINK_REPEATS: how many times each link's case runs (default 1).
# SCUDA_APP_VIA=LINK: the alternating scuda worker (SCUDA_APP_ROUNDS) goes
# through that link profile of SCUDA_LINKS instead of straight to the server.
# Each link's own round trip, pings through a second relay of the same
# profile, goes to $OUT/apps_links.jsonl, so that a case is set against the
# link it crossed.
# SCUDA_APP_COLD=0 leaves out the cold case (empty caches); the first warm run
# then meets the caches as the models before it left them.
# SCUDA_ISOLATE=1 runs every scuda client inside tests/gpu/isolate.sh (root),
# so that it cannot reach the local GPU. Writes $OUT/apps.{jsonl,md} when OUT is set,
# and each scuda case's per-function stats as $OUT/apps_MODEL_CASE_stats.json.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
bin=build/bin
python=${PYTHON:-python3}
out=${OUT:-$(mktemp -d /tmp/scuda-apps.XXXXXX)}
mkdir -p "$out" || exit 1
# Groups stand for several models: "training" for step_time.py's, "generation"
# for generate.py's list (every batch eager and compiled, the long prompt, the
# embedding service).
[ $# -gt 0 ] || set -- mlp resnet18
models=()
for m in "$@"; do
  case $m in
    training) models+=(mlp resnet18 mlp-graph sdpa-graph) ;;
    generation) read -ra names <<<"$("$python" bench/apps/generate.py --list)" && models+=("${names[@]}") ;;
    *) models+=("$m") ;;
  esac
done
links=${SCUDA_LINKS-1ms-10gbit 150ms}
limit=${SCUDA_APP_TIMEOUT:-300}
repeats=${SCUDA_APP_REPEATS:-3}
link_repeats=${SCUDA_LINK_REPEATS:-1}
cold=${SCUDA_APP_COLD:-1}
rounds=${SCUDA_APP_ROUNDS:-0}
cache=$(mktemp -d /tmp/scuda-apps-cache.XXXXXX)
# The client's answers kept across runs start empty too: the cold case fills
# them and the server's module cache, the cases after it find both.
SCUDA_CACHE_DIR=$(mktemp -d /tmp/scuda-apps-answers.XXXXXX)
export SCUDA_CACHE_DIR
isolate=()
[ "${SCUDA_ISOLATE:-0}" = 1 ] && isolate=(tests/gpu/isolate.sh)
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
listening() { awk -v p="$(printf ':%04X' "$1")" '$4 == "0A" && $2 ~ p "$" { f = 1 } END { exit !f }' /proc/net/tcp; }
wait_listening() { for _ in $(seq 100); do listening "$1" && return 0; sleep 0.1; done; return 1; }

pids=()
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
# Backgrounded with their own output so that nothing holds this script's pipe.
sp=$(port)
setsid "$bin/scuda" server -l "127.0.0.1:$sp" --module-cache "$cache" >"$out/apps_server.log" 2>&1 </dev/null &
pids+=($!)
wait_listening "$sp" || { echo "scuda server did not start: $(head -3 "$out/apps_server.log")"; exit 1; }
declare -A via=([none]="127.0.0.1:$sp")
: >"$out/apps_links.jsonl"
for link in $links; do
  case $link in
    1ms-10gbit) args=(--rtt-ms 1 --gbit 10) ;;
    150ms) args=(--rtt-ms 150) ;;
    *) echo "unknown link profile $link"; exit 2 ;;
  esac
  lp=$(port)
  setsid "$bin/scuda-link" --listen "127.0.0.1:$lp" --to "127.0.0.1:$sp" "${args[@]}" \
    >"$out/apps_link_$link.log" 2>&1 </dev/null &
  pids+=($!)
  wait_listening "$lp" && via[$link]="127.0.0.1:$lp"
  echo "{\"link\": \"$link\", \"rtt\": $("$python" bench/apps/link_rtt.py "$bin/scuda-link" "${args[@]}")}" |
    tee -a "$out/apps_links.jsonl"
done
via_alternate=${via[${SCUDA_APP_VIA:-none}]:-}
alternate_case=scuda-warm
[ "${SCUDA_APP_VIA:-none}" = none ] || alternate_case=scuda-$SCUDA_APP_VIA
[ -n "$via_alternate" ] || { echo "SCUDA_APP_VIA=${SCUDA_APP_VIA:-} names no link of SCUDA_LINKS"; exit 2; }

: >"$out/apps.jsonl"
# A link of 150 ms RTT makes every step cost at least one RTT: fewer steps.
# Sets steps to the extra options the program of MODEL needs in CASE.
steps_for() {  # steps_for CASE MODEL
  steps=()
  [ "$1" = scuda-150ms ] || return 0
  if [ "$(program_for "$2")" = step_time.py ]; then steps=(--steps 5 --warmup 2); else steps=(--repeats 1); fi
}
# Training models are step_time.py's; the rest are generate.py's workloads.
program_for() { case $1 in mlp* | resnet* | sdpa*) echo step_time.py ;; *) echo generate.py ;; esac; }
measure() {  # measure MODEL CASE REPEAT [scuda SERVER]
  local model=$1 case=$2 repeat=$3 line
  shift 3
  local steps
  steps_for "$case" "$model"
  local prog=("$python" "bench/apps/$(program_for "$model")" "$model" "${steps[@]}")
  if [ $# -gt 0 ]; then
    line=$(timeout "$limit" "${isolate[@]}" "$bin/scuda" run --server "$2" \
      --stats-json "$out/apps_${model}_${case}_stats.json" -- "${prog[@]}" 2>"$out/apps_${model}_$case.err" | tail -n1)
  else
    line=$(timeout "$limit" "${prog[@]}" 2>"$out/apps_${model}_$case.err" | tail -n1)
  fi
  # tr drops quotes and backslashes, which would break the JSON string.
  # shellcheck disable=SC1003
  [[ $line == "{"* ]] || line="{\"model\": \"$model\", \"error\": \"$(tail -n1 "$out/apps_${model}_$case.err" | tr -d '"\\' | cut -c1-200)\"}"
  echo "{\"case\": \"$case\", \"repeat\": $repeat, \"result\": $line}" | tee -a "$out/apps.jsonl"
}
alternate() {  # alternate MODEL...: native and warm scuda rounds, two processes for all
  timeout "$((limit * $#))" "$python" bench/apps/alternate.py "$@" --rounds "$rounds" \
    --python "$python" --logs "$out" --scuda-case "$alternate_case" --scuda-prefix "${isolate[*]} \
$bin/scuda run --server $via_alternate --stats-json $out/apps_$1_${alternate_case}_stats.json --" |
    tee -a "$out/apps.jsonl"
}
# With SCUDA_APP_ROUNDS, generate.py's workloads run in one alternating pair
# of processes, each after its cold case when there is one.
alternating=()
for model in "${models[@]}"; do
  if [ "$rounds" -gt 0 ] && [ "$(program_for "$model")" = generate.py ]; then
    [ "$cold" = 1 ] && measure "$model" scuda-cold 1 scuda "${via[none]}"
    alternating+=("$model")
  else
    measure "$model" native 1
    [ "$cold" = 1 ] && measure "$model" scuda-cold 1 scuda "${via[none]}"
    measure "$model" scuda-warm 1 scuda "${via[none]}"
    for ((r = 2; r <= repeats; r++)); do
      measure "$model" native "$r"
      measure "$model" scuda-warm "$r" scuda "${via[none]}"
    done
  fi
done
[ ${#alternating[@]} -eq 0 ] || alternate "${alternating[@]}"
for model in "${models[@]}"; do
  for ((r = 1; r <= link_repeats; r++)); do
    for link in $links; do
      [ -n "${via[$link]:-}" ] && measure "$model" "scuda-$link" "$r" scuda "${via[$link]}"
    done
  done
done
python3 bench/apps/report.py "$out/apps.jsonl" "$out" | tee "$out/apps.md"
python3 bench/apps/plot.py "$out/apps.jsonl" "$out/apps_step_vs_rtt.png"
