// The descriptor of a 2D/3D copy as kOpMemcpy3D carries it. Every shape of
// copy (2D, 3D, peer, host<->array) travels as a CUDA_MEMCPY3D_PEER: arrays
// and contexts as the client's ids, device addresses as they are. Host
// pointers are not sent: a host side's bytes travel packed, as a blob (into
// the device) or as the reply (out of it), and the server stages them.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <tuple>

#include "protocol/layout.h"

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

// One side of the descriptor as it crosses, every field a u64: its memory
// type, offsets, pitch and height, its device address as it is, and its
// array and context as the client's ids.
struct CopySide {
  uint64_t memory_type = 0, x = 0, y = 0, z = 0, lod = 0, pitch = 0, height = 0;
  uint64_t device = 0, array = 0, context = 0;
  auto fields() {
    return std::tie(memory_type, x, y, z, lod, pitch, height, device, array, context);
  }
};

// The descriptor as it crosses (op::Memcpy3D's): both sides, then the extent.
struct CopyDesc {
  CopySide src;
  CopySide dst;
  uint64_t width = 0, height = 0, depth = 0;
  auto fields() { return std::tie(src, dst, width, height, depth); }
};

// Between the driver's descriptor and the wire's; host pointers are not
// sent, and from_desc leaves them null.
CopyDesc to_desc(const CUDA_MEMCPY3D_PEER& c);
CUDA_MEMCPY3D_PEER from_desc(const CopyDesc& d);

}  // namespace scuda::protocol
