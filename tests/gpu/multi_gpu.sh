#!/usr/bin/env bash
# multi_gpu.sh: the two-GPU checks, for a machine with two GPUs. From the
# repo root:
#   bash tests/gpu/multi_gpu.sh
# Builds scuda (SCUDA_SKIP_BUILD=1 keeps build/) and runs, natively and
# through one scuda server that offers both GPUs (clients inside isolate.sh):
#   multi_gpu_peer   device count, peer copies both ways, a kernel reading
#                    the other GPU's memory, cudaMemcpyPeer's bandwidth
#   visible          CUDA_VISIBLE_DEVICES=1 in the client: one device, the
#                    same GPU (UUID) as natively
#   ddp_train        torchrun --nproc_per_node=2 DDP with NCCL: losses equal
#                    to native bit for bit, step time ratio
# and through two servers of one GPU each (CUDA_VISIBLE_DEVICES=0 / =1 on
# the server side) given to one client as one list of devices:
#   two.devices      device count 2, the same GPUs (UUIDs) as natively
#   two_visible      CUDA_VISIBLE_DEVICES=1,0 in the client: the same GPUs,
#                    in that order, as natively
#   smi              nvidia-smi -L lists the same GPUs as natively (NVML)
#   split_train      a model split across the two devices, activations
#                    copied between servers (server to server; once more
#                    staged through the client): losses equal to native,
#                    step and 256 MiB copy ratios
#   ddp_gloo         DDP with gloo across the two servers: losses equal
#   ddp_rank_servers DDP with NCCL, each rank taking one of the two servers
#                    (scuda run --pick local-rank): losses equal to native
#   ddp_socket       the same over NCCL's socket transport (P2P and shared
#                    memory off), through live mirrors: losses equal to
#                    native over sockets, step ratio
#   ddp_nccl         DDP with NCCL, every rank given both servers (scuda run
#                    points NCCL to its socket transport between them):
#                    losses equal to native over sockets
# Writes $OUT/multi_gpu.md and every run's output in $OUT/multi_logs/.
# Exits non-zero if anything failed.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
out=${OUT:-$(mktemp -d /tmp/scuda-multi.XXXXXX)}
logs=$out/multi_logs
mkdir -p "$logs" build/gpu
limit=${SCUDA_TEST_TIMEOUT:-300}
[ -d /usr/local/cuda/bin ] && PATH=$PATH:/usr/local/cuda/bin
report=$out/multi_gpu.md
failed=0
echo "results go to $out"
nvidia-smi -L

note() { echo "$*" | tee -a "$report"; }
source tests/gpu/timed.sh
# ran NAME CMD...: timed, and its line in the report.
ran() {
  timed "$@"
  note "- $1: rc=$rc ${secs}s: $(echo "$detail" | cut -c1-240)"
  [ "$rc" -eq 0 ] || failed=1
}
# same_output NAME WHAT: NAME.native and NAME.scuda printed the same (WHAT).
same_output() {
  local native=$logs/$1.native.out scuda=$logs/$1.scuda.out
  if [ -s "$native" ] && cmp -s "$native" "$scuda"; then
    note "- $2: the same: $(tr '\n' ' ' <"$native" | cut -c1-200)"
  else
    note "- FAIL: $2: native '$(cat "$native")', scuda '$(cat "$scuda")'"
    failed=1
  fi
}

SCUDA_BUILD_LOG=$logs/cmake.log source tests/gpu/build.sh
nvcc -O2 -arch=sm_90 -Itests/gpu/programs -o build/gpu/multi_gpu_peer \
  tests/gpu/programs/multi_gpu_peer.cu >"$logs/nvcc.log" 2>&1 || cat "$logs/nvcc.log"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
server=127.0.0.1:$port
build/bin/scuda server -l "$server" -v >"$out/server.log" 2>&1 &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null' EXIT
sleep 2
scuda=(tests/gpu/isolate.sh build/bin/scuda run --server "$server" --)
ddp=(torchrun --standalone --nproc_per_node=2 tests/gpu/torch/ddp_train.py)

note "## multi_gpu_peer"
ran peer.native build/gpu/multi_gpu_peer
ran peer.scuda "${scuda[@]}" build/gpu/multi_gpu_peer
for run in native scuda; do
  grep -a '^# ' "$logs/peer.$run.out" | sed "s/^/  $run /" | tee -a "$report"
done

note "## CUDA_VISIBLE_DEVICES=1 in the client: its device 0 is the server's GPU 1"
which=(python3 -c 'import torch; print(torch.cuda.device_count(), torch.cuda.get_device_properties(0).uuid)')
CUDA_VISIBLE_DEVICES=1 ran visible.native "${which[@]}"
CUDA_VISIBLE_DEVICES=1 ran visible.scuda "${scuda[@]}" "${which[@]}"
same_output visible "device"

note "## ddp_train (2 ranks, NCCL)"
ran ddp.native "${ddp[@]}"
ran ddp.scuda "${scuda[@]}" "${ddp[@]}"
python3 - "$logs/ddp.native.out" "$logs/ddp.scuda.out" <<'PY' | tee -a "$report" || failed=1
import json, sys
runs = []
for path in sys.argv[1:]:
    lines = [l for l in open(path, errors="replace") if l.startswith("RESULT ddp_train ")]
    runs.append(json.loads(lines[-1].split(" ", 2)[2]) if lines else None)
native, scuda = runs
if not native or not scuda:
    print("- compare: FAIL, a run printed no RESULT line")
    sys.exit(1)
same = native["losses"] == scuda["losses"] and native["params"] == scuda["params"]
ratio = scuda["step_ms"] / native["step_ms"]
print(f"- compare: losses and parameters {'equal' if same else 'DIFFERENT'}; step "
      f"{native['step_ms']} ms native, {scuda['step_ms']} ms scuda, ratio {ratio:.3f}")
sys.exit(0 if same else 1)
PY

kill "$server_pid" 2>/dev/null
wait "$server_pid" 2>/dev/null

# compare_runs NAME: the RESULT lines of NAME.native and NAME.scuda; losses
# and parameters must be equal; prints the ratios of the numbers given.
compare_runs() {
  python3 - "$1" "$logs/$1.native.out" "$logs/$1.scuda.out" <<'PY' | tee -a "$report"
import json, sys
name, runs = sys.argv[1], []
for path in sys.argv[2:]:
    lines = [l for l in open(path, errors="replace") if l.startswith("RESULT ")]
    runs.append(json.loads(lines[-1].split(" ", 2)[2]) if lines else None)
native, scuda = runs
if not native or not scuda:
    print(f"- {name} compare: FAIL, a run printed no RESULT line")
    sys.exit(1)
same = native["losses"] == scuda["losses"] and native["params"] == scuda["params"]
parts = [f"losses and parameters {'equal' if same else 'DIFFERENT'}"]
for key in ("step_ms", "copy_gbps"):
    if key in native and key in scuda:
        parts.append(f"{key} {native[key]} native, {scuda[key]} scuda, "
                     f"ratio {scuda[key] / native[key]:.3f}")
print(f"- {name} compare: " + "; ".join(parts))
sys.exit(0 if same else 1)
PY
}

note "## two servers, one GPU each, one list of devices"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
first=127.0.0.1:$(free_port)
second=127.0.0.1:$(free_port)
CUDA_VISIBLE_DEVICES=0 build/bin/scuda server -l "$first" -v >"$out/server0.log" 2>&1 &
first_pid=$!
CUDA_VISIBLE_DEVICES=1 build/bin/scuda server -l "$second" -v >"$out/server1.log" 2>&1 &
second_pid=$!
trap 'kill "$first_pid" "$second_pid" 2>/dev/null' EXIT
sleep 2
two=(tests/gpu/isolate.sh build/bin/scuda run --server "$first" --server "$second" --)
uuids=(python3 -c 'import torch; print(torch.cuda.device_count(), [str(torch.cuda.get_device_properties(i).uuid) for i in range(torch.cuda.device_count())])')
ran two.native "${uuids[@]}"
ran two.scuda "${two[@]}" "${uuids[@]}"
same_output two "devices"
# The client's CUDA_VISIBLE_DEVICES picks from both servers' GPUs as one
# list: 1,0 is the second server's GPU, then the first's.
CUDA_VISIBLE_DEVICES=1,0 ran two_visible.native "${uuids[@]}"
CUDA_VISIBLE_DEVICES=1,0 ran two_visible.scuda "${two[@]}" "${uuids[@]}"
same_output two_visible "CUDA_VISIBLE_DEVICES=1,0 over both servers"
# NVML numbers the two servers' GPUs as one list, as CUDA does.
ran smi.native nvidia-smi -L
ran smi.scuda "${two[@]}" nvidia-smi -L
same_output smi "nvidia-smi -L"
ran split.native python3 tests/gpu/torch/split_train.py
ran split.scuda "${two[@]}" python3 tests/gpu/torch/split_train.py
compare_runs split || failed=1
# The same with copies between the servers staged through the client.
SCUDA_PEER_COPIES=0 ran split_staged.scuda "${two[@]}" python3 tests/gpu/torch/split_train.py
DDP_BACKEND=gloo ran ddp_gloo.native "${ddp[@]}"
DDP_BACKEND=gloo ran ddp_gloo.scuda "${two[@]}" "${ddp[@]}"
compare_runs ddp_gloo || failed=1
# DDP with NCCL, each rank taking its own server of the two (--pick
# local-rank, one GPU per rank as a launcher binding a GPU to each task
# gives, so each rank uses its device 0): losses equal to the native NCCL
# run's.
cp "$logs/ddp.native.out" "$logs/ddp_rank_servers.native.out"
DDP_DEVICE=0 ran ddp_rank_servers.scuda tests/gpu/isolate.sh build/bin/scuda run \
  --pick local-rank --server "$first" --server "$second" -- "${ddp[@]}"
compare_runs ddp_rank_servers || failed=1
# The same over NCCL's socket transport, which polls mapped host memory
# while kernels run: live mirrors (docs/managed-memory.md).
NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 ran ddp_socket.native "${ddp[@]}"
NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 DDP_DEVICE=0 ran ddp_socket.scuda tests/gpu/isolate.sh \
  build/bin/scuda run --pick local-rank --server "$first" --server "$second" -- "${ddp[@]}"
compare_runs ddp_socket || failed=1
# One list of both servers in every rank, rank r on device r, as a plain
# torchrun script has it: scuda run sends NCCL over its socket transport
# between the two servers' GPUs; losses equal to native over sockets.
cp "$logs/ddp_socket.native.out" "$logs/ddp_nccl.native.out"
ran ddp_nccl.scuda "${two[@]}" "${ddp[@]}"
compare_runs ddp_nccl || failed=1
kill "$first_pid" "$second_pid" 2>/dev/null
wait "$first_pid" "$second_pid" 2>/dev/null

if [ "$failed" -eq 0 ]; then note "ALL PASSED"; else note "FAILED"; fi
exit "$failed"
