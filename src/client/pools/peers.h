// Devices of two servers (servers.h) as CUDA peers: never peers, and
// copies between them staged through the client (peers.cc).
#pragma once

#include <cuda.h>

#include <cstddef>

namespace scuda::client {

// True when contexts `a` and `b` live on two servers of the session.
bool on_two_servers(CUcontext a, CUcontext b);
// True when device memory at `a` and at `b`, both placed by the client,
// lives on two servers; then *ctx_a and *ctx_b are their devices' primary
// contexts.
bool on_two_servers(CUdeviceptr a, CUdeviceptr b, CUcontext* ctx_a, CUcontext* ctx_b);

// Copies `size` bytes from `src` (in `src_ctx`) to `dst` (in `dst_ctx`)
// through the client's memory, after `stream`'s work (none: no stream to
// wait for), and returns when the bytes have arrived.
CUresult copy_across_servers(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                             size_t size, CUstream stream);

// cuMemcpyDtoD and its kin (`async`: on `stream`; `per_thread`: the
// _ptds/_ptsz entry point's default stream): staged when the memory is on
// two servers, else on the server of `dst`, with the host's managed pages
// kept right (coherent_pages.h).
CUresult device_to_device(CUdeviceptr dst, CUdeviceptr src, size_t size, CUstream stream,
                          bool async, bool per_thread);

}  // namespace scuda::client
