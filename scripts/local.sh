#!/usr/bin/env bash
# The development loop on a machine with a GPU, one terminal each:
#   scripts/local.sh server [SERVER-OPTIONS]  builds, then serves this GPU on loopback
#   scripts/local.sh run [PROGRAM [ARGS]]     builds, then runs PROGRAM (default
#                                             nvidia-smi) through that server
# SCUDA_LOCAL_PORT sets the port (14833).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '2,6s/^# \{0,1\}//p' "$0"; }
port=${SCUDA_LOCAL_PORT:-14833}
command=${1:-}
case $command in
  server | run) shift ;;
  -h | --help) usage; exit 0 ;;
  *) usage >&2; exit 2 ;;
esac
scripts/build.sh
if [ "$command" = server ]; then
  exec build/bin/scuda server -l "127.0.0.1:$port" "$@"
fi
[ $# -gt 0 ] || set -- nvidia-smi
exec build/bin/scuda run --server "127.0.0.1:$port" -- "$@"
