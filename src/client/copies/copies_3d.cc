// 2D and 3D copies, and host<->array copies. Every shape travels as a
// CUDA_MEMCPY3D_PEER (protocol/copy_desc.h), split into boxes of at most
// kChunkSize bytes. A host side never crosses as a pointer: only the bytes of
// the described rows do, packed, so a pitch's padding is not sent. As with
// 1D copies, the boxes into a known allocation (or array) go one-way, and
// those out of device memory are pipelined, or delivered at the next wait
// when async.
#include <algorithm>
#include <cstring>

#include "client/contexts/context.h"
#include "client/copies/copy_mode.h"
#include "client/memory/memory.h"
#include "client/op_calls.h"
#include "client/runtime.h"
#include "client/transport/session.h"
#include "custom.h"
#include "protocol/copy_desc.h"
#include "protocol/frame.h"
#include "protocol/op_layouts.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

namespace op = protocol::op;
using protocol::kChunkSize;

// A box of the copy's extent, at an offset from its origin.
struct Box {
  size_t x, y, z, w, h, d;
};

// Boxes of at most kChunkSize bytes: groups of whole slices, else groups of
// rows of one slice, else parts of one row.
std::vector<Box> split(size_t w, size_t h, size_t d) {
  if (w == 0 || h == 0 || d == 0) return {{0, 0, 0, w, h, d}};
  std::vector<Box> boxes;
  if (w <= kChunkSize && h <= kChunkSize / w) {
    const size_t k = kChunkSize / (w * h);
    for (size_t z = 0; z < d; z += k) boxes.push_back({0, 0, z, w, h, std::min(k, d - z)});
  } else if (w <= kChunkSize) {
    const size_t k = kChunkSize / w;
    for (size_t z = 0; z < d; ++z)
      for (size_t y = 0; y < h; y += k) boxes.push_back({0, y, z, w, std::min(k, h - y), 1});
  } else {
    for (size_t z = 0; z < d; ++z)
      for (size_t y = 0; y < h; ++y)
        for (size_t x = 0; x < w; x += kChunkSize)
          boxes.push_back({x, y, z, std::min(kChunkSize, w - x), 1, 1});
  }
  return boxes;
}

// A side in the client's memory: the copy's first byte and the layout of
// its rows and slices.
struct HostSide {
  uint8_t* origin;
  size_t pitch;
  size_t slice_pitch;
  uint8_t* at(const Box& b) const { return origin + b.z * slice_pitch + b.y * pitch + b.x; }
  HostLayout layout(const Box& b) const { return {b.w, pitch, b.h, slice_pitch}; }
};

// A unified side is device memory when it lies in a known allocation, else
// host memory, as cuMemcpy decides. A host side inside a known allocation
// (managed memory, mapped here at its device address) is device memory too:
// the client must not touch it while it holds the connection's lock, since
// a page fault there needs that lock. False for a memory type CUDA lacks.
template <class P>
bool classify(CUmemorytype* type, P* host, CUdeviceptr* device) {
  if (*type == CU_MEMORYTYPE_HOST && is_device_address(reinterpret_cast<const void*>(*host))) {
    *type = CU_MEMORYTYPE_DEVICE;
    *device = reinterpret_cast<CUdeviceptr>(*host);
  }
  if (*type == CU_MEMORYTYPE_UNIFIED) {
    if (is_device_address(reinterpret_cast<void*>(*device))) {
      *type = CU_MEMORYTYPE_DEVICE;
    } else {
      *type = CU_MEMORYTYPE_HOST;
      *host = reinterpret_cast<P>(*device);
    }
  }
  return *type == CU_MEMORYTYPE_HOST || *type == CU_MEMORYTYPE_DEVICE ||
         *type == CU_MEMORYTYPE_ARRAY;
}

// The client packs and unpacks host rows itself, so it checks what the
// driver would: rows that fit their pitch, slices that fit their height.
bool host_side(const void* host, size_t x, size_t y, size_t z, size_t pitch, size_t height,
               const CUDA_MEMCPY3D_PEER& c, HostSide* side) {
  if (!host || x > pitch || c.WidthInBytes > pitch - x) return false;
  if (c.Depth > 1 && (y > height || c.Height > height - y)) return false;
  side->pitch = pitch;
  side->slice_pitch = pitch * height;
  side->origin =
      static_cast<uint8_t*>(const_cast<void*>(host)) + z * side->slice_pitch + y * pitch + x;
  return true;
}

// True when the destination is device memory or an array that the client
// knows holds the whole copy: then nothing the server says would be news at
// once.
bool lands_in_known_memory(const CUDA_MEMCPY3D_PEER& c) {
  if (!c.WidthInBytes || !c.Height || !c.Depth) return false;
  if (c.dstMemoryType == CU_MEMORYTYPE_ARRAY)
    return array_holds(c.dstArray, c.dstXInBytes, c.dstY, c.dstZ, c.WidthInBytes, c.Height,
                       c.Depth);
  if (c.dstMemoryType != CU_MEMORYTYPE_DEVICE) return false;
  const size_t slice = c.dstPitch * c.dstHeight;
  const CUdeviceptr start = c.dstDevice + c.dstZ * slice + c.dstY * c.dstPitch + c.dstXInBytes;
  const size_t span = (c.Depth - 1) * slice + (c.Height - 1) * c.dstPitch + c.WidthInBytes;
  return inside_allocation(start, span);
}

// The request for one box: its descriptor with the box's offsets applied
// (the server ignores a host side's), and no data.
op::Memcpy3D::Request request(uint8_t shape, uint8_t mode, CUstream stream, CUDA_MEMCPY3D_PEER c,
                              const Box& b) {
  c.srcXInBytes += b.x;
  c.srcY += b.y;
  c.srcZ += b.z;
  c.dstXInBytes += b.x;
  c.dstY += b.y;
  c.dstZ += b.z;
  c.WidthInBytes = b.w;
  c.Height = b.h;
  c.Depth = b.d;
  return {shape, mode, handle_id(stream), protocol::to_desc(c), {}};
}

// A synchronous copy is a synchronizing call; an async one is not.
uint16_t sync_flag(uint8_t mode) {
  return mode & protocol::kCopyAsync ? 0 : protocol::kSynchronizing;
}

// The box's rows as one run of bytes: in place when they are contiguous,
// else packed into *buf.
const uint8_t* gather(const HostSide& src, const Box& b, std::vector<uint8_t>* buf) {
  const size_t n = b.w * b.h * b.d;
  if (src.layout(b).is_contiguous(n)) return src.at(b);
  buf->resize(n);
  for (size_t z = 0; z < b.d; ++z)
    for (size_t y = 0; y < b.h; ++y)
      std::memcpy(buf->data() + (z * b.h + y) * b.w, src.at({b.x, b.y + y, b.z + z, 0, 0, 0}), b.w);
  return buf->data();
}

CUresult from_host(Connection* conn, uint8_t shape, const CUDA_MEMCPY3D_PEER& c,
                   const HostSide& src, CUstream stream, uint8_t mode) {
  const bool wait = !lands_in_known_memory(c);
  const std::vector<Box> boxes = split(c.WidthInBytes, c.Height, c.Depth);
  std::vector<uint8_t> packed;
  uint64_t last_id = 0;
  for (size_t i = 0; i < boxes.size(); ++i) {
    const Box& b = boxes[i];
    op::Memcpy3D::Request q = request(shape, mode, stream, c, b);
    q.data = {reinterpret_cast<const char*>(gather(src, b, &packed)), b.w * b.h * b.d};
    protocol::Writer head;
    const std::string_view data = protocol::write_head(head, q);  // sent from where it lies
    const uint16_t flags =
        wait && i + 1 == boxes.size() ? sync_flag(mode) : uint16_t{protocol::kOneWay};
    if (!conn->send(op::Memcpy3D::kOp, flags, head.data().data(), head.size(), data.data(),
                    data.size(), &last_id))
      return CUDA_ERROR_DEVICE_UNAVAILABLE;
  }
  if (!wait) return CUDA_SUCCESS;
  std::vector<uint8_t> reply;
  return conn->receive(last_id, &reply);
}

CUresult to_host(Connection* conn, uint8_t shape, const CUDA_MEMCPY3D_PEER& c, const HostSide& dst,
                 CUstream stream, uint8_t mode) {
  const bool async = mode & protocol::kCopyAsync;
  const std::vector<Box> boxes = split(c.WidthInBytes, c.Height, c.Depth);
  std::vector<uint64_t> ids;
  for (const Box& b : boxes) {
    const protocol::Writer w = protocol::encode(request(shape, mode, stream, c, b));
    uint64_t id = 0;
    if (!conn->send(op::Memcpy3D::kOp, sync_flag(mode), w.data().data(), w.size(), nullptr, 0, &id))
      return CUDA_ERROR_DEVICE_UNAVAILABLE;
    if (async) conn->deliver_later(id, dst.at(b), b.w * b.h * b.d, dst.layout(b));
    else ids.push_back(id);
  }
  CUresult first = CUDA_SUCCESS;
  for (size_t i = 0; i < ids.size(); ++i) {
    const Box& b = boxes[i];
    const CUresult rc = conn->receive_into(ids[i], dst.at(b), b.w * b.h * b.d, dst.layout(b));
    if (first == CUDA_SUCCESS) first = rc;
  }
  if (first == CUDA_SUCCESS && !async) first = conn->take_deferred_error();
  return first;
}

CUresult host_to_host(const CUDA_MEMCPY3D_PEER& c, const HostSide& src, const HostSide& dst,
                      CUstream stream, uint8_t mode) {
  if (mode & protocol::kCopyAsync)
    if (CUresult rc = cuStreamSynchronize(stream); rc != CUDA_SUCCESS) return rc;
  for (size_t z = 0; z < c.Depth; ++z)
    for (size_t y = 0; y < c.Height; ++y) {
      const Box row{0, y, z, 0, 0, 0};
      std::memmove(dst.at(row), src.at(row), c.WidthInBytes);
    }
  return CUDA_SUCCESS;
}

CUresult copy(uint8_t shape, CUDA_MEMCPY3D_PEER c, CUstream stream, uint8_t mode) {
  if (!classify(&c.srcMemoryType, &c.srcHost, &c.srcDevice) ||
      !classify(&c.dstMemoryType, &c.dstHost, &c.dstDevice))
    return CUDA_ERROR_INVALID_VALUE;
  const bool src_host = c.srcMemoryType == CU_MEMORYTYPE_HOST;
  const bool dst_host = c.dstMemoryType == CU_MEMORYTYPE_HOST;
  HostSide src{}, dst{};
  if (src_host &&
      !host_side(c.srcHost, c.srcXInBytes, c.srcY, c.srcZ, c.srcPitch, c.srcHeight, c, &src))
    return CUDA_ERROR_INVALID_VALUE;
  if (dst_host &&
      !host_side(c.dstHost, c.dstXInBytes, c.dstY, c.dstZ, c.dstPitch, c.dstHeight, c, &dst))
    return CUDA_ERROR_INVALID_VALUE;
  if (src_host && dst_host) return host_to_host(c, src, dst, stream, mode);
  if (!src_host && !dst_host) {
    // Between device memory and arrays: nothing to answer but errors, which
    // the next synchronizing call collects, as for cuMemcpyDtoD.
    return tell<op::Memcpy3D>(
        request(shape, mode, stream, c, {0, 0, 0, c.WidthInBytes, c.Height, c.Depth}));
  }
  return with_connection([&](Connection& conn) {
    if (!sync_routed_context(&conn)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    return src_host ? from_host(&conn, shape, c, src, stream, mode)
                    : to_host(&conn, shape, c, dst, stream, mode);
  });
}

CUresult copy_2d(uint8_t shape, const CUDA_MEMCPY2D* m, CUstream stream, uint8_t mode) {
  return m ? copy(shape, protocol::as_peer(*m), stream, mode) : CUDA_ERROR_INVALID_VALUE;
}

CUresult copy_3d(const CUDA_MEMCPY3D* m, CUstream stream, uint8_t mode) {
  return m ? copy(protocol::kShape3D, protocol::as_peer(*m), stream, mode)
           : CUDA_ERROR_INVALID_VALUE;
}

CUresult copy_peer(const CUDA_MEMCPY3D_PEER* m, CUstream stream, uint8_t mode) {
  return m ? copy(protocol::kShape3DPeer, *m, stream, mode) : CUDA_ERROR_INVALID_VALUE;
}

// A 1D array copy is one row at a byte offset into the array.
CUresult host_to_array(CUarray dst, size_t offset, const void* src, size_t n, CUstream stream,
                       uint8_t mode) {
  CUDA_MEMCPY3D_PEER c{};
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = src;
  c.srcPitch = n;
  c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  c.dstArray = dst;
  c.dstXInBytes = offset;
  c.WidthInBytes = n;
  c.Height = c.Depth = 1;
  return copy(protocol::kShapeHtoA, c, stream, mode);
}

CUresult array_to_host(void* dst, CUarray src, size_t offset, size_t n, CUstream stream,
                       uint8_t mode) {
  CUDA_MEMCPY3D_PEER c{};
  c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  c.srcArray = src;
  c.srcXInBytes = offset;
  c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.dstHost = dst;
  c.dstPitch = n;
  c.WidthInBytes = n;
  c.Height = c.Depth = 1;
  return copy(protocol::kShapeAtoH, c, stream, mode);
}

constexpr uint8_t k2D = protocol::kShape2D;
constexpr uint8_t k2DUnaligned = protocol::kShape2DUnaligned;

}  // namespace

}  // namespace scuda::client

// The entry points and their per-thread twins are generated (codegen,
// `twins`); these are their bodies.
namespace scuda::client::custom {

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D* p, DefaultStream d) {
  return copy_2d(k2D, p, nullptr, copy_mode(d, kSync));
}

CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D* p, DefaultStream d) {
  return copy_2d(k2DUnaligned, p, nullptr, copy_mode(d, kSync));
}

CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* p, CUstream s, DefaultStream d) {
  return copy_2d(k2D, p, s, copy_mode(d, kAsync));
}

CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D* p, DefaultStream d) {
  return copy_3d(p, nullptr, copy_mode(d, kSync));
}

CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* p, CUstream s, DefaultStream d) {
  return copy_3d(p, s, copy_mode(d, kAsync));
}

CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER* p, DefaultStream d) {
  return copy_peer(p, nullptr, copy_mode(d, kSync));
}

CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER* p, CUstream s, DefaultStream d) {
  return copy_peer(p, s, copy_mode(d, kAsync));
}

CUresult cuMemcpyHtoA_v2(CUarray dst, size_t offset, const void* src, size_t n, DefaultStream d) {
  return host_to_array(dst, offset, src, n, nullptr, copy_mode(d, kSync));
}

CUresult cuMemcpyHtoAAsync_v2(CUarray dst, size_t offset, const void* src, size_t n, CUstream s,
                              DefaultStream d) {
  return host_to_array(dst, offset, src, n, s, copy_mode(d, kAsync));
}

CUresult cuMemcpyAtoH_v2(void* dst, CUarray src, size_t offset, size_t n, DefaultStream d) {
  return array_to_host(dst, src, offset, n, nullptr, copy_mode(d, kSync));
}

CUresult cuMemcpyAtoHAsync_v2(void* dst, CUarray src, size_t offset, size_t n, CUstream s,
                              DefaultStream d) {
  return array_to_host(dst, src, offset, n, s, copy_mode(d, kAsync));
}

}  // namespace scuda::client::custom
