// The JIT linker: a link request carries every input, so the session links
// with its driver in one go and answers with the image and the logs
// (docs/protocol.md, "link"). The link state never outlives the request.
#include <string>
#include <string_view>
#include <vector>

#include "protocol/jit_options.h"
#include "protocol/op_layouts.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "server/session/typed_handler.h"

namespace scuda::server {

namespace {

namespace op = protocol::op;
using protocol::JitValue;

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

// The options as the driver takes them; log sizes become buffers of that
// size (bounded). Only numbers cross for an input's own options.
bool take_options(const protocol::op::JitOptions& in, Options* o, bool logs) {
  if (in.keys.size() > protocol::kMaxJitOptions || in.values.size() != in.keys.size()) return false;
  for (size_t i = 0; i < in.keys.size(); ++i) {
    const auto key = static_cast<CUjit_option>(in.keys[i]);
    const uint64_t value = in.values[i];
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
  return true;
}

// The bytes the driver wrote into a log buffer, to its NUL.
std::string log_of(const std::string& log) { return {log.c_str()}; }

// Links every input with the session's driver; the link state ends here.
CUresult link_inputs(const DriverTable& d, Options& options, std::vector<Options>& own,
                     const op::Link::Request& q, op::Link::Reply* reply) {
  CUlinkState state = nullptr;
  CUresult rc =
      d.cuLinkCreate_v2(options.count(), options.keys.data(), options.values.data(), &state);
  for (size_t i = 0; rc == CUDA_SUCCESS && i < q.inputs.size(); ++i) {
    const op::LinkInput& x = q.inputs[i];
    Options& o = own[i];
    rc = d.cuLinkAddData_v2(state, static_cast<CUjitInputType>(x.type),
                            const_cast<char*>(x.data.data()), x.data.size(), x.name.c_str(),
                            o.count(), o.keys.data(), o.values.data());
  }
  void* image = nullptr;
  size_t size = 0;
  if (rc == CUDA_SUCCESS) rc = d.cuLinkComplete(state, &image, &size);
  if (rc == CUDA_SUCCESS) reply->image.assign(static_cast<const char*>(image), size);
  if (state) d.cuLinkDestroy(state);
  return rc;
}

CUresult link(Session& s, const op::Link::Request& q, op::Link::Reply* reply) {
  Options options;
  if (q.inputs.size() > protocol::kMaxLinkInputs || !take_options(q.options, &options, true))
    return kMalformed;
  std::vector<Options> own(q.inputs.size());
  for (size_t i = 0; i < q.inputs.size(); ++i)
    if (!take_options(q.inputs[i].options, &own[i], false)) return kMalformed;
  reply->result = link_inputs(s.driver(), options, own, q, reply);
  for (unsigned i = 0; i < options.count(); ++i)
    if (options.keys[i] == CU_JIT_WALL_TIME)
      reply->wall_ms = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(options.values[i]));
  reply->info_log = log_of(options.info);
  reply->error_log = log_of(options.error);
  return CUDA_SUCCESS;
}

const HandlerEntry kHandlers[] = {
    typed_entry<op::Link, link>(),
};

}  // namespace

std::span<const HandlerEntry> link_handlers() { return kHandlers; }

}  // namespace scuda::server
