#include "protocol/copy_desc.h"

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

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

// A field's value as another field's type: pointers and handles as their
// address, enums and sizes as numbers.
template <class To, class From>
To convert(From v) {
  if constexpr (std::is_pointer_v<From>) return static_cast<To>(reinterpret_cast<uintptr_t>(v));
  else if constexpr (std::is_pointer_v<To>) return reinterpret_cast<To>(static_cast<uintptr_t>(v));
  else return static_cast<To>(v);
}

// Assigns each of `from`'s fields to the same place of `to` (both std::tie
// tuples of as many fields).
template <class From, class To>
void assign_all(const From& from, To to) {
  [&]<size_t... I>(std::index_sequence<I...>) {
    ((std::get<I>(to) =
          convert<std::remove_reference_t<std::tuple_element_t<I, To>>>(std::get<I>(from))),
     ...);
  }
  (std::make_index_sequence<std::tuple_size_v<To>>{});
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

CopyDesc to_desc(const CUDA_MEMCPY3D_PEER& c) {
  CopyDesc d;
  assign_all(src_of(c), d.src.fields());
  assign_all(dst_of(c), d.dst.fields());
  assign_all(extent_of(c), std::tie(d.width, d.height, d.depth));
  return d;
}

CUDA_MEMCPY3D_PEER from_desc(const CopyDesc& d) {
  CUDA_MEMCPY3D_PEER c{};
  CopyDesc wire = d;  // fields() is not const
  assign_all(wire.src.fields(), src_of(c));
  assign_all(wire.dst.fields(), dst_of(c));
  assign_all(std::tie(wire.width, wire.height, wire.depth), extent_of(c));
  return c;
}

}  // namespace scuda::protocol
