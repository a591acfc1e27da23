#include "logs.h"

#include <cuda.h>

#include <cstring>
#include <vector>

#include "state.h"

using namespace scuda_double;

namespace {

// Every line since start; an iterator is an index into them.
std::vector<std::string>& lines() {
  static auto* v = new std::vector<std::string>;  // never freed: used until exit
  return *v;
}

}  // namespace

void scuda_double::log_error(const std::string& line) { lines().push_back(line); }

extern "C" {

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
