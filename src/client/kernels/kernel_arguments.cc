#include "client/kernels/kernel_arguments.h"

#include <algorithm>
#include <cstring>

#include "client/kernels/descriptions.h"
#include "client/memory/host_memory.h"

namespace scuda::client {

namespace {

// Packs straight into the request: launches are the hot path.
CUresult pack_kernel_params(const Layout& layout, void** params, protocol::Writer& w) {
  size_t end = 0;
  for (const protocol::ParamSlot& s : layout) end = std::max<size_t>(end, s.offset + s.size);
  w.u64(end);
  std::vector<uint8_t>& buf = w.data();
  const size_t base = buf.size();
  buf.resize(base + end);
  for (size_t i = 0; i < layout.size(); ++i) {
    if (!params[i]) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(buf.data() + base + layout[i].offset, params[i], layout[i].size);
  }
  mirror_argument_pointers(buf.data() + base, end);
  return CUDA_SUCCESS;
}

CUresult pack_extra(void** extra, protocol::Writer& w) {
  const void* pointer = nullptr;
  const size_t* size = nullptr;
  for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) pointer = extra[i + 1];
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
      size = static_cast<const size_t*>(extra[i + 1]);
    else return CUDA_ERROR_INVALID_VALUE;
  }
  if (!pointer || !size) return CUDA_ERROR_INVALID_VALUE;
  w.blob(pointer, *size);  // the request's copy, which the mirrors may rewrite
  mirror_argument_pointers(w.data().data() + w.size() - *size, *size);
  return CUDA_SUCCESS;
}

}  // namespace

CUresult pack_arguments(uint64_t fn_id, void** params, void** extra, protocol::Writer& w) {
  std::shared_ptr<const Layout> layout;
  if (CUresult rc = layout_of(fn_id, &layout); rc != CUDA_SUCCESS) return rc;
  if (params) return pack_kernel_params(*layout, params, w);
  if (extra) return pack_extra(extra, w);
  if (!layout->empty()) return CUDA_ERROR_INVALID_VALUE;
  w.u64(0);
  return CUDA_SUCCESS;
}

}  // namespace scuda::client
