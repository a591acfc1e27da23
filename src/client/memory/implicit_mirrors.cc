// Host memory that device work names without the program registering it
// (a graph's memcpy node, a captured copy, a page-locked block's device
// view), mirrored in the session as implicit registered ranges.
#include <cstdint>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/managed/coherent_pages.h"
#include "client/memory/registered_memory.h"

namespace scuda::client::registered {

CUresult mirror_for_device(const void* p, size_t size, CUdeviceptr* device) {
  if (covers(p, size, device)) {
    name_for_device(p);
    return CUDA_SUCCESS;
  }
  const auto* first = static_cast<const uint8_t*>(p);
  const uint8_t* last = first + (size ? size - 1 : 0);
  const uintptr_t page = coherence::page_size();
  uintptr_t start = reinterpret_cast<uintptr_t>(first) & ~(page - 1);
  uintptr_t stop = (reinterpret_cast<uintptr_t>(last) | (page - 1)) + 1;
  // Implicit mirrors that share pages with this one merge into one range,
  // mirrored again at the same addresses, so that one copy never spans two.
  std::vector<uintptr_t> merged;
  CUresult rc = implicit_overlaps(&start, &stop, &merged) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; rc == CUDA_SUCCESS && i < merged.size(); ++i)
    rc = unregister_range(reinterpret_cast<void*>(merged[i]));
  if (rc == CUDA_SUCCESS)
    rc = register_range(reinterpret_cast<void*>(start), stop - start,
                        CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP, true);
  if (rc != CUDA_SUCCESS) {
    spdlog::error(
        "host memory at {} ({} bytes) named by a graph node or captured copy could not "
        "be mirrored in the session ({})",
        p, size, static_cast<int>(rc));
    return rc;
  }
  spdlog::debug("mirroring host memory {:#x}+{} for the device", start, stop - start);
  return covers(p, size, device) ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

void drop_mirrors(const void* p, size_t size) {
  if (!any()) return;  // every cuMemFreeHost comes here
  auto start = reinterpret_cast<uintptr_t>(p);
  uintptr_t stop = start + size;
  std::vector<uintptr_t> bases;
  if (!implicit_overlaps(&start, &stop, &bases)) return;
  for (uintptr_t base : bases) unregister_range(reinterpret_cast<void*>(base));
}

}  // namespace scuda::client::registered
