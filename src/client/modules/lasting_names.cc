#include "client/modules/lasting_names.h"

#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "client/state.h"
#include "common/lock_order.h"

namespace scuda::client {

namespace parts {

struct LastingNames {
  RankedMutex mu{LockRank::kReplyTables, "LastingNames::mu"};
  std::unordered_map<uint64_t, protocol::ImageHash> images;  // module or library -> image
  std::map<uint64_t, std::string> names;                     // function or kernel -> name
  std::multimap<uint64_t, uint64_t> children;                // parent -> its named ids
};

}  // namespace parts

namespace {

parts::LastingNames& names() { return client_state().lasting_names.get(); }

// With the lock held.
void name(uint64_t id, uint64_t parent, std::string lasting) {
  names().names[id] = std::move(lasting);
  names().children.emplace(parent, id);
}

}  // namespace

void note_image(uint64_t parent, const protocol::ImageHash& hash) {
  std::lock_guard lock(names().mu);
  names().images[parent] = hash;
}

void name_lookup(uint64_t id, uint64_t parent, char kind, std::string_view lookup) {
  std::lock_guard lock(names().mu);
  auto it = names().images.find(parent);
  if (it == names().images.end()) return;
  std::string lasting(1, kind);
  lasting.append(it->second.begin(), it->second.end());
  lasting += lookup;
  name(id, parent, std::move(lasting));
}

void name_kernel_function(uint64_t fn, uint64_t kernel, int dev) {
  std::lock_guard lock(names().mu);
  auto it = names().names.find(kernel);
  if (it == names().names.end()) return;
  name(fn, kernel, "F" + std::to_string(dev) + ":" + it->second);
}

bool lasting_name(uint64_t id, std::string* out) {
  std::lock_guard lock(names().mu);
  auto it = names().names.find(id);
  if (it == names().names.end()) return false;
  *out = it->second;
  return true;
}

bool named_kernel(uint64_t id) {
  std::lock_guard lock(names().mu);
  auto it = names().names.find(id);
  return it != names().names.end() && it->second[0] == 'k';
}

void forget_names(uint64_t parent) {
  std::lock_guard lock(names().mu);
  names().images.erase(parent);
  std::vector<uint64_t> gone;
  auto take_children = [&](uint64_t of) {
    auto [first, last] = names().children.equal_range(of);
    for (auto it = first; it != last; ++it) gone.push_back(it->second);
    names().children.erase(first, last);
  };
  take_children(parent);
  // A kernel's functions are named under the kernel.
  for (size_t i = 0, lookups = gone.size(); i < lookups; ++i) take_children(gone[i]);
  for (uint64_t id : gone) names().names.erase(id);
}

}  // namespace scuda::client
