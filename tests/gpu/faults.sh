#!/usr/bin/env bash
# faults.sh: issue 21's fault and load tests, on the GPU machine, from the
# repo root after tests/gpu/build.sh built scuda:
#   bash tests/gpu/faults.sh
# One `scuda server` on loopback (its own process group), every client
# inside isolate.sh, the GPU's used memory read natively with nvidia-smi:
#   load     16 clients x 60 s of mixed work (tests/gpu/programs/fault_load.cu)
#   kills    50 times: kill -9 of a client in the middle of a 1 GiB copy,
#            then the GPU's used memory back to its baseline
#   illegal  a kernel that faults fails its own session only
#   server   the server killed under load: each client out with an error in time
# Writes $OUT/faults.md, $OUT/faults.json and $OUT/faults_logs.tgz; exits
# non-zero if anything failed. Knobs (defaults in brackets): tests/gpu/README.md.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
out=${OUT:-$(mktemp -d /tmp/scuda-faults.XXXXXX)}
logs=$(mktemp -d /tmp/scuda-faults-logs.XXXXXX)
rows=$logs/rows.tsv
: >"$rows"
build=${SCUDA_FAULTS_BUILD:-build}
progs=$build/gpu
jail=tests/gpu/isolate.sh
tests=" ${SCUDA_FAULTS_TESTS:-load kills illegal server} "
load_clients=${SCUDA_FAULTS_LOAD_CLIENTS:-16}
load_seconds=${SCUDA_FAULTS_LOAD_SECONDS:-60}
kills=${SCUDA_FAULTS_KILLS:-50}
copy_mib=${SCUDA_FAULTS_COPY_MIB:-1024}
settle_s=${SCUDA_FAULTS_SETTLE_SECONDS:-5}
tolerance=${SCUDA_FAULTS_TOLERANCE_MIB:-4}
illegal_seconds=${SCUDA_FAULTS_ILLEGAL_SECONDS:-10}
server_clients=${SCUDA_FAULTS_SERVER_CLIENTS:-8}
modes=${SCUDA_FAULTS_SERVER_MODES:-listener tree stop}
error_limit=${SCUDA_FAULTS_ERROR_SECONDS:-15}
silence=${SCUDA_SERVER_TIMEOUT:-15}
stop_grace=${SCUDA_FAULTS_STOP_GRACE:-3}
ready_limit=${SCUDA_FAULTS_READY_SECONDS:-60}
RANDOM=${SCUDA_FAULTS_SEED:-21}
# shellcheck disable=SC2206  # a list of words, as the user gave it
server_args=(${SCUDA_FAULTS_SERVER_ARGS:-})
[ -d /usr/local/cuda/bin ] && PATH=$PATH:/usr/local/cuda/bin
export SCUDA_SERVER_TIMEOUT=$silence
echo "results go to $out, logs to $logs (seed ${SCUDA_FAULTS_SEED:-21})"

section() { printf '\n== %s (%ss in)\n' "$*" "$SECONDS"; }
clean() { tr '\t\n' '  ' | sed 's/ *$//' | cut -c1-400; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="${2:-$(now)}" 'BEGIN { printf "%.2f", b - a }'; }
# row NAME PASS|FAIL FIGURES DETAIL: one line of the table (FIGURES: k=v ...).
row() {
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(echo "$4" | clean)" >>"$rows"
  echo "$1: $2 $3 $4"
}

# report [print]: rows.tsv into faults.{md,json}; exit 1 if a row failed.
report() {
  python3 - "$rows" "$out" "$@" <<'PY'
import json, sys
rows, out = sys.argv[1], sys.argv[2]
def value(v):
    try:
        return float(v) if "." in v else int(v)
    except ValueError:
        return v
objs = []
for line in open(rows):
    name, result, figures, detail = line.rstrip("\n").split("\t")
    figs = dict(f.split("=", 1) for f in figures.split() if "=" in f)
    objs.append(dict(name=name, result=result, figures={k: value(v) for k, v in figs.items()},
                     detail=detail))
md = ["| test | result | figures | detail |", "|---|---|---|---|"]
md += [f"| {o['name']} | {o['result']} | {' '.join(f'{k}={v}' for k, v in o['figures'].items())} "
       f"| {o['detail'].replace('|', '/')} |" for o in objs]
json.dump(objs, open(f"{out}/faults.json", "w"), indent=1)
open(f"{out}/faults.md", "w").write("\n".join(md) + "\n")
bad = [o["name"] for o in objs if o["result"] != "PASS"]
if sys.argv[-1] == "print":
    print("\n".join(md))
    print("\nFAILED: " + " ".join(bad) if bad else "\nALL PASSED")
sys.exit(1 if bad else 0)
PY
}

# gpu_used: MiB of device memory in use, all GPUs together, read natively.
gpu_used() {
  if [ -n "${SCUDA_FAULTS_MEMORY_CMD:-}" ]; then
    eval "$SCUDA_FAULTS_MEMORY_CMD"
  else
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits
  fi | awk '{ s += $1; n++ } END { if (n) print s; else print "?" }'
}

# settle: waits up to $settle_s s for the used memory to come back within
# $tolerance MiB of $baseline; sets left (MiB over it) and took (seconds).
settle() {
  local t0 used
  t0=$(now)
  while :; do
    used=$(gpu_used)
    [ "$used" = "?" ] && { left=unknown took=$(since "$t0"); return 1; }
    left=$((used - baseline)) took=$(since "$t0")
    [ "$left" -le "$tolerance" ] && return 0
    awk -v t="$took" -v l="$settle_s" 'BEGIN { exit !(t >= l) }' && return 1
    sleep 0.1
  done
}

# group_pids PGID: the live (not zombie) processes of a process group.
group_pids() {
  python3 - "$1" <<'PY'
import os, sys
for p in filter(str.isdigit, os.listdir("/proc")):
    try:
        s = open(f"/proc/{p}/stat").read()
    except OSError:
        continue
    f = s[s.rindex(")") + 2:].split()
    if f[2] == sys.argv[1] and f[0] != "Z":
        print(p)
PY
}

# listening: is something listening on 127.0.0.1:$port? (no connection made)
listening() {
  awk -v p="$(printf ':%04X' "$port")" '$4 == "0A" && $2 ~ p "$" { f = 1 } END { exit !f }' /proc/net/tcp
}

# start_server: a fresh `scuda server` on a free port, leader of its own
# process group (so that its sessions can be killed or stopped at once).
start_server() {
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  server=127.0.0.1:$port
  echo "--- server on $server" >>"$logs/server.log"
  setsid "$build/bin/scuda" server -l "$server" -v ${server_args[@]+"${server_args[@]}"} \
    >>"$logs/server.log" 2>&1 </dev/null &
  server_pid=$!
  # Killing it is the point: no "Killed" notice from this shell.
  disown "$server_pid"
  for _ in $(seq 300); do
    listening && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "server did not start: $(tail -n3 "$logs/server.log")"
  return 1
}
# stop_server: kills the server's process group; true once none of it is left.
stop_server() {
  [ -n "${server_pid:-}" ] || return 0
  kill -9 -- "-$server_pid" 2>/dev/null
  gone "$server_pid"
  server_pid=
}
# gone PGID: waits up to 5 s for the group's last live process to go.
gone() {
  for _ in $(seq 100); do
    [ -z "$(group_pids "$1")" ] && return 0
    sleep 0.05
  done
  return 1
}
# cleanup: at exit, the server and any client still running go.
cleanup() {
  stop_server
  local f pid
  for f in "$logs"/*.out; do
    [ -s "${f%.out}.end" ] && continue
    pid=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$f" 2>/dev/null | head -n1)
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
  done
}
trap cleanup EXIT

# client NAME PROGRAM ARGS...: runs build/gpu/PROGRAM through scuda inside
# isolate.sh, in the background; output in $logs/NAME.{out,err}, and "rc
# end-time" in $logs/NAME.end once it ended.
client() {
  local name=$1 prog=$2
  shift 2
  rm -f "$logs/$name.end"
  (
    "$jail" "$build/bin/scuda" run --server "$server" -- "$progs/$prog" "$@" \
      </dev/null >"$logs/$name.out" 2>"$logs/$name.err"
    echo "$? $(now)" >"$logs/$name.end"
  ) 2>/dev/null &  # no "Killed" notice: killing clients is the point
}
ended() { [ -s "$logs/$1.end" ]; }
end_rc() { cut -d' ' -f1 "$logs/$1.end"; }
end_time() { cut -d' ' -f2 "$logs/$1.end"; }
# pid_of NAME: the program's pid, from its "ready pid=N" line.
pid_of() { sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$logs/$1.out" 2>/dev/null | head -n1; }
result_of() { grep -as '^RESULT ' "$logs/$1.out" | tail -n1; }
# why NAME: its RESULT line and the first line of its stderr.
why() {
  echo "$(result_of "$1") / $(grep -asv '^isolate:' "$logs/$1.err" | grep -am1 .)"
}
# await_ready NAME: waits up to $ready_limit s for its "ready" line; false
# if it ended or did not get there.
await_ready() {
  local i
  for ((i = 0; i < ready_limit * 20; i++)); do
    [ -n "$(pid_of "$1")" ] && return 0
    ended "$1" && return 1
    sleep 0.05
  done
  return 1
}
# await_end SECONDS NAME...: waits for each to end; kills (-9, by its
# pid) those still running after SECONDS and lists them in $hung.
await_end() {
  local limit=$1 name t0 pid
  shift
  t0=$(now) hung=
  for name in "$@"; do
    while ! ended "$name" && awk -v t="$(since "$t0")" -v l="$limit" 'BEGIN { exit !(t < l) }'; do
      sleep 0.05
    done
    ended "$name" && continue
    hung="$hung $name"
    pid=$(pid_of "$name")
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
  done
  for name in "$@"; do
    for _ in $(seq 100); do ended "$name" && break; sleep 0.05; done
  done
}
passed() { [ "$(end_rc "$1")" = 0 ] && [[ $(result_of "$1") == "RESULT $2 PASS"* ]]; }
wanted() { [[ $tests == *" $1 "* ]]; }

section "environment"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -n 8
echo "load: $load_clients clients x ${load_seconds}s; kills: $kills of a ${copy_mib} MiB copy;" \
  "server modes: $modes; SCUDA_SERVER_TIMEOUT=$silence"

section "build programs"
mkdir -p "$progs"
for p in fault_load fault_copy fault_illegal; do
  nvcc -O2 -arch=sm_90 -o "$progs/$p" "tests/gpu/programs/$p.cu" >"$logs/nvcc_$p.log" 2>&1 &
done
wait
for p in fault_load fault_copy fault_illegal; do
  [ -x "$progs/$p" ] || { row build FAIL "" "$p did not compile: $(grep -m1 error "$logs/nvcc_$p.log")"; report print; exit 1; }
done
[ -x "$build/bin/scuda" ] || { row build FAIL "" "no $build/bin/scuda: run tests/gpu/build.sh first"; report print; exit 1; }

section "scuda server"
start_server || { row server_start FAIL "" "see server.log"; report print; exit 1; }
baseline=$(gpu_used)
if [ "$baseline" = "?" ]; then
  row baseline FAIL "" "cannot read the GPU's used memory (nvidia-smi)"
  report print
  exit 1
fi
echo "listening on $server; GPU memory used with no client: $baseline MiB"

section "control: a native program inside isolate.sh finds no GPU"
timeout 60 "$jail" "$progs/fault_illegal" >"$logs/control.out" 2>"$logs/control.err"
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 125 ] && grep -q '^RESULT fault_illegal FAIL' "$logs/control.out"; then
  row control_isolated PASS "" "rc=$rc: $(grep -a '^RESULT' "$logs/control.out")"
else
  row control_isolated FAIL "" "rc=$rc $(grep -a '^RESULT' "$logs/control.out") $(head -n2 "$logs/control.err")"
fi

if wanted load; then
  section "load: $load_clients clients x ${load_seconds}s of mixed work"
  names=()
  for ((c = 1; c <= load_clients; c++)); do
    client "load_$c" fault_load "$load_seconds" "$c"
    names+=("load_$c")
  done
  await_end $((load_seconds + 120)) "${names[@]}"
  ops=0 errors=0 bytes=0 failed=()
  for n in "${names[@]}"; do
    r=$(result_of "$n")
    o=$(echo "$r" | sed -n 's/.* ops=\([0-9]*\).*/\1/p')
    e=$(echo "$r" | sed -n 's/.* errors=\([0-9]*\).*/\1/p')
    b=$(echo "$r" | sed -n 's/.* bytes=\([0-9]*\).*/\1/p')
    ops=$((ops + ${o:-0})) errors=$((errors + ${e:-0})) bytes=$((bytes + ${b:-0}))
    passed "$n" fault_load || { failed+=("$n"); [ -n "$e" ] || errors=$((errors + 1)); }
  done
  alive=yes
  kill -0 "$server_pid" 2>/dev/null || alive=no
  figs="clients=$load_clients seconds=$load_seconds ops=$ops errors=$errors gib_checked=$((bytes >> 30))"
  if [ ${#failed[@]} -eq 0 ] && [ "$alive" = yes ]; then
    row load PASS "$figs" "every client checked its results and exited 0"
  else
    row load FAIL "$figs" "server alive: $alive; failed:${hung:+ (hung:$hung)} ${failed[*]}: $(why "${failed[0]:-load_1}")"
  fi
fi

if wanted kills; then
  section "kills: $kills x kill -9 of a client in a ${copy_mib} MiB copy"
  printf 'i\tcopy_ms\tdelay_ms\tduring_mib\tleft_mib\tsettle_s\tproblem\n' >"$logs/kills.tsv"
  bad=0 unready=0 max_left=0 max_took=0 min_during=
  for ((i = 1; i <= kills; i++)); do
    problem=
    client "kill_$i" fault_copy "$copy_mib" 300
    if ! await_ready "kill_$i"; then
      problem="never ready: $(why "kill_$i")"
      pid=$(pid_of "kill_$i")
      [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
    else
      pid=$(pid_of "kill_$i")
      copy_ms=$(sed -n 's/.*copy_ms=\([0-9]*\).*/\1/p' "$logs/kill_$i.out")
      during=$(gpu_used)
      if [ "$during" = "?" ]; then during=0; else during=$((during - baseline)); fi
      delay=$((RANDOM % (2 * ${copy_ms:-500} + 1)))
      sleep "$(awk -v m="$delay" 'BEGIN { printf "%.3f", m / 1000 }')"
      ended "kill_$i" && problem="ended before the kill: $(why "kill_$i")"
      kill -9 "$pid" 2>/dev/null
      [ "$during" -lt "$copy_mib" ] && problem="$problem only $during MiB over the baseline while it ran"
      [ -z "$min_during" ] || [ "$during" -lt "$min_during" ] && min_during=$during
    fi
    await_end 10 "kill_$i"
    settle || problem="$problem $left MiB left after ${took}s"
    [ "$left" != unknown ] && [ "$left" -gt "$max_left" ] && max_left=$left
    max_took=$(awk -v a="$max_took" -v b="$took" 'BEGIN { print (b > a ? b : a) }')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$i" "${copy_ms:--}" "${delay:--}" "${during:--}" \
      "$left" "$took" "$problem" >>"$logs/kills.tsv"
    echo "kill $i: copy ${copy_ms:-?} ms, killed after ${delay:-?} ms, $left MiB left after ${took}s $problem"
    [ -n "$problem" ] && bad=$((bad + 1)) && first=${first:-"kill $i: $problem"}
    [[ $problem == "never ready"* ]] && ((++unready >= 3)) && { first="$first; 3 clients never ready, stopped"; break; }
  done
  figs="kills=$kills failed=$bad max_left_mib=$max_left max_settle_s=$max_took min_during_mib=${min_during:-0}"
  if [ "$bad" -eq 0 ]; then
    row kill9_copy PASS "$figs" "memory back within ${tolerance} MiB of ${baseline} MiB after every kill"
  else
    row kill9_copy FAIL "$figs" "${first:-}"
  fi
  client kill_after fault_load 3 4242
  await_end 120 kill_after
  if passed kill_after fault_load && kill -0 "$server_pid" 2>/dev/null; then
    row kill9_then_serves PASS "" "a new client passes: $(result_of kill_after)"
  else
    row kill9_then_serves FAIL "" "$(why kill_after)"
  fi
fi

if wanted illegal; then
  section "illegal: a faulting kernel fails only its own session"
  client illegal_neighbour fault_load "$illegal_seconds" 777
  if await_ready illegal_neighbour; then
    client illegal fault_illegal
    await_end 120 illegal
    await_end $((illegal_seconds + 120)) illegal_neighbour
    if passed illegal fault_illegal; then
      row illegal_address_own PASS "" "$(result_of illegal); stderr: $(grep -a '^fault_illegal:' "$logs/illegal.err")"
    else
      row illegal_address_own FAIL "" "rc=$(end_rc illegal): $(why illegal)"
    fi
    overlap=$(awk -v a="$(end_time illegal)" -v b="$(end_time illegal_neighbour)" 'BEGIN { print (b > a) ? "yes" : "no" }')
    if passed illegal_neighbour fault_load && [ "$overlap" = yes ]; then
      row illegal_address_neighbour PASS "" "ran through the fault: $(result_of illegal_neighbour)"
    else
      row illegal_address_neighbour FAIL "" "ended after the fault: $overlap; $(why illegal_neighbour)"
    fi
  else
    row illegal_address_neighbour FAIL "" "never ready: $(why illegal_neighbour)"
  fi
  client illegal_after fault_load 3 778
  await_end 120 illegal_after
  settle
  if passed illegal_after fault_load && kill -0 "$server_pid" 2>/dev/null && [ "$left" != unknown ] &&
    [ "$left" -le "$tolerance" ]; then
    row illegal_address_then_serves PASS "left_mib=$left" "a new client passes: $(result_of illegal_after)"
  else
    row illegal_address_then_serves FAIL "left_mib=$left" "$(why illegal_after)"
  fi
fi

# server_mode MODE: the server killed (or stopped) under load; every client,
# still running then, must end with an error within the limit, the server's
# processes go and the GPU's memory comes back.
server_mode() {
  local mode=$1 limit=$error_limit names=() n pids t0 dt max=0 min='' late=() cleared=no
  [ "$mode" = stop ] && limit=$((silence + stop_grace))
  [ -n "${server_pid:-}" ] || start_server || { row "server_$mode" FAIL "" "server did not start"; return; }
  for ((c = 1; c <= server_clients; c++)); do
    client "server_${mode}_$c" fault_load 600 $((100 * c))
    names+=("server_${mode}_$c")
  done
  for n in "${names[@]}"; do await_ready "$n"; done
  sleep 2
  pids=$(group_pids "$server_pid" | wc -l)
  t0=$(now)
  case $mode in
    listener) kill -9 "$server_pid" ;;
    tree) kill -9 -- "-$server_pid" ;;
    stop) kill -STOP -- "-$server_pid" ;;
  esac
  await_end $((limit + 15)) "${names[@]}"
  for n in "${names[@]}"; do
    dt=$(since "$t0" "$(end_time "$n")")
    echo "$n: rc=$(end_rc "$n") after ${dt}s"
    max=$(awk -v a="$max" -v b="$dt" 'BEGIN { print (b > a ? b : a) }')
    min=$(awk -v a="${min:-$dt}" -v b="$dt" 'BEGIN { print (b < a ? b : a) }')
    if [ "$(end_rc "$n")" = 0 ] || [[ $hung == *" $n"* ]] || awk -v d="$dt" -v l="$limit" 'BEGIN { exit !(d > l || d < 0) }'; then
      late+=("$n rc=$(end_rc "$n") ${dt}s: $(why "$n")")
    fi
  done
  [ "$mode" = stop ] && kill -9 -- "-$server_pid" 2>/dev/null
  gone "$server_pid" && cleared=yes
  stop_server
  settle
  local figs="clients=$server_clients processes=$pids min_s=$min max_s=$max limit_s=$limit left_mib=$left"
  if [ ${#late[@]} -eq 0 ] && [ "$cleared" = yes ] && [ "$left" != unknown ] && [ "$left" -le "$tolerance" ]; then
    row "server_$mode" PASS "$figs" "every client ended with an error: $(why "${names[0]}")"
  else
    row "server_$mode" FAIL "$figs" "processes gone: $cleared; late or no error:${hung:+ (hung:$hung)} ${late[*]}"
  fi
}
if wanted server; then
  for mode in $modes; do
    case $mode in
      listener) section "server: kill -9 of the listener alone (its sessions get SIGTERM)" ;;
      tree) section "server: kill -9 of the listener and every session at once" ;;
      stop) section "server: SIGSTOP of the listener and every session (frozen)" ;;
      *) row "server_$mode" FAIL "" "unknown mode (listener, tree or stop)"; continue ;;
    esac
    server_mode "$mode"
  done
fi

section results
stop_server
tar -C "$logs" -czf "$out/faults_logs.tgz" . 2>/dev/null
report print
