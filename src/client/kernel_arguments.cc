#include "client/kernel_arguments.h"

#include <algorithm>
#include <cstring>

#include "client/layouts.h"

namespace scuda::client {

namespace {

CUresult pack_kernel_params(const Layout& layout, void** params, std::string* buf) {
  size_t end = 0;
  for (const protocol::ParamSlot& s : layout) end = std::max<size_t>(end, s.offset + s.size);
  buf->assign(end, '\0');
  for (size_t i = 0; i < layout.size(); ++i) {
    if (!params[i]) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(buf->data() + layout[i].offset, params[i], layout[i].size);
  }
  return CUDA_SUCCESS;
}

CUresult pack_extra(void** extra, std::string* buf) {
  const void* pointer = nullptr;
  const size_t* size = nullptr;
  for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) pointer = extra[i + 1];
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) size = static_cast<const size_t*>(extra[i + 1]);
    else return CUDA_ERROR_INVALID_VALUE;
  }
  if (!pointer || !size) return CUDA_ERROR_INVALID_VALUE;
  buf->assign(static_cast<const char*>(pointer), *size);
  return CUDA_SUCCESS;
}

}  // namespace

CUresult pack_arguments(uint64_t fn_id, void** params, void** extra, std::string* buf) {
  Layout layout;
  if (!find_layout(fn_id, &layout)) return CUDA_ERROR_INVALID_HANDLE;
  if (params) return pack_kernel_params(layout, params, buf);
  if (extra) return pack_extra(extra, buf);
  return layout.empty() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace scuda::client
