#!/usr/bin/env bash
# The main job on a fresh machine: install, build, and show scuda working.
# With a local GPU and no server configured, it serves the GPU on loopback
# and runs a sample CUDA program through it; without a GPU it says how to
# point this machine at one.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh -DSCUDA_BUILD_TESTS=OFF
scuda=build/bin/scuda
if [ -n "${SCUDA_SERVER:-}" ] || [ -s "$HOME/.config/scuda/host" ]; then
  echo "A scuda server is configured; run any CUDA program with: $scuda run -- PROGRAM"
  exit 0
fi
if ! nvidia-smi -L >/dev/null 2>&1; then
  cat <<TXT
No GPU on this machine. On a machine with one, run:
    scuda server -l 0.0.0.0:14833 --token-file TOKEN
then here:
    $scuda run --server GPU-HOST:14833 --token-file TOKEN -- your-cuda-program
(or put GPU-HOST:14833 in ~/.config/scuda/host, or export SCUDA_SERVER).
TXT
  exit 0
fi
mkdir -p build/samples
nvcc -O2 -o build/samples/vector_add tests/gpu/programs/vector_add.cu
port=14833
"$scuda" server -l "127.0.0.1:$port" &
server=$!
trap 'kill $server' EXIT
sleep 1
echo "Running build/samples/vector_add through scuda server 127.0.0.1:$port:"
"$scuda" run --server "127.0.0.1:$port" -- build/samples/vector_add
