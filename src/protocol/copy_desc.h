// The descriptor of a 2D/3D copy as kOpMemcpy3D carries it. Every shape of
// copy (2D, 3D, peer, host<->array) travels as a CUDA_MEMCPY3D_PEER: arrays
// and contexts as the client's ids, device addresses as they are. Host
// pointers are not sent: a host side's bytes travel packed, as a blob (into
// the device) or as the reply (out of it), and the server stages them.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "protocol/codec.h"

namespace scuda::protocol {

// Which driver function the server calls for the copy.
enum CopyShape : uint8_t {
  kShape2D,           // cuMemcpy2D(Async)
  kShape2DUnaligned,  // cuMemcpy2DUnaligned
  kShape3D,           // cuMemcpy3D(Async)
  kShape3DPeer,       // cuMemcpy3DPeer(Async)
  kShapeHtoA,         // cuMemcpyHtoA(Async): dst array at dstXInBytes, one row
  kShapeAtoH,         // cuMemcpyAtoH(Async): src array at srcXInBytes, one row
  kShapeCount,
};

// Between each shape's descriptor and the wire's. A 2D copy is one slice.
CUDA_MEMCPY3D_PEER as_peer(const CUDA_MEMCPY2D& m);
CUDA_MEMCPY3D_PEER as_peer(const CUDA_MEMCPY3D& m);
CUDA_MEMCPY2D as_2d(const CUDA_MEMCPY3D_PEER& c);
CUDA_MEMCPY3D as_3d(const CUDA_MEMCPY3D_PEER& c);

void write_copy_desc(Writer& w, const CUDA_MEMCPY3D_PEER& c);
// Leaves host pointers null; the reader's ok() says whether it decoded.
void read_copy_desc(Reader& r, CUDA_MEMCPY3D_PEER* c);

}  // namespace scuda::protocol
