// The figures measured through the CUDA driver API: against the stand-in
// libcuda these are scuda's; with no server configured, the local driver's.
#pragma once

#include <cuda.h>

#include <string>
#include <utility>
#include <vector>

#include "timing.h"

namespace scuda::bench {

// What a copy's host buffer holds: ones, mostly zeros with a repeating
// float pattern (lz4 shrinks it to a few percent), or random bytes.
enum class Content { kOnes, kCompressible, kRandom };

// Which empty-kernel image to load: the test double's text format or PTX.
enum class ModuleKind { kAuto, kDouble, kPtx };

class CudaBench {
 public:
  // Initialises the driver and makes device 0's primary context current.
  CudaBench();
  ~CudaBench();

  const std::string& device_name() const { return device_name_; }

  // Seconds per synchronous 4-byte device-to-host copy.
  std::vector<double> sync_copy(const Plan& plan);
  // Seconds per copy of `bytes`, from pageable or cuMemHostAlloc memory
  // (host to device: until a cuCtxSynchronize after it returns).
  std::vector<double> htod(size_t bytes, bool pinned, const Plan& plan,
                           Content content = Content::kOnes);
  std::vector<double> dtoh(size_t bytes, bool pinned, const Plan& plan,
                           Content content = Content::kOnes);
  // Seconds for the host to read a whole managed buffer of `bytes` the device
  // has just written (random bytes copied in, untimed): what the host's
  // faults pull.
  std::vector<double> managed_pull(size_t bytes, const Plan& plan);
  // Seconds for the host to write a whole managed buffer and the device to
  // read it back (a device-to-device copy out of it, synchronized).
  std::vector<double> managed_push(size_t bytes, const Plan& plan);
  // Seconds per cuMemAlloc/cuMemFree pair.
  std::vector<double> alloc_free(const Plan& plan);
  // Seconds from the host's write of a word of mapped host memory to its
  // sight of a running kernel's answer in the next word: under scuda, a
  // live mirror's round trip (docs/managed-memory.md, "Live mirrors").
  std::vector<double> live_exchange(const Plan& plan);

  struct LaunchSample {
    double per_second;
    double cpu_us_per_launch;
  };
  // Each sample: `launches` empty-kernel launches, then one cuCtxSynchronize.
  std::vector<LaunchSample> launches(ModuleKind kind, int launches, const Plan& plan);
  struct CopySample {
    double cpu_us;            // the calling thread's CPU per copy
    double replies_per_copy;  // replies it waited for (scuda's count; 0 natively)
  };
  // Each sample: `copies` 64-byte cuMemcpyHtoDAsync from page-locked memory
  // on one stream, then a cuStreamSynchronize, which is not counted.
  std::vector<CopySample> copy_cpu(int copies, const Plan& plan);
  // Nanoseconds per call of each query the stand-in answers from its own
  // state (cuCtxGetCurrent, cuStreamQuery of finished work, ...), by name:
  // each sample is the mean over a batch of calls.
  std::vector<std::pair<std::string, std::vector<double>>> local_queries(ModuleKind kind,
                                                                         const Plan& plan);
  // The image actually loaded by the last launches() ("double" or "ptx").
  const char* module_used() const { return module_used_; }

 private:
  CUfunction load_empty_kernel(ModuleKind kind);

  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUmodule module_ = nullptr;
  std::string device_name_;
  const char* module_used_ = "none";
};

}  // namespace scuda::bench
