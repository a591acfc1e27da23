// Kernel launches. Arguments arrive packed in the kernel's own layout and go
// to the driver as one parameter buffer (CU_LAUNCH_PARAM_BUFFER_POINTER).
#include <string>
#include <utility>
#include <vector>

#include "protocol/op_layouts.h"
#include "server/kernels/launch_attributes.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "server/session/typed_handler.h"

namespace scuda::server {

namespace {

namespace op = protocol::op;
using protocol::Reader;
using protocol::Writer;

// A launch configuration for the driver: the function, the CUlaunchConfig
// and the attributes it points to.
struct Config {
  CUfunction fn = nullptr;
  CUlaunchConfig launch{};
  bool per_thread = false;
  std::vector<CUlaunchAttribute> attrs;
};

// The configuration's handles and attributes, translated for the driver.
CUresult resolve_config(Session& s, op::LaunchConfig& q, Config* c) {
  void* fn = nullptr;
  void* stream = nullptr;
  if (!s.handles().resolve(q.function, HandleKind::CUfunction, &fn) || !fn)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!s.handles().resolve(q.stream, HandleKind::CUstream, &stream))
    return CUDA_ERROR_INVALID_HANDLE;
  for (CUlaunchAttribute& a : q.attributes) {
    const CUresult rc = translate_attribute(s, &a, AttributeUse::kLaunch);
    if (rc != CUDA_SUCCESS) return rc;
  }
  c->fn = static_cast<CUfunction>(fn);
  c->per_thread = q.mode & protocol::kCopyPerThread;
  c->attrs = std::move(q.attributes);
  CUlaunchConfig& l = c->launch;
  l.gridDimX = q.dims[0], l.gridDimY = q.dims[1], l.gridDimZ = q.dims[2];
  l.blockDimX = q.dims[3], l.blockDimY = q.dims[4], l.blockDimZ = q.dims[5];
  l.sharedMemBytes = q.shared_memory;
  l.hStream = static_cast<CUstream>(stream);
  l.attrs = c->attrs.data();
  l.numAttrs = static_cast<unsigned>(c->attrs.size());
  return CUDA_SUCCESS;
}

CUresult launch(Session& s, Reader& in, Writer&) {
  op::LaunchConfig q;
  protocol::read_fields(in, q);
  std::string buffer(in.blob());
  if (!in.done() || q.attributes.size() > protocol::kMaxLaunchAttributes) return kMalformed;
  Config c;
  if (CUresult rc = resolve_config(s, q, &c); rc != CUDA_SUCCESS) return rc;
  size_t size = buffer.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &size, CU_LAUNCH_PARAM_END};
  const DriverTable& d = s.driver();
  auto launch_ex = c.per_thread ? d.cuLaunchKernelEx_ptsz : d.cuLaunchKernelEx;
  if (!launch_ex) return CUDA_ERROR_NOT_SUPPORTED;
  return launch_ex(&c.launch, c.fn, nullptr, size ? extra : nullptr);
}

CUresult occupancy_clusters(Session& s, const op::OccupancyClusters::Request& request,
                            op::OccupancyClusters::Reply* reply) {
  if (request.which > 1 || request.config.attributes.size() > protocol::kMaxLaunchAttributes)
    return CUDA_ERROR_INVALID_VALUE;
  op::LaunchConfig q = request.config;
  Config c;
  if (CUresult rc = resolve_config(s, q, &c); rc != CUDA_SUCCESS) return rc;
  const DriverTable& d = s.driver();
  auto query =
      request.which == 0 ? d.cuOccupancyMaxActiveClusters : d.cuOccupancyMaxPotentialClusterSize;
  if (!query) return CUDA_ERROR_NOT_SUPPORTED;
  return query(&reply->value, c.fn, &c.launch);
}

const HandlerEntry kHandlers[] = {
    {op::Launch::kOp, launch},
    typed_entry<op::OccupancyClusters, occupancy_clusters>(),
};

}  // namespace

std::span<const HandlerEntry> launch_handlers() { return kHandlers; }

}  // namespace scuda::server
