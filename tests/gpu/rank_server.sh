#!/usr/bin/env bash
# rank_server.sh CMD...: runs CMD with SCUDA_SERVER set to this rank's own
# server, the LOCAL_RANK-th of SCUDA_RANK_SERVERS (space-separated), and
# DDP_DEVICE=0, so that each rank of a torchrun job sees one GPU of its own:
#   SCUDA_RANK_SERVERS="127.0.0.1:A 127.0.0.1:B" torchrun --nproc_per_node=2 \
#     --no-python tests/gpu/rank_server.sh python3 train.py
set -eu
read -ra servers <<<"${SCUDA_RANK_SERVERS:?the servers, one per rank}"
export SCUDA_SERVER=${servers[${LOCAL_RANK:?set by torchrun}]:?no server for this rank}
export DDP_DEVICE=0
exec "$@"
