#include "client/kernels/descriptions.h"

#include <mutex>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "client/handle_errors.h"
#include "client/kernels/attributes.h"
#include "client/modules/answer_cache.h"
#include "client/modules/lasting_names.h"
#include "client/pools/route.h"
#include "client/runtime.h"
#include "client/state.h"
#include "client/transport/session.h"
#include "common/lock_order.h"
#include "protocol/op_layouts.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace parts {

// id -> the request whose reply describes it, not read yet.
struct OwedDescriptions {
  RankedMutex mu{LockRank::kReplyTables, "OwedDescriptions::mu"};
  std::unordered_map<uint64_t, uint64_t> requests;
};

}  // namespace parts

namespace {

parts::OwedDescriptions& owed() { return client_state().owed_descriptions.get(); }

// Decodes a description of `id`, the whole of what `r` holds, and caches
// it; false if malformed. *known: it has the layout.
bool decode(protocol::Reader& r, uint64_t id, uint64_t generation, bool* known, int32_t* dev) {
  protocol::op::FunctionDescription d;
  if (!protocol::read(r, &d) || (d.params && !valid_layout(*d.params)) ||
      !note_attributes(id, generation, d.device, d.attributes, dev))
    return false;
  *known = d.params.has_value();
  if (*known) note_layout(id, std::make_shared<const Layout>(std::move(*d.params)));
  return true;
}

// A description depends on what was set on the family, and its attributes
// are of one device.
std::string description_key(const std::string& lasting_name, const std::string& digest,
                            int32_t dev) {
  protocol::Writer w;
  w.str(lasting_name);
  w.str(digest);
  w.put(dev);
  return answers::key('D', w);
}

// With the connection's lock held, when the lookup's reply is read. An
// error is the handle's (handle_errors.h), not the next synchronize's.
CUresult on_lookup_reply(uint64_t id, const SetState& asked, CUresult rc, protocol::Reader& r) {
  if (rc == CUDA_SUCCESS && !(read_description(r, id, asked) && r.done()))
    rc = bad_reply("function lookup");
  if (rc != CUDA_SUCCESS) note_handle_error(id, rc);
  std::lock_guard lock(owed().mu);
  owed().requests.erase(id);
  return CUDA_SUCCESS;
}

}  // namespace

bool read_description(protocol::Reader& r, uint64_t id, const SetState& asked) {
  const uint8_t* start = r.take(0);
  const size_t before = r.remaining();
  bool known = false;
  int32_t dev = -1;
  if (!decode(r, id, asked.generation, &known, &dev)) return false;
  // Kept for later runs with its layout (a kernel looked up before any
  // context has none).
  if (std::string name; known && lasting_name(id, &name))
    answers::remember(description_key(name, asked.digest, dev),
                      {reinterpret_cast<const char*>(start), before - r.remaining()});
  return true;
}

bool recall_description(uint64_t id) {
  std::string name;
  if (!lasting_name(id, &name)) return false;
  const SetState now = set_state(id);
  bool found = false;
  for (int32_t dev = -1; dev < static_cast<int32_t>(snapshot().devices.size()); ++dev) {
    std::string bytes;
    if (!answers::find(description_key(name, now.digest, dev), &bytes)) continue;
    protocol::Reader r(bytes.data(), bytes.size());
    bool known = false;
    int32_t read_dev = dev;
    found |= decode(r, id, now.generation, &known, &read_dev) && r.done() && known;
  }
  return found;
}

CUresult look_up_later(uint32_t op, const protocol::Writer& request, uint64_t id) {
  uint64_t sent = 0;
  CUresult rc = call_later(op, request, &sent,
                           [id, asked = set_state(id)](CUresult result, protocol::Reader& r) {
                             return on_lookup_reply(id, asked, result, r);
                           });
  if (rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(owed().mu);
  // Unless another thread has read the reply already: then settling on it
  // would find nothing owed, which is harmless.
  owed().requests[id] = sent;
  return CUDA_SUCCESS;
}

CUresult await_description(uint64_t id) {
  uint64_t request = 0;
  {
    std::lock_guard lock(owed().mu);
    auto it = owed().requests.find(id);
    if (it != owed().requests.end()) request = it->second;
  }
  if (request) {
    Route route;  // the lookup went to the server its id names
    route.handle(id);
    if (std::string name; spdlog::should_log(spdlog::level::debug) && lasting_name(id, &name))
      spdlog::debug("waiting for the description of {:?}", name);
    if (CUresult rc = settle(request); rc != CUDA_SUCCESS) return rc;
  }
  return handle_error(id);
}

CUresult fetch_description(uint64_t id, int dev) {
  Route route;
  route.device(dev);
  const protocol::Writer w =
      protocol::encode(protocol::op::FunctionInfo::Request{id, local_device(dev)});
  const SetState asked = set_state(id);
  std::vector<uint8_t> reply;
  if (CUresult rc = call(protocol::op::FunctionInfo::kOp, w, &reply); rc != CUDA_SUCCESS) return rc;
  protocol::Reader r(reply);
  return read_description(r, id, asked) && r.done() ? CUDA_SUCCESS : bad_reply("function-info");
}

CUresult layout_of(uint64_t id, std::shared_ptr<const Layout>* layout) {
  if ((*layout = find_layout(id))) return CUDA_SUCCESS;
  if (CUresult rc = await_description(id); rc != CUDA_SUCCESS) return rc;
  if ((*layout = find_layout(id))) return CUDA_SUCCESS;
  // Looked up before any context, when the server's driver could not tell.
  if (CUresult rc = fetch_description(id, -1); rc != CUDA_SUCCESS) return rc;
  *layout = find_layout(id);
  return *layout ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

}  // namespace scuda::client
