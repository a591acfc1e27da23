#include "server/kernels/param_layout.h"

namespace scuda::server {

namespace {

// Upper bound on parameters we ask the driver about (CUDA allows 32 KiB of
// parameters, so at most 32768 one-byte ones).
constexpr size_t kMaxParams = 32768;

// The driver answers an index past the last parameter with
// CUDA_ERROR_INVALID_VALUE; any other failure means it cannot tell.
template <class H>
std::optional<ParamLayout> layout(CUresult (*get_info)(H, size_t, size_t*, size_t*), H handle) {
  ParamLayout slots;
  for (size_t i = 0; get_info && i < kMaxParams; ++i) {
    size_t offset = 0, size = 0;
    const CUresult rc = get_info(handle, i, &offset, &size);
    if (rc == CUDA_ERROR_INVALID_VALUE) break;
    if (rc != CUDA_SUCCESS) return std::nullopt;
    slots.push_back({offset, size});
  }
  return slots;
}

}  // namespace

std::optional<ParamLayout> function_layout(const DriverTable& d, CUfunction fn) {
  return layout(d.cuFuncGetParamInfo, fn);
}

std::optional<ParamLayout> kernel_layout(const DriverTable& d, CUkernel kernel) {
  return layout(d.cuKernelGetParamInfo, kernel);
}

}  // namespace scuda::server
