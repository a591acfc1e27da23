// Kernel launches. Arguments arrive packed in the kernel's own layout and go
// to the driver as one parameter buffer (CU_LAUNCH_PARAM_BUFFER_POINTER).
#include <vector>

#include "protocol/ops.h"
#include "server/dispatch.h"
#include "server/session.h"

namespace scuda::server {

namespace {

using protocol::Reader;
using protocol::Writer;

constexpr uint32_t kMaxAttributes = 64;

// Launch attributes are plain values except the two that name an event,
// which must be translated like any other handle.
CUresult translate_attribute(Session& s, CUlaunchAttribute* a) {
  switch (a->id) {
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
    case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT: {
      CUevent* event = a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT
                           ? &a->value.programmaticEvent.event
                           : &a->value.launchCompletionEvent.event;
      void* real = nullptr;
      if (!s.handles().resolve(reinterpret_cast<uintptr_t>(*event), HandleKind::CUevent, &real))
        return CUDA_ERROR_INVALID_HANDLE;
      *event = static_cast<CUevent>(real);
      return CUDA_SUCCESS;
    }
    case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
      return CUDA_ERROR_NOT_SUPPORTED;  // graph nodes only
    default:
      return CUDA_SUCCESS;
  }
}

CUresult launch(Session& s, Reader& in, Writer&) {
  const uint64_t fn_id = in.u64();
  CUlaunchConfig config{};
  config.gridDimX = in.u32();
  config.gridDimY = in.u32();
  config.gridDimZ = in.u32();
  config.blockDimX = in.u32();
  config.blockDimY = in.u32();
  config.blockDimZ = in.u32();
  config.sharedMemBytes = in.u32();
  const uint64_t stream_id = in.u64();
  const bool per_thread = in.u8() & protocol::kCopyPerThread;
  const uint32_t attr_count = in.u32();
  if (attr_count > kMaxAttributes) return kMalformed;
  std::vector<CUlaunchAttribute> attrs(attr_count);
  for (CUlaunchAttribute& a : attrs) a = in.get<CUlaunchAttribute>();
  std::string_view params = in.blob();
  if (!in.done()) return kMalformed;

  void* fn = nullptr;
  void* stream = nullptr;
  if (!s.handles().resolve(fn_id, HandleKind::CUfunction, &fn) || !fn)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!s.handles().resolve(stream_id, HandleKind::CUstream, &stream))
    return CUDA_ERROR_INVALID_HANDLE;
  for (CUlaunchAttribute& a : attrs)
    if (CUresult rc = translate_attribute(s, &a); rc != CUDA_SUCCESS) return rc;
  config.hStream = static_cast<CUstream>(stream);
  config.attrs = attrs.data();
  config.numAttrs = attr_count;

  std::string buffer(params);
  size_t size = buffer.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &size, CU_LAUNCH_PARAM_END};
  const DriverTable& d = s.driver();
  auto launch_ex = per_thread ? d.cuLaunchKernelEx_ptsz : d.cuLaunchKernelEx;
  if (!launch_ex) return CUDA_ERROR_NOT_SUPPORTED;
  return launch_ex(&config, static_cast<CUfunction>(fn), nullptr, size ? extra : nullptr);
}

const HandlerEntry kHandlers[] = {
    {protocol::kOpLaunch, launch, "launch"},
};

}  // namespace

std::span<const HandlerEntry> launch_handlers() { return kHandlers; }

}  // namespace scuda::server
