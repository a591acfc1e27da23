// CUDA arrays: host buffers of packed rows (state.h Array).
#include <cuda.h>

#include <memory>

#include "common/array_formats.h"
#include "state.h"

using namespace scuda_double;

namespace {

CUresult create(CUarray* handle, const CUDA_ARRAY3D_DESCRIPTOR* desc) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (handle == nullptr || desc == nullptr || desc->Width == 0) return CUDA_ERROR_INVALID_VALUE;
  const size_t element = scuda::format_element_bytes(desc->Format, desc->NumChannels);
  if (element == 0 || (desc->Depth && !desc->Height)) return CUDA_ERROR_INVALID_VALUE;
  auto array = std::make_unique<Array>();
  array->ctx = call.ctx_id;
  array->desc = *desc;
  array->element = element;
  const size_t size = array->row() * array->rows() * array->slices();
  if (size > total_memory()) return CUDA_ERROR_OUT_OF_MEMORY;
  array->bytes.assign(size, 0);
  *handle = as_handle<CUarray>(state().arrays.add(std::move(array)));
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuArrayCreate_v2(CUarray* handle, const CUDA_ARRAY_DESCRIPTOR* desc) {
  if (desc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUDA_ARRAY3D_DESCRIPTOR d{};
  d.Width = desc->Width;
  d.Height = desc->Height;
  d.Format = desc->Format;
  d.NumChannels = desc->NumChannels;
  return create(handle, &d);
}

CUresult cuArray3DCreate_v2(CUarray* handle, const CUDA_ARRAY3D_DESCRIPTOR* desc) {
  return create(handle, desc);
}

CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR* desc, CUarray handle) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  const Array* array = state().arrays.find(handle);
  if (array == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (desc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *desc = array->desc;
  return CUDA_SUCCESS;
}

CUresult cuArrayDestroy(CUarray handle) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  return state().arrays.erase(handle) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

}  // extern "C"
