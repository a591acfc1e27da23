// Batched copies and prefetches (cuMemcpyBatchAsync, cuMemcpy3DBatchAsync,
// cuMemPrefetchBatchAsync and cuMemDiscardAndPrefetchBatchAsync): each
// operation is issued on the
// stream as its single form, in order. The driver may run a batch's
// operations in any order, so stream order is one it allows; and the single
// forms already know which addresses are this machine's host memory, which
// a batch may name in any entry. A batch of discards is forwarded whole.
#include <cuda.h>

#include <cstddef>
#include <vector>

#include "client/managed/coherent_pages.h"
#include "client/memory/memory.h"
#include "client/runtime.h"
#include "custom.h"
#include "forward.h"

extern "C" {
CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr, CUdeviceptr, size_t, CUstream);
CUresult CUDAAPI cuMemPrefetchAsync_v2_ptsz(CUdeviceptr, size_t, CUmemLocation, unsigned int,
                                            CUstream);
CUresult CUDAAPI cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D*, CUstream);
}

namespace {

// The per-thread forms take stream 0 as the thread's stream; the others as
// the legacy stream, which batches refuse.
bool usable_stream(CUstream stream, bool per_thread) {
  return stream != CU_STREAM_LEGACY && (per_thread || stream != nullptr);
}

// A batch names its operations' attributes in groups: group k applies from
// operation first[k] up to the next group's first. The firsts start at 0,
// rise, and stay below `count`; there are at most `count` groups.
bool valid_groups(const size_t* first, size_t groups, size_t count) {
  if (first == nullptr || groups == 0 || groups > count || first[0] != 0) return false;
  for (size_t k = 1; k < groups; ++k)
    if (first[k] <= first[k - 1] || first[k] >= count) return false;
  return true;
}

// Calls op(i, k) for each operation i with its group k, stopping at the
// first error.
template <class Op>
CUresult each_in_groups(const size_t* first, size_t groups, size_t count, Op op) {
  size_t k = 0;
  for (size_t i = 0; i < count; ++i) {
    while (k + 1 < groups && first[k + 1] <= i) ++k;
    if (CUresult rc = op(i, k); rc != CUDA_SUCCESS) return rc;
  }
  return CUDA_SUCCESS;
}

CUresult copy_batch(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                    CUmemcpyAttributes* attrs, size_t* attrs_idxs, size_t num_attrs,
                    CUstream stream, bool per_thread) {
  if (count == 0 || !dsts || !srcs || !sizes || !attrs || !usable_stream(stream, per_thread) ||
      !valid_groups(attrs_idxs, num_attrs, count))
    return CUDA_ERROR_INVALID_VALUE;
  auto copy = per_thread ? cuMemcpyAsync_ptsz : cuMemcpyAsync;
  // Every order of source access (stream, during the call, any) is met: the
  // single copy reads host memory while it is called, in stream order.
  return each_in_groups(attrs_idxs, num_attrs, count,
                        [&](size_t i, size_t) { return copy(dsts[i], srcs[i], sizes[i], stream); });
}

// One side of a 3D copy as cuMemcpy3D names it. A pointer is unified (the
// single copy tells host from device memory); a row length or layer height
// of zero packs that side tightly.
void describe(const CUmemcpy3DOperand& op, const CUextent3D& extent, size_t element,
              CUmemorytype* type, CUdeviceptr* ptr, CUarray* array, size_t* x, size_t* y, size_t* z,
              size_t* pitch, size_t* height) {
  if (op.type == CU_MEMCPY_OPERAND_TYPE_ARRAY) {
    *type = CU_MEMORYTYPE_ARRAY;
    *array = op.op.array.array;
    *x = op.op.array.offset.x * element;
    *y = op.op.array.offset.y;
    *z = op.op.array.offset.z;
    return;
  }
  *type = CU_MEMORYTYPE_UNIFIED;
  *ptr = op.op.ptr.ptr;
  *pitch = (op.op.ptr.rowLength ? op.op.ptr.rowLength : extent.width) * element;
  *height = op.op.ptr.layerHeight ? op.op.ptr.layerHeight : extent.height;
}

bool valid_operand(const CUmemcpy3DOperand& op, const CUextent3D& extent) {
  if (op.type == CU_MEMCPY_OPERAND_TYPE_ARRAY) return op.op.array.array != nullptr;
  if (op.type != CU_MEMCPY_OPERAND_TYPE_POINTER) return false;
  return (op.op.ptr.rowLength == 0 || op.op.ptr.rowLength >= extent.width) &&
         (op.op.ptr.layerHeight == 0 || op.op.ptr.layerHeight >= extent.height);
}

// Elements are bytes between pointers, else the array's elements, which
// two arrays must share.
size_t element_size(const CUDA_MEMCPY3D_BATCH_OP& op) {
  const bool src_array = op.src.type == CU_MEMCPY_OPERAND_TYPE_ARRAY;
  const bool dst_array = op.dst.type == CU_MEMCPY_OPERAND_TYPE_ARRAY;
  const size_t src = src_array ? scuda::client::array_element_bytes(op.src.op.array.array) : 1;
  const size_t dst = dst_array ? scuda::client::array_element_bytes(op.dst.op.array.array) : 1;
  if (src_array && dst_array && src != dst) return 0;
  return src_array ? src : dst;
}

// The batch entry as the cuMemcpy3D that does the same; false when it is
// malformed.
bool as_copy_3d(const CUDA_MEMCPY3D_BATCH_OP& op, CUDA_MEMCPY3D* c) {
  const CUextent3D& e = op.extent;
  if (e.width == 0 || e.height == 0 || e.depth == 0 || !valid_operand(op.src, e) ||
      !valid_operand(op.dst, e) || op.srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_INVALID ||
      op.srcAccessOrder >= CU_MEMCPY_SRC_ACCESS_ORDER_MAX)
    return false;
  const size_t element = element_size(op);
  if (element == 0) return false;
  *c = CUDA_MEMCPY3D{};
  describe(op.src, e, element, &c->srcMemoryType, &c->srcDevice, &c->srcArray, &c->srcXInBytes,
           &c->srcY, &c->srcZ, &c->srcPitch, &c->srcHeight);
  describe(op.dst, e, element, &c->dstMemoryType, &c->dstDevice, &c->dstArray, &c->dstXInBytes,
           &c->dstY, &c->dstZ, &c->dstPitch, &c->dstHeight);
  c->WidthInBytes = e.width * element;
  c->Height = e.height;
  c->Depth = e.depth;
  return true;
}

// Every entry is checked before the first is issued, as the driver
// refuses a malformed batch whole.
CUresult copy_3d_batch(size_t count, CUDA_MEMCPY3D_BATCH_OP* ops, unsigned long long flags,
                       CUstream stream, bool per_thread) {
  if (count == 0 || !ops || flags != 0 || !usable_stream(stream, per_thread))
    return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUDA_MEMCPY3D> copies(count);
  for (size_t i = 0; i < count; ++i)
    if (!as_copy_3d(ops[i], &copies[i])) return CUDA_ERROR_INVALID_VALUE;
  auto copy = per_thread ? cuMemcpy3DAsync_v2_ptsz : cuMemcpy3DAsync_v2;
  for (const CUDA_MEMCPY3D& c : copies)
    if (CUresult rc = copy(&c, stream); rc != CUDA_SUCCESS) return rc;
  return CUDA_SUCCESS;
}

CUresult prefetch_batch(CUdeviceptr* dptrs, size_t* sizes, size_t count, CUmemLocation* locs,
                        size_t* loc_idxs, size_t num_locs, unsigned long long flags,
                        CUstream stream, bool per_thread) {
  if (count == 0 || !dptrs || !sizes || !locs || flags != 0 || !usable_stream(stream, per_thread) ||
      !valid_groups(loc_idxs, num_locs, count))
    return CUDA_ERROR_INVALID_VALUE;
  auto prefetch = per_thread ? cuMemPrefetchAsync_v2_ptsz : cuMemPrefetchAsync_v2;
  return each_in_groups(loc_idxs, num_locs, count, [&](size_t i, size_t k) {
    return prefetch(dptrs[i], sizes[i], locs[k], 0, stream);
  });
}

// The discarded ranges' contents are undefined from now on: the host's
// copies of them go, so that a later read fetches the device's.
CUresult discard_batch(CUdeviceptr* dptrs, size_t* sizes, size_t count, unsigned long long flags,
                       CUstream stream, bool per_thread) {
  if (count == 0 || !dptrs || !sizes || flags != 0 || !usable_stream(stream, per_thread))
    return CUDA_ERROR_INVALID_VALUE;
  const CUresult rc =
      per_thread
          ? scuda::client::forward::cuMemDiscardBatchAsync_ptsz(dptrs, sizes, count, flags, stream)
          : scuda::client::forward::cuMemDiscardBatchAsync(dptrs, sizes, count, flags, stream);
  if (rc == CUDA_SUCCESS)
    for (size_t i = 0; i < count; ++i) scuda::client::coherence::device_wrote(dptrs[i], sizes[i]);
  return rc;
}

}  // namespace

// The entry points and their per-thread twins are generated (codegen,
// `twins`); these are their bodies.
namespace scuda::client::custom {

CUresult cuMemDiscardBatchAsync(CUdeviceptr* dptrs, size_t* sizes, size_t count,
                                unsigned long long flags, CUstream stream, DefaultStream d) {
  return discard_batch(dptrs, sizes, count, flags, stream, per_thread(d));
}

CUresult cuMemcpyBatchAsync_v2(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                               CUmemcpyAttributes* attrs, size_t* attrs_idxs, size_t num_attrs,
                               CUstream stream, DefaultStream d) {
  return copy_batch(dsts, srcs, sizes, count, attrs, attrs_idxs, num_attrs, stream, per_thread(d));
}

CUresult cuMemcpy3DBatchAsync_v2(size_t count, CUDA_MEMCPY3D_BATCH_OP* ops,
                                 unsigned long long flags, CUstream stream, DefaultStream d) {
  return copy_3d_batch(count, ops, flags, stream, per_thread(d));
}

CUresult cuMemPrefetchBatchAsync(CUdeviceptr* dptrs, size_t* sizes, size_t count,
                                 CUmemLocation* locs, size_t* loc_idxs, size_t num_locs,
                                 unsigned long long flags, CUstream stream, DefaultStream d) {
  return prefetch_batch(dptrs, sizes, count, locs, loc_idxs, num_locs, flags, stream,
                        per_thread(d));
}

// A discard leaves the ranges' contents undefined, which keeping them is one
// way of; the prefetch is what the program waits on.
CUresult cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr* dptrs, size_t* sizes, size_t count,
                                           CUmemLocation* locs, size_t* loc_idxs, size_t num_locs,
                                           unsigned long long flags, CUstream stream,
                                           DefaultStream d) {
  return prefetch_batch(dptrs, sizes, count, locs, loc_idxs, num_locs, flags, stream,
                        per_thread(d));
}

}  // namespace scuda::client::custom
