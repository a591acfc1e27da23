#!/usr/bin/env bash
# steady_profile.sh NAME [ROUNDS]: where a generate.py workload's CPU goes in
# its steady rounds only (no model build, no compile), natively and through
# a loopback scuda server with the client jailed. Each side runs
# `generate.py NAME --serve`, measures two warm rounds, then ROUNDS rounds
# (default 3) under `perf record -g -p PID`; the build, compiles and
# autotuning before them stay out of the profile. Needs perf from
# perf_bundle.sh in .tools/perf (carry .tools) and root (isolate.sh).
# Through scuda the server's session process is profiled over the same
# rounds, so that a step the client spends waiting can be set against what
# the session did meanwhile. Writes $OUT/steady_NAME.txt: each side's
# rounds, then each profile by library, by symbol and by thread (with sample
# counts: at 999 Hz, a thread's samples over the rounds' time give its
# share of a core); the profiles themselves are removed.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../../.." || exit 1
name=${1:?usage: steady_profile.sh NAME [ROUNDS]}
rounds=${2:-3}
program=${SCUDA_STEADY_PROGRAM:-bench/apps/generate.py}
out=${OUT:-/tmp}
perf_dir=$PWD/.tools/perf
[ -x "$perf_dir/perf" ] || { echo "steady_profile.sh: no $perf_dir/perf (run perf_bundle.sh, carry .tools)" >&2; exit 1; }
[ -x build/bin/scuda ] || { echo "steady_profile.sh: build scuda first (tests/gpu/build.sh)" >&2; exit 1; }
mkdir -p "$out"
report=$out/steady_$name.txt
work=$(mktemp -d /tmp/steady.XXXXXX)
port=15077
build/bin/scuda server -l 127.0.0.1:$port >"$work/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT
sleep 2

perf_run() { LD_LIBRARY_PATH=$perf_dir/lib "$perf_dir/perf" "$@"; }

# profile CASE CMD...: runs CMD's serve loop, profiling the measured rounds.
profile() {
  local case=$1
  shift
  mkfifo "$work/$case.in"
  "$@" python3 "$program" "$name" --serve <"$work/$case.in" >"$work/$case.out" 2>"$work/$case.err" &
  local worker=$!
  exec 7>"$work/$case.in"
  until grep -q '"ready"' "$work/$case.out" 2>/dev/null; do
    sleep 1
    kill -0 $worker 2>/dev/null || { echo "$case worker ended:" && tail -5 "$work/$case.err"; return 1; }
  done
  local pid
  pid=$(pgrep -n -f "$program $name --serve")
  ask() { local have; have=$(grep -c '^{' "$work/$case.out"); echo round >&7;
    until [ "$(grep -c '^{' "$work/$case.out")" -gt "$have" ]; do sleep 0.2; done; }
  ask && ask
  local perfs=() parts=("$case")
  # Not through perf_run: $! must be perf itself, for the SIGINT that ends it.
  LD_LIBRARY_PATH=$perf_dir/lib "$perf_dir/perf" record -F 999 -g -p "$pid" -o "$work/$case.data" 2>>"$work/perf.log" &
  perfs+=($!)
  # Every connection of the session (main, lanes) is a child of the server.
  local sessions
  sessions=$(pgrep -d, -P "$server")
  if [ "$case" = scuda ] && [ -n "$sessions" ]; then
    LD_LIBRARY_PATH=$perf_dir/lib "$perf_dir/perf" record -F 999 -g -p "$sessions" -o "$work/session.data" 2>>"$work/perf.log" &
    perfs+=($!)
    parts+=(session)
  fi
  sleep 1
  local start=$SECONDS
  for _ in $(seq "$rounds"); do ask; done
  local took=$((SECONDS - start))
  kill -INT "${perfs[@]}" && wait "${perfs[@]}"
  echo quit >&7
  exec 7>&-
  wait $worker
  {
    echo "== $case rounds (the last $rounds profiled, about $took s)"
    grep '^{' "$work/$case.out"
    local part
    for part in "${parts[@]}"; do report "$part"; done
  } >>"$report"
}

# report PART: PART's profile by library, by symbol and by thread.
report() {
  local data=$work/$1.data
  echo "== $1 by library"
  perf_run report -i "$data" --no-children --sort dso --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -15
  echo "== $1 by symbol"
  perf_run report -i "$data" --no-children --sort dso,sym --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -40
  echo "== $1 by thread (samples)"
  perf_run report -i "$data" --no-children -n --sort pid --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -12
  echo "== $1 by thread and library (samples)"
  perf_run report -i "$data" --no-children -n --sort pid,dso --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -30
}

: >"$report"
profile native env
[ -n "${SCUDA_STEADY_NATIVE_ONLY:-}" ] || profile scuda tests/gpu/isolate.sh build/bin/scuda run --server 127.0.0.1:$port --
echo "steady_profile.sh: wrote $report"
rm -rf "$work"
