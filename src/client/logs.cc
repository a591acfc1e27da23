// The driver's error log is the session process's, on the server: both dumps
// ask the session for its lines (logs-dump), and cuLogsDumpToFile writes
// them into the program's file, here.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "client/program_files.h"
#include "client/runtime.h"
#include "protocol/ops.h"

namespace {

// The most the driver keeps, with its terminating NUL.
constexpr size_t kLogBytes = 25601;

// The session's log lines from *iterator (all without one), in at most
// `capacity` bytes with a NUL; advances *iterator past them.
CUresult dump(CUlogIterator* iterator, size_t capacity, unsigned flags, std::string* lines) {
  scuda::protocol::Writer w;
  w.u8(iterator != nullptr);
  w.u32(iterator ? *iterator : 0);
  w.u64(capacity);
  w.u32(flags);
  std::vector<uint8_t> reply;
  if (CUresult rc = scuda::client::call(scuda::protocol::kOpLogsDump, w, &reply); rc != CUDA_SUCCESS)
    return rc;
  scuda::protocol::Reader r(reply);
  const CUlogIterator next = r.u32();
  *lines = std::string(r.blob());
  if (!r.done() || (capacity && lines->size() >= capacity))
    return scuda::client::bad_reply("cuLogsDumpToMemory");
  if (iterator) *iterator = next;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuLogsDumpToMemory(CUlogIterator* iterator, char* buffer, size_t* size,
                                    unsigned int flags) {
  SCUDA_PASSTHROUGH(cuLogsDumpToMemory, iterator, buffer, size, flags);
  if (!buffer || !size) return CUDA_ERROR_INVALID_VALUE;
  std::string lines;
  const CUresult rc = dump(iterator, std::min(*size, kLogBytes), flags, &lines);
  if (rc != CUDA_SUCCESS) {
    *size = 0;
    return rc;
  }
  std::memcpy(buffer, lines.data(), lines.size());
  if (*size) buffer[lines.size()] = '\0';
  *size = lines.size();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLogsDumpToFile(CUlogIterator* iterator, const char* path, unsigned int flags) {
  SCUDA_PASSTHROUGH(cuLogsDumpToFile, iterator, path, flags);
  if (!path) return CUDA_ERROR_INVALID_VALUE;
  std::string lines;
  if (CUresult rc = dump(iterator, kLogBytes, flags, &lines); rc != CUDA_SUCCESS) return rc;
  return scuda::client::write_program_file(path, lines, "cuLogsDumpToFile");
}

}  // extern "C"
