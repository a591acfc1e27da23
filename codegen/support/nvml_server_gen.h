// Helpers for the generated NVML handlers (nvml_server_handlers.cc), on top
// of the driver handlers' (server_gen.h). Copied verbatim into the generated
// directory by codegen/generate.py.
#pragma once

#include <nvml.h>

#include <cstring>
#include <vector>

#include "server_gen.h"

namespace scuda::server::gen {

// Handlers return the nvmlReturn_t in the reply's result word.
inline CUresult to_cu(nvmlReturn_t rc) { return static_cast<CUresult>(rc); }

// A buffer the function reads and writes back (an array of requests that it
// fills in, as nvmlDeviceGetFieldValues does).
struct InOutBuf {
  bool present = false;
  uint64_t size = 0;
  std::vector<uint64_t> words;
  void* ptr() { return present ? words.data() : nullptr; }
};

inline InOutBuf get_inout_buf(Reader& in) {
  InOutBuf b;
  b.present = in.boolean();
  if (!b.present) return b;
  std::string_view bytes = in.blob();
  b.size = bytes.size();
  b.words.resize(bytes.size() / 8 + 1);
  if (!bytes.empty()) std::memcpy(b.words.data(), bytes.data(), bytes.size());
  return b;
}

inline void put_inout_buf(Writer& out, InOutBuf& b) {
  if (b.present) out.blob(b.words.data(), b.size);
}

}  // namespace scuda::server::gen
