#include "logs.h"

#include <cuda.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "state.h"

using namespace scuda_double;

namespace {

// Every line since start; an iterator is an index into them.
std::vector<std::string>& lines() {
  static auto* v = new std::vector<std::string>;  // never freed: used until exit
  return *v;
}

struct Callback {
  CUlogsCallback fn;
  void* data;
};

// Registered callbacks by handle, which is the entry's address.
std::map<CUlogsCallbackHandle, Callback>& callbacks() {
  static auto* m = new std::map<CUlogsCallbackHandle, Callback>;  // never freed: used until exit
  return *m;
}

}  // namespace

// Each callback gets the line as it is logged, as the driver's do.
void scuda_double::log_error(const std::string& line) {
  lines().push_back(line);
  for (const auto& [handle, cb] : callbacks()) {
    std::string text = line;
    cb.fn(cb.data, CU_LOG_LEVEL_ERROR, text.data(), text.size());
  }
}

extern "C" {

CUresult cuLogsRegisterCallback(CUlogsCallback fn, void* data, CUlogsCallbackHandle* out) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  static uintptr_t next = 0x7000;
  const auto handle = reinterpret_cast<CUlogsCallbackHandle>(next++);
  callbacks()[handle] = {fn, data};
  if (out) *out = handle;
  return CUDA_SUCCESS;
}

CUresult cuLogsUnregisterCallback(CUlogsCallbackHandle handle) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  return callbacks().erase(handle) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuLogsCurrent(CUlogIterator* iterator_out, unsigned int flags) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (iterator_out == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  *iterator_out = static_cast<CUlogIterator>(lines().size());
  return CUDA_SUCCESS;
}

// The lines from *iterator (all of them without one), each ending in a
// newline, as many whole ones as fit before the terminating NUL.
CUresult cuLogsDumpToMemory(CUlogIterator* iterator, char* buffer, size_t* size,
                            unsigned int flags) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (buffer == nullptr || size == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  size_t at = iterator ? *iterator : 0, used = 0;
  for (; at < lines().size(); ++at) {
    const std::string& line = lines()[at];
    if (used + line.size() + 2 > *size) break;
    std::memcpy(buffer + used, line.data(), line.size());
    used += line.size();
    buffer[used++] = '\n';
  }
  if (used == 0 && at < lines().size()) {
    *size = 0;
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (*size) buffer[used] = '\0';
  *size = used;
  if (iterator) *iterator = static_cast<CUlogIterator>(at);
  return CUDA_SUCCESS;
}

}  // extern "C"
