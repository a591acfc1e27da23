// Kernel launches. Arguments arrive packed in the kernel's own layout and go
// to the driver as one parameter buffer (CU_LAUNCH_PARAM_BUFFER_POINTER).
#include <string>
#include <vector>

#include "protocol/ops.h"
#include "server/dispatch.h"
#include "server/launch_attributes.h"
#include "server/session.h"

namespace scuda::server {

namespace {

using protocol::Reader;
using protocol::Writer;

constexpr uint32_t kMaxAttributes = 64;

// A launch configuration as the client encodes it (launch.cc): function,
// dimensions, stream, mode and attributes. The attributes live in `attrs`.
struct Config {
  CUfunction fn = nullptr;
  CUlaunchConfig launch{};
  bool per_thread = false;
  std::vector<CUlaunchAttribute> attrs;
};

CUresult read_config(Session& s, Reader& in, Config* c) {
  const uint64_t fn_id = in.u64();
  CUlaunchConfig& l = c->launch;
  for (unsigned* v : {&l.gridDimX, &l.gridDimY, &l.gridDimZ, &l.blockDimX, &l.blockDimY,
                      &l.blockDimZ, &l.sharedMemBytes})
    *v = in.u32();
  const uint64_t stream_id = in.u64();
  c->per_thread = in.u8() & protocol::kCopyPerThread;
  const uint32_t attr_count = in.u32();
  if (attr_count > kMaxAttributes) return kMalformed;
  c->attrs.resize(attr_count);
  for (CUlaunchAttribute& a : c->attrs) a = in.get<CUlaunchAttribute>();
  if (!in.ok()) return kMalformed;
  void* fn = nullptr;
  void* stream = nullptr;
  if (!s.handles().resolve(fn_id, HandleKind::CUfunction, &fn) || !fn)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!s.handles().resolve(stream_id, HandleKind::CUstream, &stream))
    return CUDA_ERROR_INVALID_HANDLE;
  for (CUlaunchAttribute& a : c->attrs) {
    const CUresult rc = translate_attribute(s, &a, AttributeUse::kLaunch);
    if (rc != CUDA_SUCCESS) return rc;
  }
  c->fn = static_cast<CUfunction>(fn);
  l.hStream = static_cast<CUstream>(stream);
  l.attrs = c->attrs.data();
  l.numAttrs = attr_count;
  return CUDA_SUCCESS;
}

CUresult launch(Session& s, Reader& in, Writer&) {
  Config c;
  CUresult rc = read_config(s, in, &c);
  std::string buffer(in.blob());
  if (rc == kMalformed || !in.done()) return kMalformed;
  if (rc != CUDA_SUCCESS) return rc;
  size_t size = buffer.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &size, CU_LAUNCH_PARAM_END};
  const DriverTable& d = s.driver();
  auto launch_ex = c.per_thread ? d.cuLaunchKernelEx_ptsz : d.cuLaunchKernelEx;
  if (!launch_ex) return CUDA_ERROR_NOT_SUPPORTED;
  return launch_ex(&c.launch, c.fn, nullptr, size ? extra : nullptr);
}

// Cluster occupancy: u8 which (0 max active clusters, 1 max potential
// cluster size), then a launch configuration.
CUresult occupancy_clusters(Session& s, Reader& in, Writer& out) {
  const uint8_t which = in.u8();
  Config c;
  CUresult rc = read_config(s, in, &c);
  if (rc == kMalformed || !in.done() || which > 1) return kMalformed;
  if (rc != CUDA_SUCCESS) return rc;
  const DriverTable& d = s.driver();
  auto query = which == 0 ? d.cuOccupancyMaxActiveClusters : d.cuOccupancyMaxPotentialClusterSize;
  if (!query) return CUDA_ERROR_NOT_SUPPORTED;
  int value = 0;
  rc = query(&value, c.fn, &c.launch);
  if (rc == CUDA_SUCCESS) out.put<int32_t>(value);
  return rc;
}

const HandlerEntry kHandlers[] = {
    {protocol::kOpLaunch, launch},
    {protocol::kOpOccupancyClusters, occupancy_clusters},
};

}  // namespace

std::span<const HandlerEntry> launch_handlers() { return kHandlers; }

}  // namespace scuda::server
