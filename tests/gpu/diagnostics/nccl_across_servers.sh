#!/usr/bin/env bash
# nccl_across_servers.sh: what NCCL does when the GPUs of a job's ranks are
# on two scuda servers (docs/pools.md, "NCCL across servers"). On a machine
# with two GPUs, after a build (tests/gpu/multi_gpu.sh), from the repo root:
#   bash tests/gpu/diagnostics/nccl_across_servers.sh
# Starts two servers of one GPU each and runs tests/gpu/torch/ddp_train.py
# with NCCL, clients inside isolate.sh, NCCL_DEBUG=INFO, each case limited
# to SCUDA_TEST_TIMEOUT seconds (default 60):
#   both    one client list of both servers, rank r on device r
#   own     each rank taking its own server (scuda run --pick local-rank)
#   socket  as own, with NCCL's P2P and shared-memory transports off and the
#           LL protocol: NCCL's socket transport between the ranks
#   simple  the same with NCCL's choice of protocols
#   shm     as both, with NCCL_IGNORE_DISABLED_P2P=1: its shared-memory
#           transport
# (each but both and own also natively, as NAME.native).
# Writes $OUT/nccl.md and each case's output in $OUT/nccl_logs/.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../../.." || exit 1
out=${OUT:-$(mktemp -d /tmp/scuda-nccl.XXXXXX)}
logs=$out/nccl_logs
mkdir -p "$logs"
limit=${SCUDA_TEST_TIMEOUT:-60}
report=$out/nccl.md
source tests/gpu/timed.sh
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
first=127.0.0.1:$(free_port)
second=127.0.0.1:$(free_port)
CUDA_VISIBLE_DEVICES=0 build/bin/scuda server -l "$first" >"$logs/server0.log" 2>&1 &
first_pid=$!
CUDA_VISIBLE_DEVICES=1 build/bin/scuda server -l "$second" >"$logs/server1.log" 2>&1 &
second_pid=$!
trap 'kill "$first_pid" "$second_pid" 2>/dev/null' EXIT
sleep 2
ddp=(torchrun --standalone --nproc_per_node=2)
train=(tests/gpu/torch/ddp_train.py)
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,P2P,SHM,GRAPH
# case NAME CMD...: one run, its line in the report.
case_line() {
  timed "$@"
  echo "- $1: rc=$rc ${secs}s: $(echo "$detail" | cut -c1-600)" | tee -a "$report"
  grep -ah "via \|Channel 00\|transport\|NCCL WARN\|Error\|error" "$logs/$1.out" "$logs/$1.err" |
    sort | uniq -c | sort -rn | head -12 | sed 's/^/    /' | tee -a "$report"
}
# SCUDA_NCCL_CASES picks cases by name (default: all of them).
wanted() { [[ " ${SCUDA_NCCL_CASES:-both own socket simple shm} " == *" $1 "* ]]; }
own=(tests/gpu/isolate.sh build/bin/scuda run --pick local-rank --server "$first" --server "$second" --)
both=(tests/gpu/isolate.sh build/bin/scuda run --server "$first" --server "$second" --)
wanted both && case_line both "${both[@]}" "${ddp[@]}" "${train[@]}"
wanted own && DDP_DEVICE=0 case_line own "${own[@]}" "${ddp[@]}" "${train[@]}"
if wanted socket; then
  NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_PROTO=LL case_line socket.native "${ddp[@]}" "${train[@]}"
  NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_PROTO=LL DDP_DEVICE=0 case_line socket \
    "${own[@]}" "${ddp[@]}" "${train[@]}"
fi
# The socket transport with NCCL's own choice of protocol (Simple for the
# gradients' buckets).
if wanted simple; then
  NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 case_line simple.native "${ddp[@]}" "${train[@]}"
  NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 DDP_DEVICE=0 case_line simple \
    "${own[@]}" "${ddp[@]}" "${train[@]}"
fi
# The same with every mapped block live, whoever allocates it.
if wanted simple-all; then
  SCUDA_LIVE_HOST_MEMORY=all NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 DDP_DEVICE=0 \
    case_line simple-all "${own[@]}" "${ddp[@]}" "${train[@]}"
fi
# Both servers in every rank, NCCL told to go on without P2P: its
# shared-memory transport.
if wanted shm; then
  NCCL_IGNORE_DISABLED_P2P=1 NCCL_P2P_DISABLE=1 case_line shm.native "${ddp[@]}" "${train[@]}"
  NCCL_IGNORE_DISABLED_P2P=1 case_line shm "${both[@]}" "${ddp[@]}" "${train[@]}"
fi
