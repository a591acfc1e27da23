// Kernel launches: arguments are packed in the kernel's layout
// (kernel_arguments.h), so the server receives one parameter buffer.
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/contexts/context.h"
#include "client/kernels/attributes.h"
#include "client/kernels/kernel_arguments.h"
#include "client/modules/lasting_names.h"
#include "client/op_calls.h"
#include "client/runtime.h"
#include "client/streams/stream_devices.h"
#include "custom.h"
#include "protocol/op_layouts.h"

namespace scuda::client {

namespace {

namespace op = protocol::op;

// Each device's launch limits, read from the snapshot once.
struct Limits {
  unsigned dims[6];  // grid x, y, z, block x, y, z
  uint64_t threads;
};

const Limits& limits_of(CUdevice dev) {
  // Never freed: a program's exit handlers may still launch.
  static const std::vector<Limits>& all = *[] {
    const CUdevice_attribute attrs[] = {
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z,  CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z};
    int count = 0;
    cuDeviceGetCount(&count);
    std::vector<Limits> v(count);
    for (int d = 0; d < count; ++d) {
      for (int i = 0; i < 6; ++i) {
        int limit = 0;
        cuDeviceGetAttribute(&limit, attrs[i], d);
        v[d].dims[i] = static_cast<unsigned>(limit);
      }
      int threads = 0;
      cuDeviceGetAttribute(&threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, d);
      v[d].threads = static_cast<uint64_t>(threads);
    }
    return new std::vector<Limits>(std::move(v));
  }();
  static const Limits none{};
  return dev >= 0 && static_cast<size_t>(dev) < all.size() ? all[dev] : none;
}

// The checks the driver makes before it queues a launch, done here because
// the launch itself is sent one-way: these errors must come back at once.
CUresult check_dims(const CUlaunchConfig& c) {
  const unsigned dims[] = {c.gridDimX,  c.gridDimY,  c.gridDimZ,
                           c.blockDimX, c.blockDimY, c.blockDimZ};
  CUdevice dev = 0;
  if (CUresult rc = cuCtxGetDevice(&dev); rc != CUDA_SUCCESS) return rc;
  const Limits& limits = limits_of(dev);
  for (int i = 0; i < 6; ++i)
    if (dims[i] == 0 || dims[i] > limits.dims[i]) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t threads = uint64_t{c.blockDimX} * c.blockDimY * c.blockDimZ;
  return threads > limits.threads ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

// The configuration as both ends read it. One per thread, so that a launch
// with attributes allocates nothing after the thread's first. Event handles
// inside attributes are client ids already; the server maps them.
const op::LaunchConfig& config_of(const CUlaunchConfig& c, CUfunction f, bool per_thread) {
  thread_local op::LaunchConfig config;
  config.function = handle_id(f);
  config.dims = {c.gridDimX, c.gridDimY, c.gridDimZ, c.blockDimX, c.blockDimY, c.blockDimZ};
  config.shared_memory = c.sharedMemBytes;
  config.stream = handle_id(c.hStream);
  config.mode = per_thread ? protocol::kCopyPerThread : 0;
  config.attributes.assign(c.attrs, c.attrs + c.numAttrs);
  return config;
}

CUresult launch(const CUlaunchConfig& c, CUfunction f, void** params, void** extra,
                bool per_thread) {
  if (CUresult rc = check_dims(c); rc != CUDA_SUCCESS) return rc;
  if (c.numAttrs > protocol::kMaxLaunchAttributes) return CUDA_ERROR_INVALID_VALUE;
  protocol::Writer w;
  w.data().reserve(256);
  protocol::write(w, config_of(c, f, per_thread));
  if (CUresult rc = pack_arguments(handle_id(f), params, extra, w); rc != CUDA_SUCCESS) return rc;
  return post(op::Launch::kOp, w);
}

constexpr uint8_t kMaxActiveClusters = 0;  // else cuOccupancyMaxPotentialClusterSize

// The bytes of a launch attribute's value that can change a cluster
// occupancy answer. Both answers are about what fits on the device's SMs at
// once, so what orders, prioritises or signals the work cannot; and
// cuOccupancyMaxPotentialClusterSize ignores the cluster dimensions
// (cuda.h). Attributes not named here count whole.
size_t occupancy_bytes(uint8_t which, CUlaunchAttributeID id) {
  switch (id) {
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
      return which == kMaxActiveClusters ? 3 * sizeof(unsigned) : 0;
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION: return 3 * sizeof(unsigned);
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: return sizeof(int);
    case CU_LAUNCH_ATTRIBUTE_IGNORE:
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT: return 0;
    default: return sizeof(CUlaunchAttributeValue);
  }
}

// What a cluster occupancy answer depends on, as a cache key: where it is
// asked (`where`), the block shape, dynamic shared memory and the attributes
// above. The grid does not count (cuBLASLt asks again for each problem size).
std::string occupancy_key(uint8_t which, const CUlaunchConfig& c, uint64_t where) {
  protocol::Writer w;
  w.u64(where);
  for (unsigned v : {c.blockDimX, c.blockDimY, c.blockDimZ, c.sharedMemBytes}) w.u32(v);
  for (unsigned i = 0; i < c.numAttrs; ++i) {
    const size_t n = occupancy_bytes(which, c.attrs[i].id);
    if (n == 0) continue;
    w.u32(c.attrs[i].id);
    w.bytes(&c.attrs[i].value, n);
  }
  return {w.data().begin(), w.data().end()};
}

// The stream counts only by the context it picks for a CUkernel (cuda.h):
// the current one for NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD (ids 0
// to 2), else the stream's own. Across runs, that context is named by its
// device; a function's lasting name holds its own.
std::optional<std::string> lasting_occupancy_key(uint8_t which, const CUlaunchConfig& c,
                                                 CUfunction f) {
  const uint64_t stream = handle_id(c.hStream);
  CUdevice dev = 0;
  const bool known = stream > 2 && named_kernel(handle_id(f))
                         ? stream_device(stream, &dev)
                         : cuCtxGetDevice(&dev) == CUDA_SUCCESS;
  if (!known) {
    spdlog::debug("cluster occupancy on stream {:#x}: not kept across runs", stream);
    return std::nullopt;
  }
  return occupancy_key(which, c, static_cast<uint64_t>(dev));
}

// cuOccupancyMaxActiveClusters (which 0) and MaxPotentialClusterSize (1).
CUresult occupancy_clusters(uint8_t which, int* value, CUfunction f, const CUlaunchConfig* c) {
  if (!value || !c || (c->numAttrs && !c->attrs) || c->numAttrs > protocol::kMaxLaunchAttributes)
    return CUDA_ERROR_INVALID_VALUE;
  const op::OccupancyClusters::Request request{which, config_of(*c, f, false)};
  const uint64_t stream = handle_id(c->hStream);
  const std::string key = occupancy_key(which, *c, stream <= 2 ? current_context_id() : stream);
  auto lasting = lasting_occupancy_key(which, *c, f);
  return cached_cluster_occupancy(handle_id(f), which, key, lasting, value, [&] {
    op::OccupancyClusters::Reply reply;
    const CUresult rc = ask<op::OccupancyClusters>(request, &reply);
    if (rc == CUDA_SUCCESS) *value = reply.value;
    return rc;
  });
}

CUresult launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, unsigned shmem, CUstream stream, void** params,
                       void** extra, bool per_thread) {
  const CUlaunchConfig c{gx, gy, gz, bx, by, bz, shmem, stream, nullptr, 0};
  return launch(c, f, params, extra, per_thread);
}

CUresult launch_ex(const CUlaunchConfig* config, CUfunction f, void** params, void** extra,
                   bool per_thread) {
  if (!config || (config->numAttrs && !config->attrs)) return CUDA_ERROR_INVALID_VALUE;
  return launch(*config, f, params, extra, per_thread);
}

// A cooperative launch is cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_COOPERATIVE.
CUresult launch_cooperative(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shmem, CUstream stream,
                            void** params, bool per_thread) {
  CUlaunchAttribute cooperative{};
  cooperative.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  cooperative.value.cooperative = 1;
  const CUlaunchConfig c{gx, gy, gz, bx, by, bz, shmem, stream, &cooperative, 1};
  return launch(c, f, params, nullptr, per_thread);
}

}  // namespace

}  // namespace scuda::client

// The entry points and their per-thread twins are generated (codegen,
// `twins`); these are their bodies.
namespace scuda::client::custom {

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shmem, CUstream stream, void** params,
                        void** extra, DefaultStream d) {
  return launch_kernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra, per_thread(d));
}

CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra,
                          DefaultStream d) {
  return launch_ex(config, f, params, extra, per_thread(d));
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned shmem, CUstream stream,
                                   void** params, DefaultStream d) {
  return launch_cooperative(f, gx, gy, gz, bx, by, bz, shmem, stream, params, per_thread(d));
}

}  // namespace scuda::client::custom

CUresult scuda::client::custom::cuOccupancyMaxActiveClusters(int* clusters, CUfunction f,
                                                             const CUlaunchConfig* config) {
  return scuda::client::occupancy_clusters(0, clusters, f, config);
}

CUresult scuda::client::custom::cuOccupancyMaxPotentialClusterSize(int* size, CUfunction f,
                                                                   const CUlaunchConfig* config) {
  return scuda::client::occupancy_clusters(1, size, f, config);
}
