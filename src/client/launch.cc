// Kernel launches: arguments are packed here, in the kernel's layout, so the
// server receives one parameter buffer whatever form the caller used.
#include <cstring>

#include "client/layouts.h"
#include "client/runtime.h"
#include "protocol/ops.h"

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

CUresult pack(CUfunction f, void** params, void** extra, std::string* buf) {
  Layout layout;
  if (!find_layout(handle_id(f), &layout)) return CUDA_ERROR_INVALID_HANDLE;
  if (params) return pack_kernel_params(layout, params, buf);
  if (extra) return pack_extra(extra, buf);
  return layout.empty() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// The checks the driver makes before it queues a launch, done here because
// the launch itself is sent one-way: these errors must come back at once.
CUresult check_dims(const CUlaunchConfig& c) {
  const unsigned dims[] = {c.gridDimX, c.gridDimY, c.gridDimZ, c.blockDimX, c.blockDimY, c.blockDimZ};
  const CUdevice_attribute limits[] = {
      CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
      CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z,  CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
      CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z};
  CUdevice dev = 0;
  if (CUresult rc = cuCtxGetDevice(&dev); rc != CUDA_SUCCESS) return rc;
  for (int i = 0; i < 6; ++i) {
    int limit = 0;
    cuDeviceGetAttribute(&limit, limits[i], dev);
    if (dims[i] == 0 || dims[i] > static_cast<unsigned>(limit)) return CUDA_ERROR_INVALID_VALUE;
  }
  int max_threads = 0;
  cuDeviceGetAttribute(&max_threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev);
  const uint64_t threads = uint64_t{c.blockDimX} * c.blockDimY * c.blockDimZ;
  return threads > static_cast<uint64_t>(max_threads) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

// The configuration as the server reads it (launch_ops.cc read_config).
void write_config(protocol::Writer& w, const CUlaunchConfig& c, CUfunction f, bool per_thread) {
  w.u64(handle_id(f));
  for (unsigned v : {c.gridDimX, c.gridDimY, c.gridDimZ, c.blockDimX, c.blockDimY, c.blockDimZ,
                     c.sharedMemBytes})
    w.u32(v);
  w.u64(handle_id(c.hStream));
  w.u8(per_thread ? protocol::kCopyPerThread : 0);
  w.u32(c.numAttrs);
  // Event handles inside attributes are client ids already; the server maps them.
  for (unsigned i = 0; i < c.numAttrs; ++i) w.put(c.attrs[i]);
}

CUresult launch(const CUlaunchConfig& c, CUfunction f, void** params, void** extra,
                bool per_thread) {
  if (CUresult rc = check_dims(c); rc != CUDA_SUCCESS) return rc;
  std::string buf;
  if (CUresult rc = pack(f, params, extra, &buf); rc != CUDA_SUCCESS) return rc;
  protocol::Writer w;
  write_config(w, c, f, per_thread);
  w.blob(buf.data(), buf.size());
  return post(protocol::kOpLaunch, w);
}

// cuOccupancyMaxActiveClusters (which 0) and MaxPotentialClusterSize (1).
CUresult occupancy_clusters(uint8_t which, int* value, CUfunction f, const CUlaunchConfig* c) {
  if (!value || !c || (c->numAttrs && !c->attrs)) return CUDA_ERROR_INVALID_VALUE;
  protocol::Writer w;
  w.u8(which);
  write_config(w, *c, f, false);
  std::vector<uint8_t> reply;
  CUresult rc = call(protocol::kOpOccupancyClusters, w, &reply);
  if (rc != CUDA_SUCCESS) return rc;
  protocol::Reader r(reply);
  *value = r.get<int32_t>();
  return r.done() ? CUDA_SUCCESS : bad_reply("cuOccupancyMaxActiveClusters");
}

CUresult launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, unsigned shmem, CUstream stream, void** params,
                       void** extra, bool per_thread) {
  CUlaunchConfig c{};
  c.gridDimX = gx;
  c.gridDimY = gy;
  c.gridDimZ = gz;
  c.blockDimX = bx;
  c.blockDimY = by;
  c.blockDimZ = bz;
  c.sharedMemBytes = shmem;
  c.hStream = stream;
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

using scuda::client::launch_cooperative;
using scuda::client::launch_ex;
using scuda::client::launch_kernel;

extern "C" {

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                unsigned by, unsigned bz, unsigned shmem, CUstream stream,
                                void** params, void** extra) {
  SCUDA_PASSTHROUGH(cuLaunchKernel, f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra);
  return launch_kernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra, false);
}

CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                     unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                     CUstream stream, void** params, void** extra) {
  SCUDA_PASSTHROUGH(cuLaunchKernel_ptsz, f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra);
  return launch_kernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra, true);
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params,
                                  void** extra) {
  SCUDA_PASSTHROUGH(cuLaunchKernelEx, config, f, params, extra);
  return launch_ex(config, f, params, extra, false);
}

CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params,
                                       void** extra) {
  SCUDA_PASSTHROUGH(cuLaunchKernelEx_ptsz, config, f, params, extra);
  return launch_ex(config, f, params, extra, true);
}

CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                           unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                           CUstream stream, void** params) {
  SCUDA_PASSTHROUGH(cuLaunchCooperativeKernel, f, gx, gy, gz, bx, by, bz, shmem, stream, params);
  return launch_cooperative(f, gx, gy, gz, bx, by, bz, shmem, stream, params, false);
}

CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                                unsigned shmem, CUstream stream, void** params) {
  SCUDA_PASSTHROUGH(cuLaunchCooperativeKernel_ptsz, f, gx, gy, gz, bx, by, bz, shmem, stream,
                    params);
  return launch_cooperative(f, gx, gy, gz, bx, by, bz, shmem, stream, params, true);
}

CUresult CUDAAPI cuOccupancyMaxActiveClusters(int* clusters, CUfunction f,
                                              const CUlaunchConfig* config) {
  SCUDA_PASSTHROUGH(cuOccupancyMaxActiveClusters, clusters, f, config);
  return scuda::client::occupancy_clusters(0, clusters, f, config);
}

CUresult CUDAAPI cuOccupancyMaxPotentialClusterSize(int* size, CUfunction f,
                                                    const CUlaunchConfig* config) {
  SCUDA_PASSTHROUGH(cuOccupancyMaxPotentialClusterSize, size, f, config);
  return scuda::client::occupancy_clusters(1, size, f, config);
}

}  // extern "C"
