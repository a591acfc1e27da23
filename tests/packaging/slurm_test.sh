#!/usr/bin/env bash
# packaging/slurm on a real Slurm: starts Debian's slurmctld and slurmd on
# loopback, with a node of two remote GPUs (`scuda` GRES) whose pool names two
# scuda servers on loopback (the driver and NVML test doubles), and
# scuda-slurm as Prolog, Epilog and TaskProlog. Checks that a job with
# --gres=scuda:1 gets a server and its token and runs a program through it,
# that two jobs get different GPUs while a third waits, and that a GPU is free
# again when its job ends, and that the tasks of a job given both GPUs
# each take one (SCUDA_PICK=local-rank). Every daemon it starts ends with it.
# Usage: slurm_test.sh SCUDA_BIN DRIVER_DOUBLE NVML_DOUBLE LIB_DIR
set -euo pipefail
scuda_bin=$1 driver_double=$2 nvml_double=$3 lib_dir=$4
here=$(cd "$(dirname "$0")" && pwd)
started=$SECONDS

for tool in slurmctld slurmd srun sbatch squeue sinfo scontrol scancel python3; do
  if ! command -v "$tool" >/dev/null; then
    echo "slurm_test: $tool is not installed (scripts/setup.sh installs slurmctld, slurmd and slurm-client)" >&2
    exit 1
  fi
done
if [ "$(id -u)" -ne 0 ]; then
  echo "slurm_test: needs root, as slurmd does to start jobs as their user (CI runs as root)" >&2
  exit 1
fi

work=$(mktemp -d)
chmod 0755 "$work"
daemons=() jobs=()
export SLURM_CONF=$work/etc/slurm.conf HOME=$work SCUDA_ANSWER_CACHE=off
unset SCUDA_SERVER SCUDA_TOKEN_FILE LD_PRELOAD

stop_all() {
  local status=$? pid
  touch "$work"/{a,b,c}.release
  if ((${#daemons[@]})); then
    scancel --partition=main 2>/dev/null || true
    for _ in $(seq 50); do
      [ -z "$(squeue -h 2>/dev/null)" ] && break
      sleep 0.1
    done
  fi
  for pid in "${jobs[@]}"; do kill "$pid" 2>/dev/null || true; done
  # Each daemon leads a process group of its own (setsid), with its helpers.
  for pid in "${daemons[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for pid in "${daemons[@]}" "${jobs[@]}"; do wait "$pid" 2>/dev/null || true; done
  if ((status != 0)); then
    for log in "$work"/log/* "$work"/*.out "$work"/*.program; do
      [ -f "$log" ] && { echo "==== $log"; tail -n 40 "$log"; }
    done
  fi
  rm -rf "$work"
  exit "$status"
}
trap stop_all EXIT

fail() {
  echo "slurm_test: FAILED: $*" >&2
  exit 1
}

# Every wait here is bounded (wait_until, `timeout srun`), so that the test
# ends, and its trap stops the daemons, before ctest's TIMEOUT kills it.

# wait_until SECONDS WHAT COMMAND...: polls COMMAND every 0.1 s.
wait_until() {
  local limit=$1 what=$2 tries
  shift 2
  for tries in $(seq $((limit * 10))); do
    "$@" && return 0
    sleep 0.1
  done
  fail "$what (not after $limit s, $tries tries)"
}

# start NAME COMMAND...: a daemon in a process group of its own.
start() {
  local name=$1
  shift
  setsid "$@" >"$work/log/$name.log" 2>&1 &
  daemons+=($!)
}

mkdir -p "$work"/{bin,etc,log,ctld,spool,run}
# The TaskProlog runs as the job's user: a copy any user can run, wherever
# the checkout is.
scuda_slurm=$work/bin/scuda-slurm
packaging=$(cd "$here/../../packaging/slurm" && pwd)
install -m 0755 "$packaging/scuda-slurm" "$scuda_slurm"
install -m 0644 "$here/client_program.py" "$work/bin/"

# Two scuda servers, one per remote GPU, each with a named token; the
# second also takes tokens minted per job with a key, which its pool row names.
servers=()
head -c 32 /dev/urandom | base64 >"$work/jobkey"
for i in 0 1; do
  head -c 24 /dev/urandom | base64 >"$work/token$i"
  printf '[tokens.slurm-gpu%s]\nsecret = "%s"\n' "$i" "$(cat "$work/token$i")" >"$work/tokens$i.toml"
  # A job given both GPUs carries the first one's token: the second takes it too.
  [ "$i" = 1 ] && printf '[tokens.slurm-both]\nsecret = "%s"\n' "$(cat "$work/token0")" >>"$work/tokens1.toml"
  key=()
  [ "$i" = 1 ] && key=(--job-key "$work/jobkey")
  start "server$i" "$scuda_bin" server -l 127.0.0.1:0 --driver "$driver_double" --nvml "$nvml_double" \
    --tokens "$work/tokens$i.toml" "${key[@]}" --drain-timeout 0 -v
done
for i in 0 1; do
  wait_until 10 "server $i prints its address" \
    grep -q '^scuda server listening on ' "$work/log/server$i.log"
  servers+=("$(sed -n 's/^scuda server listening on \([^ ]*\) .*/\1/p' "$work/log/server$i.log")")
done

# The admin's pool, beside slurm.conf where scuda-slurm looks for it.
cat >"$work/etc/scuda-pool.conf" <<EOF
lib_dir=$lib_dir
run_dir=$work/run
gres_dir=$work/gres
scuda_bin=$scuda_bin
# node index server token-file
cpu1 0 ${servers[0]} $work/token0
cpu1 1 ${servers[1]} key:$work/jobkey
EOF
"$scuda_slurm" check
"$scuda_slurm" setup-node cpu1
"$scuda_slurm" gres-conf >"$work/etc/gres.conf"
grep -qx "NodeName=cpu1 Name=scuda File=$work/gres/scuda\[0-1\]" "$work/etc/gres.conf" ||
  fail "gres-conf wrote: $(cat "$work/etc/gres.conf")"
# A server named twice would be handed to two jobs at once: check refuses it.
sed 's/^cpu1 1 [^ ]*/cpu1 1 '"${servers[0]}"'/' "$work/etc/scuda-pool.conf" >"$work/twice.conf"
if SCUDA_SLURM_POOL=$work/twice.conf "$scuda_slurm" check 2>"$work/twice.err"; then
  fail "check took a pool with a server twice"
fi
grep -q "server ${servers[0]} twice" "$work/twice.err" || fail "check said: $(cat "$work/twice.err")"

# Below the kernel's ephemeral range (32768 up), so that no server of
# another test, listening on port 0, takes one between this check and the
# daemons' start.
ports=$(python3 -c 'import random, socket
found = []
while len(found) < 2:
    port = random.randrange(20000, 32000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        found += [port] if port not in found else []
    except OSError:
        pass
    s.close()
print(*found, sep="\n")')
read -r -d '' ctld_port slurmd_port <<<"$ports" || true
cat >"$work/etc/slurm.conf" <<EOF
ClusterName=scudatest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/ctld
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/ctld.pid
SlurmdPidFile=$work/slurmd.pid
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
SlurmdParameters=config_overrides
ReturnToService=2
NodeName=cpu1 NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=8 Gres=scuda:2 State=UNKNOWN
PartitionName=main Nodes=cpu1 Default=YES MaxTime=INFINITE State=UP
EOF
# The admin's lines, with this test's copy of scuda-slurm.
sed "s|/usr/lib/scuda/slurm/scuda-slurm|$scuda_slurm|" "$packaging/slurm.conf.fragment" >>"$SLURM_CONF"
# Shapes of an allocation that one node cannot show (typed GRES, index
# lists, several node groups, another GRES beside): the Prolog with
# scontrol's own node list expansion and `show job -d` answered from a text.
mkdir "$work/shapes"
cat >"$work/shapes/scontrol" <<EOF
#!/bin/sh
[ "\$1 \$2" = "show job" ] || exec $(command -v scontrol) "\$@"
cat <<'JOB'
JobId=7 JobName=shapes
   JOB_GRES=gpu:1,scuda:3
     Nodes=cpu[1-2] CPU_IDs=0 Mem=0 GRES=gpu:a100:1(IDX:0),scuda:fast:3(IDX:0-1,3)
     Nodes=cpu3 CPU_IDs=0 Mem=0 GRES=scuda:1(IDX:2)
JOB
EOF
chmod +x "$work/shapes/scontrol"
{
  echo "run_dir=$work/shapes/run"
  for i in 0 1 2 3; do echo "cpu2 $i s$i:1 $work/token0"; done
  echo "cpu3 2 t2:1 $work/token1"
} >"$work/shapes/pool.conf"
# shapes NODE: the SCUDA_SERVER the Prolog writes for job 7 on NODE.
shapes() {
  PATH=$work/shapes:$PATH SCUDA_SLURM_POOL=$work/shapes/pool.conf SLURM_SCRIPT_CONTEXT=prolog_slurmd \
    SLURMD_NODENAME=$1 SLURM_JOB_ID=7 SLURM_JOB_UID=0 SLURM_JOB_GID=0 "$scuda_slurm" &&
    sed -n 's/^SCUDA_SERVER=//p' "$work/shapes/run/7/env"
}
[ "$(shapes cpu2)" = s0:1,s1:1,s3:1 ] || fail "the Prolog read cpu2's indices 0-1,3 as $(shapes cpu2)"
[ "$(shapes cpu3)" = t2:1 ] || fail "the Prolog read cpu3's index 2 as $(shapes cpu3)"
if shapes cpu4 2>"$work/shapes/err"; then fail "the Prolog found a GPU for a node the job has none on"; fi
grep -q "no index of node cpu4" "$work/shapes/err" || fail "the Prolog said: $(cat "$work/shapes/err")"

start slurmctld slurmctld -D -i -f "$SLURM_CONF"
start slurmd slurmd -D -f "$SLURM_CONF" -N cpu1
node_idle() { [ "$(sinfo -h -N -o %t 2>/dev/null)" = idle ]; }
wait_until 30 "the node is up and idle" node_idle
echo "slurm_test: slurmctld and slurmd up after $((SECONDS - started)) s"

# A job without the GRES gets nothing of scuda's.
# shellcheck disable=SC2016  # the job's shell expands them
out=$(timeout 30 srun sh -c 'echo "server=[${SCUDA_SERVER:-}] preload=[${LD_PRELOAD:-}]"')
[ "$out" = "server=[] preload=[]" ] || fail "a job without --gres=scuda got: $out"
# More GPUs than the node has: refused at once.
if timeout 30 srun --gres=scuda:3 true 2>"$work/three.err"; then fail "a job got 3 of 2 GPUs"; fi
grep -q "Requested node configuration is not available" "$work/three.err" ||
  fail "srun --gres=scuda:3 said: $(cat "$work/three.err")"

# job NAME: what the job got, its program run through scuda, then it holds
# its GPU until NAME.release appears.
cat >"$work/job.sh" <<EOF
#!/bin/sh
set -eu
{ echo "server=\${SCUDA_SERVER:-}"; echo "token=\$(cat "\${SCUDA_TOKEN_FILE:-/dev/null}")"
  echo "token_mode=\$(stat -c %a "\${SCUDA_TOKEN_FILE:-/dev/null}")"; echo "preload=\${LD_PRELOAD:-}"
} >"$work/\$1.env"
# Into a file of the job's own, whole before .running appears: srun
# forwards the job's output to NAME.out in its own time.
python3 "$work/bin/client_program.py" >"$work/\$1.program" 2>&1
touch "$work/\$1.running"
while [ ! -e "$work/\$1.release" ]; do sleep 0.1; done
EOF
job() {
  timeout 60 srun --gres=scuda:1 -J "$1" sh "$work/job.sh" "$1" >"$work/$1.out" 2>&1 &
  jobs+=($!)
}
got() { sed -n "s/^$2=//p" "$work/$1.env"; }
# index_of ADDRESS: which pool row a server is.
index_of() {
  local i
  for i in 0 1; do [ "${servers[$i]}" = "$1" ] && echo "$i" && return; done
  fail "job got server '$1', not one of the pool's (${servers[*]})"
}

job a
job b
wait_until 20 "jobs a and b run" test -e "$work/a.running" -a -e "$work/b.running"
# A job's own token names its job: "job.ID.EXPIRY.MAC".
own_token() { [[ $(got "$1" token) == job.$2.* ]]; }
for name in a b; do
  index=$(index_of "$(got "$name" server)")
  id=$(squeue -h -n "$name" -o %A)
  if [ "$index" = 1 ]; then
    own_token "$name" "$id" || fail "job $name (id $id) got no token of its own: $(got "$name" token)"
    grep -q "(token 'job:$id') ready" "$work/log/server1.log" ||
      fail "server 1 logged no session of job $id's own token"
  else
    [ "$(got "$name" token)" = "$(cat "$work/token0")" ] || fail "job $name's token is not its GPU's"
    grep -q "(token 'slurm-gpu0') ready" "$work/log/server0.log" ||
      fail "server 0 logged no session of a job's program with its token"
  fi
  [ "$(got "$name" token_mode)" = 400 ] || fail "job $name's token copy is mode $(got "$name" token_mode)"
  [[ $(got "$name" preload) == "$lib_dir"/libscuda.so* ]] || fail "job $name's LD_PRELOAD: $(got "$name" preload)"
  grep -q "^cuda: 1 devices, .* from $lib_dir/libcuda.so.1$" "$work/$name.program" ||
    fail "job $name's program did not run through scuda"
  grep -q "^nvml: 1 devices, from $lib_dir/libnvidia-ml.so.1$" "$work/$name.program" ||
    fail "job $name's NVML calls did not go through scuda"
done
[ "$(got a server)" != "$(got b server)" ] || fail "jobs a and b got the same GPU $(got a server)"
echo "slurm_test: a got ${servers[$(index_of "$(got a server)")]}, b got the other, after $((SECONDS - started)) s"

# A third job waits for a GPU: the node has CPUs to spare, not GPUs.
job c
c_waits() { [ "$(squeue -h -n c -o '%T %r')" = "PENDING Resources" ]; }
wait_until 10 "job c pends for resources while a and b hold both GPUs" c_waits
sleep 1
c_waits || fail "job c did not stay pending"
[ ! -e "$work/c.env" ] || fail "job c ran while a and b held both GPUs"
touch "$work/a.release"
wait_until 20 "job c runs once a ends" test -e "$work/c.running"
[ "$(got c server)" = "$(got a server)" ] || fail "job c got $(got c server), not a's freed GPU"
touch "$work/b.release" "$work/c.release"
for pid in "${jobs[@]}"; do wait "$pid" || fail "a job's srun failed: $(cat "$work"/{a,b,c}.out)"; done
jobs=()

# The Epilog removes each job's files; then both GPUs are free for one job.
run_dir_empty() { [ -z "$(ls -A "$work/run")" ]; }
wait_until 10 "the Epilog removes the jobs' files" run_dir_empty
# The Epilog dropped the own tokens: one kept after its job is refused.
for name in a b c; do
  [ "$(index_of "$(got "$name" server)")" = 1 ] || continue
  got "$name" token >"$work/kept.token"
  if SCUDA_SERVER=${servers[1]} SCUDA_TOKEN_FILE=$work/kept.token LD_LIBRARY_PATH=$lib_dir \
    timeout 30 python3 "$work/bin/client_program.py" >"$work/kept.out" 2>&1; then
    fail "job $name's own token still works after its job: $(cat "$work/kept.out")"
  fi
  grep -q "token was dropped (the job ended)" "$work/kept.out" ||
    fail "a dropped token's client was told: $(cat "$work/kept.out")"
done
grep -q "token dropped" "$work/log/server1.log" || fail "server 1 logged no dropped token"
# Both GPUs for one job of an ordinary user, whose copy of the token is its own.
# shellcheck disable=SC2016
out=$(cd "$work" && runuser -u nobody -- timeout 30 srun --immediate=10 --gres=scuda:2 \
  sh -c 'echo "$SCUDA_SERVER $(stat -c %U:%a "$SCUDA_TOKEN_FILE") $(cat "$SCUDA_TOKEN_FILE")"' \
  2>"$work/d.out")
[ "$out" = "${servers[0]},${servers[1]} nobody:400 $(cat "$work/token0")" ] ||
  fail "nobody's job with both GPUs got: $out"
# Two tasks of a job given both GPUs, with SCUDA_PICK=local-rank: each
# task's program runs on the server of its SLURM_LOCALID, a GPU of its own.
cat >"$work/rank.sh" <<EOF
#!/bin/sh
SCUDA_PICK=local-rank SCUDA_LOG_LEVEL=info python3 "$work/bin/client_program.py" \\
  >"$work/rank.\$SLURM_LOCALID" 2>&1
EOF
timeout 30 srun --immediate=10 --gres=scuda:2 -n 2 sh "$work/rank.sh" 2>"$work/rank.err" ||
  fail "a job of two tasks failed: $(cat "$work/rank.err" "$work"/rank.[01])"
for i in 0 1; do
  grep -q "SLURM_LOCALID=$i: the process takes server $((i + 1)) of 2, ${servers[$i]}" \
    "$work/rank.$i" || fail "task $i of a job of two: $(cat "$work/rank.$i")"
  grep -q "^cuda: 1 devices, .* from $lib_dir/libcuda.so.1$" "$work/rank.$i" ||
    fail "task $i's program did not run through scuda: $(cat "$work/rank.$i")"
done
# A batch job: its script's program runs through scuda too.
batch=$(sbatch --parsable --gres=scuda:1 -o "$work/e.out" --chdir="$work" \
  --wrap="python3 $work/bin/client_program.py")
# Polled here: sbatch --wait polls only every few seconds.
batch_ended() { [ -z "$(squeue -h -j "$batch" 2>/dev/null)" ]; }
wait_until 30 "the batch job ends" batch_ended
grep -q "^cuda: 1 devices, .* from $lib_dir/libcuda.so.1$" "$work/e.out" ||
  fail "the batch job's program did not run through scuda: $(cat "$work/e.out")"
echo "slurm_test: passed in $((SECONDS - started)) s"
