#!/usr/bin/env bash
# samples.sh: NVIDIA's cuda-samples v13.0, natively and through scuda, on the
# GPU machine (tests/gpu/compliance/README.md). From the repo root, with
# .samples/ made by tests/gpu/compliance/prepare.sh and carried along:
#   bash tests/gpu/samples.sh
# Builds scuda (SCUDA_SKIP_BUILD=1 reuses build/) and the samples the dev
# machine could not build, serves the GPU on loopback, runs every sample of
# tests/gpu/compliance/cuda-samples.txt natively, then through scuda with the
# client inside isolate.sh, SCUDA_SAMPLES_JOBS at a time (default 8), each
# within SCUDA_SAMPLE_TIMEOUT seconds (default 40). SCUDA_SAMPLES="a b" picks
# some. Writes $OUT/samples.md, $OUT/samples.json and $OUT/samples_logs.tgz;
# exits non-zero if a sample that passes natively fails through scuda.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
repo=$PWD
out=${OUT:-$(mktemp -d /tmp/scuda-samples.XXXXXX)}
logs=/tmp/scuda-samples-logs
rm -rf "$logs" && mkdir -p "$logs"
list=tests/gpu/compliance/cuda-samples.txt
work=$repo/.samples
jobs=${SCUDA_SAMPLES_JOBS:-8}
limit=${SCUDA_SAMPLE_TIMEOUT:-40}
[ -d /usr/local/cuda/bin ] && PATH=$PATH:/usr/local/cuda/bin
[ -d "$work/run" ] || [ ! -f "$work/pack.tar.xz" ] || xz -dc "$work/pack.tar.xz" | tar -C "$work" -xf -
[ -d "$work/run" ] || { echo "samples: no $work/run; run tests/gpu/compliance/prepare.sh first" >&2; exit 1; }

echo "== build scuda"
# shellcheck source=tests/gpu/build.sh
SCUDA_BUILD_LOG=$logs/cmake.log source tests/gpu/build.sh
[ -x build/bin/scuda ] || { echo "samples: scuda did not build" >&2; tail -n 30 "$logs/cmake.log"; exit 1; }

echo "== build the samples the dev machine could not"
todo=$(grep -v '^$' "$work/unbuilt.txt" 2>/dev/null | paste -sd' ')
if [ -n "$todo" ]; then
  echo "building here: $todo"
  # shellcheck disable=SC2086
  if cmake -S "$work/src" -B /tmp/samples-build -DCMAKE_BUILD_TYPE=Release >"$logs/samples-cmake.log" 2>&1 &&
    cmake --build /tmp/samples-build -j "$(nproc)" --target $todo -- -k >>"$logs/samples-cmake.log" 2>&1; then
    echo "built"
  else
    echo "some did not build:"; grep -m5 -i error "$logs/samples-cmake.log"
  fi
  for name in $todo; do
    for exe in /tmp/samples-build/Samples/*/"$name/$name"; do
      [ -x "$exe" ] || continue
      dir=${exe#/tmp/samples-build/Samples/}
      mkdir -p "$work/run/${dir%/*}" && cp -r "${exe%/*}/." "$work/run/${dir%/*}/"
    done
  done
fi

# The *_nvrtc samples compile with the toolkit's headers, which they look for
# beside themselves.
for d in "$work"/run/*/*_nvrtc; do
  for inc in cuda nv; do
    [ -e "$d/$inc" ] || ln -s "/usr/local/cuda/include/$inc" "$d/$inc"
  done
done

echo "== scuda server"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
server=127.0.0.1:$port
build/bin/scuda server -l "$server" >"$logs/server.log" 2>&1 &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null' EXIT
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
echo "listening on $server"

# run_one MODE NAME ARGS: one run, its verdict and time in $logs/NAME.MODE.res.
run_one() {
  local mode=$1 name=$2 args=$3 exe dir src t0 rc verdict
  local exes=("$work"/run/*/"$name/$name") srcs=("$work"/src/Samples/*/"$name")
  exe=${exes[0]} src=${srcs[0]}
  if [ ! -x "$exe" ]; then
    printf 'not built\t-\n' >"$logs/$name.$mode.res"
    return
  fi
  dir=${exe%/*}
  [[ $args == *"[run in its source folder]"* ]] && dir=$src
  args=${args//"[run in its source folder]"/}
  args=${args//"\$(srcdir $name)"/$src}
  local cmd=("$exe")
  if [ "$mode" = scuda ]; then
    cmd=("$repo/build/bin/scuda" run --server "$server" -- "$exe")
    # Outside the suite's jail (a rerun), each run gets one of its own.
    [ "${samples_jailed:-0}" = 1 ] || cmd=("$repo/tests/gpu/isolate.sh" "${cmd[@]}")
  fi
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  (cd "$dir" && timeout -k 5 "$limit" "${cmd[@]}" $args </dev/null >"$logs/$name.$mode.log" 2>&1)
  rc=$?
  case $rc in
    0) verdict=pass ;;
    2) verdict=waived ;;
    124 | 137) verdict=timeout ;;
    *) verdict="fail" ;;
  esac
  printf '%s\t%s\t%s\n' "$verdict" "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')" \
    "$rc" >"$logs/$name.$mode.res"
}
export -f run_one
export work logs limit server repo

names=()
while IFS= read -r line; do
  [[ $line == \#* || -z $line ]] && continue
  name=$(echo "${line%%|*}" | tr -d ' ')
  want=" ${SCUDA_SAMPLES:-} "
  [ -n "${SCUDA_SAMPLES:-}" ] && [[ $want != *" $name "* ]] && continue
  names+=("$name")
  args=${line#*|}
  printf '%s\t%s\n' "$name" "${args#"${args%%[! ]*}"}" >>"$logs/list.tsv"
done <"$list"

# The scuda runs share one jail (isolate.sh), set up once: its mounts, made
# for every run, would contend 8 at a time and count in each sample's time,
# though no user of scuda pays them.
for mode in native scuda; do
  echo "== $mode: ${#names[@]} samples, $jobs at a time, ${limit}s each"
  jail=()
  [ "$mode" = scuda ] && jail=(env samples_jailed=1 "$repo/tests/gpu/isolate.sh")
  t0=$(date +%s)
  # shellcheck disable=SC2016  # run_one's arguments expand in the bash that xargs starts
  while IFS=$'\t' read -r name args; do printf '%s\0%s\0' "$name" "$args"; done <"$logs/list.tsv" |
    ${jail[@]+"${jail[@]}"} xargs -0 -n2 -P "$jobs" bash -c 'run_one "$0" "$1" "$2"' "$mode"
  echo "$mode took $(($(date +%s) - t0)) s"
done
python3 tests/gpu/compliance/report.py "$logs" "$out"
rc=$?

# SCUDA_SAMPLES_DEBUG=1: each sample lost through scuda runs once more with
# the client's debug log, into NAME.debug.log.
if [ "${SCUDA_SAMPLES_DEBUG:-0}" = 1 ]; then
  grep -h '^LOST' "$out/samples.md" 2>/dev/null
  python3 -c 'import json,sys; [print(r["name"]) for r in json.load(open(sys.argv[1]))["samples"]
    if r["native"]["verdict"] in ("pass","waived") and r["scuda"]["verdict"] not in ("pass","waived")]' \
    "$out/samples.json" | while read -r name; do
    args=$(awk -F'\t' -v n="$name" '$1 == n { print $2 }' "$logs/list.tsv")
    SCUDA_LOG_LEVEL=debug run_one scuda "$name" "$args"
    mv "$logs/$name.scuda.log" "$logs/$name.debug.log"
  done
fi
kill "$server_pid" 2>/dev/null
tar -C "$logs" -czf "$out/samples_logs.tgz" . 2>/dev/null
exit $rc
