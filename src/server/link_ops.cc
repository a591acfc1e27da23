// The JIT linker: a link request carries every input, so the session links
// with its driver in one go and answers with the image and the logs
// (docs/protocol.md, "link"). The link state never outlives the request.
#include <string>
#include <string_view>
#include <vector>

#include "protocol/jit_options.h"
#include "protocol/ops.h"
#include "server/dispatch.h"
#include "server/session.h"

namespace scuda::server {

namespace {

using protocol::JitValue;
using protocol::Reader;
using protocol::Writer;

// A list of options as the driver takes them, with room for the logs the
// client asked for.
struct Options {
  std::vector<CUjit_option> keys;
  std::vector<void*> values;
  std::string info, error;

  unsigned count() const { return static_cast<unsigned>(keys.size()); }
  void add(CUjit_option key, void* value) {
    keys.push_back(key);
    values.push_back(value);
  }
};

// Reads an option list; log sizes become buffers of that size (bounded).
// Only numbers cross for an input's own options.
bool read_options(Reader& in, Options* o, bool logs) {
  const uint32_t n = in.u32();
  if (n > protocol::kMaxJitOptions) return false;
  for (uint32_t i = 0; i < n && in.ok(); ++i) {
    const auto key = static_cast<CUjit_option>(in.u32());
    const uint64_t value = in.u64();
    const JitValue kind = protocol::jit_value(key);
    if (kind == JitValue::kNumber || (logs && kind == JitValue::kWallTime)) {
      o->add(key, reinterpret_cast<void*>(static_cast<uintptr_t>(value)));
    } else if (logs && kind == JitValue::kLogSize) {
      const bool info = key == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES;
      std::string& log = info ? o->info : o->error;
      log.assign(std::min<uint64_t>(value, protocol::kMaxJitLogBytes), '\0');
      o->add(info ? CU_JIT_INFO_LOG_BUFFER : CU_JIT_ERROR_LOG_BUFFER, log.data());
      o->add(key, reinterpret_cast<void*>(log.size()));
    } else {
      return false;
    }
  }
  return in.ok();
}

struct Input {
  CUjitInputType type;
  std::string name;
  std::string_view data;
  Options options;
};

std::string_view log_of(const std::string& log) { return std::string_view(log.c_str()); }

CUresult link(Session& s, Reader& in, Writer& out) {
  Options options;
  if (!read_options(in, &options, true)) return kMalformed;
  const uint32_t count = in.u32();
  if (count > protocol::kMaxLinkInputs) return kMalformed;
  std::vector<Input> inputs(count);
  for (Input& input : inputs) {
    input.type = static_cast<CUjitInputType>(in.u32());
    input.name = in.str();
    input.data = in.blob();
    if (!read_options(in, &input.options, false)) return kMalformed;
  }
  if (!in.done()) return kMalformed;
  const DriverTable& d = s.driver();
  CUlinkState state = nullptr;
  CUresult rc =
      d.cuLinkCreate_v2(options.count(), options.keys.data(), options.values.data(), &state);
  for (size_t i = 0; rc == CUDA_SUCCESS && i < inputs.size(); ++i) {
    Input& x = inputs[i];
    rc = d.cuLinkAddData_v2(state, x.type, const_cast<char*>(x.data.data()), x.data.size(),
                            x.name.c_str(), x.options.count(), x.options.keys.data(),
                            x.options.values.data());
  }
  void* image = nullptr;
  size_t size = 0;
  if (rc == CUDA_SUCCESS) rc = d.cuLinkComplete(state, &image, &size);
  uint32_t wall = 0;
  for (unsigned i = 0; i < options.count(); ++i)
    if (options.keys[i] == CU_JIT_WALL_TIME)
      wall = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(options.values[i]));
  out.u32(rc);
  out.blob(rc == CUDA_SUCCESS ? image : nullptr, rc == CUDA_SUCCESS ? size : 0);
  out.str(log_of(options.info));
  out.str(log_of(options.error));
  out.u32(wall);
  if (state) d.cuLinkDestroy(state);
  return CUDA_SUCCESS;
}

const HandlerEntry kHandlers[] = {
    {protocol::kOpLink, link},
};

}  // namespace

std::span<const HandlerEntry> link_handlers() { return kHandlers; }

}  // namespace scuda::server
