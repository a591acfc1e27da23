#include "server/param_layout.h"

namespace scuda::server {

namespace {

// Upper bound on parameters we ask the driver about (CUDA allows 32 KiB of
// parameters, so at most 32768 one-byte ones).
constexpr size_t kMaxParams = 32768;

template <class H>
ParamLayout layout(CUresult (*get_info)(H, size_t, size_t*, size_t*), H handle) {
  ParamLayout slots;
  for (size_t i = 0; get_info && i < kMaxParams; ++i) {
    size_t offset = 0, size = 0;
    if (get_info(handle, i, &offset, &size) != CUDA_SUCCESS) break;
    slots.push_back({offset, size});
  }
  return slots;
}

}  // namespace

ParamLayout function_layout(const DriverTable& d, CUfunction fn) {
  return layout(d.cuFuncGetParamInfo, fn);
}

ParamLayout kernel_layout(const DriverTable& d, CUkernel kernel) {
  return layout(d.cuKernelGetParamInfo, kernel);
}

void write_layout(const ParamLayout& layout, protocol::Writer& out) {
  out.u32(static_cast<uint32_t>(layout.size()));
  for (const protocol::ParamSlot& slot : layout) out.put(slot);
}

}  // namespace scuda::server
