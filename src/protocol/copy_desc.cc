#include "protocol/copy_desc.h"

#include <tuple>
#include <type_traits>

namespace scuda::protocol {

namespace {

// Each side's fields, in wire order; every field travels as a u64.
template <class C>
auto src_of(C& c) {
  return std::tie(c.srcMemoryType, c.srcXInBytes, c.srcY, c.srcZ, c.srcLOD, c.srcPitch, c.srcHeight,
                  c.srcDevice, c.srcArray, c.srcContext);
}

template <class C>
auto dst_of(C& c) {
  return std::tie(c.dstMemoryType, c.dstXInBytes, c.dstY, c.dstZ, c.dstLOD, c.dstPitch, c.dstHeight,
                  c.dstDevice, c.dstArray, c.dstContext);
}

template <class C>
auto extent_of(C& c) {
  return std::tie(c.WidthInBytes, c.Height, c.Depth);
}

template <class T>
void put_field(Writer& w, T v) {
  if constexpr (std::is_pointer_v<T>) w.u64(reinterpret_cast<uintptr_t>(v));
  else w.u64(static_cast<uint64_t>(v));
}

template <class T>
void get_field(Reader& r, T& v) {
  const uint64_t raw = r.u64();
  if constexpr (std::is_pointer_v<T>) v = reinterpret_cast<T>(static_cast<uintptr_t>(raw));
  else v = static_cast<T>(raw);
}

// The fields every shape has.
template <class From, class To>
void copy_2d_fields(const From& a, To* b) {
  b->srcXInBytes = a.srcXInBytes;
  b->srcY = a.srcY;
  b->srcMemoryType = a.srcMemoryType;
  b->srcHost = a.srcHost;
  b->srcDevice = a.srcDevice;
  b->srcArray = a.srcArray;
  b->srcPitch = a.srcPitch;
  b->dstXInBytes = a.dstXInBytes;
  b->dstY = a.dstY;
  b->dstMemoryType = a.dstMemoryType;
  b->dstHost = a.dstHost;
  b->dstDevice = a.dstDevice;
  b->dstArray = a.dstArray;
  b->dstPitch = a.dstPitch;
  b->WidthInBytes = a.WidthInBytes;
  b->Height = a.Height;
}

// And those the 3D shapes add.
template <class From, class To>
void copy_3d_fields(const From& a, To* b) {
  copy_2d_fields(a, b);
  b->srcZ = a.srcZ;
  b->srcLOD = a.srcLOD;
  b->srcHeight = a.srcHeight;
  b->dstZ = a.dstZ;
  b->dstLOD = a.dstLOD;
  b->dstHeight = a.dstHeight;
  b->Depth = a.Depth;
}

}  // namespace

CUDA_MEMCPY3D_PEER as_peer(const CUDA_MEMCPY2D& m) {
  CUDA_MEMCPY3D_PEER c{};
  copy_2d_fields(m, &c);
  c.Depth = 1;
  return c;
}

CUDA_MEMCPY3D_PEER as_peer(const CUDA_MEMCPY3D& m) {
  CUDA_MEMCPY3D_PEER c{};
  copy_3d_fields(m, &c);
  return c;
}

CUDA_MEMCPY2D as_2d(const CUDA_MEMCPY3D_PEER& c) {
  CUDA_MEMCPY2D m{};
  copy_2d_fields(c, &m);
  return m;
}

CUDA_MEMCPY3D as_3d(const CUDA_MEMCPY3D_PEER& c) {
  CUDA_MEMCPY3D m{};
  copy_3d_fields(c, &m);
  return m;
}

void write_copy_desc(Writer& w, const CUDA_MEMCPY3D_PEER& c) {
  auto put_all = [&w](const auto&... f) { (put_field(w, f), ...); };
  std::apply(put_all, src_of(c));
  std::apply(put_all, dst_of(c));
  std::apply(put_all, extent_of(c));
}

void read_copy_desc(Reader& r, CUDA_MEMCPY3D_PEER* c) {
  *c = {};
  auto get_all = [&r](auto&... f) { (get_field(r, f), ...); };
  std::apply(get_all, src_of(*c));
  std::apply(get_all, dst_of(*c));
  std::apply(get_all, extent_of(*c));
}

}  // namespace scuda::protocol
