#include "client/modules/held_images.h"

#include <mutex>
#include <set>

#include "client/modules/kept_images.h"
#include "client/pools/servers.h"
#include "client/runtime.h"
#include "common/lock_order.h"

namespace scuda::client {

namespace {

struct HeldImages {
  RankedMutex mu{LockRank::kReplyTables, "HeldImages::mu"};
  std::set<protocol::ImageHash> hashes;
  bool server_caches = true;
};

HeldImages& held() {
  static HeldImages* h = new HeldImages;  // never freed: used until exit
  return *h;
}

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
  protocol::Writer w;
  w.u64(proposed);
  w.u8(image ? protocol::kImageFollows : protocol::kHashOnly);
  w.put(hash);
  w.u64(size);
  if (image) w.blob(image, size);
  return w;
}

CUresult read_load_reply(protocol::Reader& r, const protocol::ImageHash& hash, uint64_t size,
                         bool sent, uint64_t* id) {
  *id = r.u64();
  const bool now_held = r.u8() != 0;
  if (!r.done()) return bad_reply("module load");
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
