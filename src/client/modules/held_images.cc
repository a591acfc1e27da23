#include "client/modules/held_images.h"

#include <mutex>
#include <set>

#include "client/modules/kept_images.h"
#include "client/pools/servers.h"
#include "client/runtime.h"
#include "client/state.h"
#include "common/lock_order.h"
#include "protocol/op_layouts.h"

namespace scuda::client {

namespace parts {

struct HeldImages {
  RankedMutex mu{LockRank::kReplyTables, "HeldImages::mu"};
  std::set<protocol::ImageHash> hashes;
  bool server_caches = true;
};

}  // namespace parts

namespace {

parts::HeldImages& held() { return client_state().held_images.get(); }

}  // namespace

// With several servers each has a cache of its own, which the client does
// not track apart: every image is sent whole.
bool is_held(const protocol::ImageHash& hash) {
  if (several_servers()) return false;
  std::lock_guard lock(held().mu);
  return held().hashes.count(hash) != 0;
}

void hold_kept(const std::vector<protocol::ImageRef>& asked, const std::vector<uint8_t>& kept) {
  std::lock_guard lock(held().mu);
  for (size_t i = 0; i < asked.size(); ++i) {
    if (kept[i]) held().hashes.insert(asked[i].hash);
    else note_gone(asked[i].hash);
  }
}

bool server_caches() {
  if (several_servers()) return false;
  std::lock_guard lock(held().mu);
  return held().server_caches;
}

protocol::Writer load_request(uint64_t proposed, const protocol::ImageHash& hash, const void* image,
                              size_t size) {
  protocol::op::ImageLoad q{proposed, hash, size, std::nullopt};
  if (image) q.image = std::string_view(static_cast<const char*>(image), size);
  return protocol::encode(q);
}

CUresult read_load_reply(protocol::Reader& r, const protocol::ImageHash& hash, uint64_t size,
                         bool sent, uint64_t* id) {
  protocol::op::ImageLoaded loaded;
  if (!protocol::read(r, &loaded)) return bad_reply("module load");
  *id = loaded.id;
  const bool now_held = loaded.cached != 0;
  std::lock_guard lock(held().mu);
  if (now_held) {
    held().hashes.insert(hash);
    note_kept(hash, size);
  } else if (sent) {
    held().server_caches = false;
  }
  return CUDA_SUCCESS;
}

}  // namespace scuda::client
