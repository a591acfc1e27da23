// Hand-written module and library requests. Functions and kernels come back
// with their parameter layout, so the client can pack launch arguments
// without asking again.
#include <string>

#include "protocol/ops.h"
#include "server/dispatch.h"
#include "server/session.h"

namespace scuda::server {

namespace {

using protocol::Reader;
using protocol::Writer;

// Upper bound on parameters we ask the driver about (CUDA allows 32 KiB of
// parameters, so at most 32768 one-byte ones).
constexpr size_t kMaxParams = 32768;

template <class GetInfo>
void write_layout(GetInfo get_info, Writer& out) {
  std::vector<protocol::ParamSlot> slots;
  for (size_t i = 0; i < kMaxParams; ++i) {
    size_t offset = 0, size = 0;
    if (get_info(i, &offset, &size) != CUDA_SUCCESS) break;
    slots.push_back({offset, size});
  }
  out.u32(static_cast<uint32_t>(slots.size()));
  for (const protocol::ParamSlot& slot : slots) out.put(slot);
}

CUresult module_load(Session& s, Reader& in, Writer& out) {
  const uint64_t proposed = in.u64();
  const std::string image(in.blob());  // a copy: PTX must end in NUL
  if (!in.done()) return kMalformed;
  if (!s.handles().can_bind(proposed)) return CUDA_ERROR_INVALID_VALUE;
  CUmodule mod = nullptr;
  CUresult rc = s.driver().cuModuleLoadData(&mod, image.c_str());
  if (rc == CUDA_SUCCESS) out.u64(s.handles().bind(proposed, HandleKind::CUmodule, mod));
  return rc;
}

CUresult library_load(Session& s, Reader& in, Writer& out) {
  const uint64_t proposed = in.u64();
  const std::string image(in.blob());
  if (!in.done()) return kMalformed;
  if (!s.handles().can_bind(proposed)) return CUDA_ERROR_INVALID_VALUE;
  if (!s.driver().cuLibraryLoadData) return CUDA_ERROR_NOT_SUPPORTED;
  CUlibrary lib = nullptr;
  CUresult rc = s.driver().cuLibraryLoadData(&lib, image.c_str(), nullptr, nullptr, 0, nullptr,
                                             nullptr, 0);
  if (rc == CUDA_SUCCESS) out.u64(s.handles().bind(proposed, HandleKind::CUlibrary, lib));
  return rc;
}

CUresult module_get_function(Session& s, Reader& in, Writer& out) {
  const uint64_t proposed = in.u64();
  const uint64_t module_id = in.u64();
  const std::string name = in.str();
  if (!in.done()) return kMalformed;
  void* mod = nullptr;
  if (!s.handles().resolve(module_id, HandleKind::CUmodule, &mod) || !mod)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!s.handles().can_bind(proposed)) return CUDA_ERROR_INVALID_VALUE;
  const DriverTable& d = s.driver();
  CUfunction fn = nullptr;
  CUresult rc = d.cuModuleGetFunction(&fn, static_cast<CUmodule>(mod), name.c_str());
  if (rc != CUDA_SUCCESS) return rc;
  out.u64(s.handles().bind(proposed, HandleKind::CUfunction, fn));
  write_layout([&](size_t i, size_t* off, size_t* size) {
    return d.cuFuncGetParamInfo ? d.cuFuncGetParamInfo(fn, i, off, size) : CUDA_ERROR_NOT_SUPPORTED;
  }, out);
  return CUDA_SUCCESS;
}

CUresult library_get_kernel(Session& s, Reader& in, Writer& out) {
  const uint64_t proposed = in.u64();
  const uint64_t library_id = in.u64();
  const std::string name = in.str();
  if (!in.done()) return kMalformed;
  void* lib = nullptr;
  if (!s.handles().resolve(library_id, HandleKind::CUlibrary, &lib) || !lib)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!s.handles().can_bind(proposed)) return CUDA_ERROR_INVALID_VALUE;
  const DriverTable& d = s.driver();
  if (!d.cuLibraryGetKernel) return CUDA_ERROR_NOT_SUPPORTED;
  CUkernel kernel = nullptr;
  CUresult rc = d.cuLibraryGetKernel(&kernel, static_cast<CUlibrary>(lib), name.c_str());
  if (rc != CUDA_SUCCESS) return rc;
  out.u64(s.handles().bind(proposed, HandleKind::CUkernel, kernel));
  write_layout([&](size_t i, size_t* off, size_t* size) {
    return d.cuKernelGetParamInfo ? d.cuKernelGetParamInfo(kernel, i, off, size)
                                  : CUDA_ERROR_NOT_SUPPORTED;
  }, out);
  return CUDA_SUCCESS;
}

CUresult kernel_get_function(Session& s, Reader& in, Writer& out) {
  const uint64_t proposed = in.u64();
  const uint64_t kernel_id = in.u64();
  if (!in.done()) return kMalformed;
  void* kernel = nullptr;
  if (!s.handles().resolve(kernel_id, HandleKind::CUkernel, &kernel) || !kernel)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!s.handles().can_bind(proposed)) return CUDA_ERROR_INVALID_VALUE;
  if (!s.driver().cuKernelGetFunction) return CUDA_ERROR_NOT_SUPPORTED;
  CUfunction fn = nullptr;
  CUresult rc = s.driver().cuKernelGetFunction(&fn, static_cast<CUkernel>(kernel));
  if (rc == CUDA_SUCCESS) out.u64(s.handles().bind(proposed, HandleKind::CUfunction, fn));
  return rc;
}

const HandlerEntry kHandlers[] = {
    {protocol::kOpModuleLoad, module_load, "module-load"},
    {protocol::kOpLibraryLoad, library_load, "library-load"},
    {protocol::kOpModuleGetFunction, module_get_function, "module-get-function"},
    {protocol::kOpLibraryGetKernel, library_get_kernel, "library-get-kernel"},
    {protocol::kOpKernelGetFunction, kernel_get_function, "kernel-get-function"},
};

}  // namespace

std::span<const HandlerEntry> module_handlers() { return kHandlers; }

}  // namespace scuda::server
