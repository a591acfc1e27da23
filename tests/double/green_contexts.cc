// Green contexts' resources: the device's SMs as one CUdevResource, and
// their split into groups (cuDevSmResourceSplitByCount), by the driver's
// rules: a group holds minCount SMs rounded up to the co-scheduling
// alignment, and what no group takes is the remainder.
#include <cuda.h>

#include <algorithm>

#include "state.h"

using namespace scuda_double;

namespace {

// SMs are co-scheduled in pairs on the double's device.
constexpr unsigned kSmAlignment = 2;

CUdevResource sm_resource(unsigned sms) {
  CUdevResource r{};
  r.type = CU_DEV_RESOURCE_TYPE_SM;
  r.sm.smCount = sms;
  r.sm.minSmPartitionSize = kSmAlignment;
  r.sm.smCoscheduledAlignment = kSmAlignment;
  return r;
}

unsigned group_size(unsigned min_count) {
  const unsigned sms = std::max(min_count, kSmAlignment);
  return (sms + kSmAlignment - 1) / kSmAlignment * kSmAlignment;
}

}  // namespace

extern "C" {

CUresult cuDeviceGetDevResource(CUdevice device, CUdevResource* resource, CUdevResourceType type) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  if (resource == nullptr || type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_VALUE;
  *resource = sm_resource(kDoubleSmCount);
  return CUDA_SUCCESS;
}

// Without `result`, *nbGroups says how many groups there could be; with
// it, at most *nbGroups groups are made and *nbGroups says how many.
CUresult cuDevSmResourceSplitByCount(CUdevResource* result, unsigned int* nbGroups,
                                     const CUdevResource* input, CUdevResource* remaining,
                                     unsigned int useFlags, unsigned int minCount) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (nbGroups == nullptr || input == nullptr || input->type != CU_DEV_RESOURCE_TYPE_SM ||
      useFlags > 3 || (result != nullptr && *nbGroups == 0))
    return CUDA_ERROR_INVALID_VALUE;
  const unsigned size = group_size(minCount);
  const unsigned possible = input->sm.smCount / size;
  if (possible == 0) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
  const unsigned made = result ? std::min(*nbGroups, possible) : possible;
  for (unsigned i = 0; result && i < made; ++i) result[i] = sm_resource(size);
  if (remaining) *remaining = sm_resource(result ? input->sm.smCount - made * size : 0);
  *nbGroups = made;
  return CUDA_SUCCESS;
}

}  // extern "C"
