#include "client/handle_errors.h"

#include <mutex>
#include <unordered_map>

#include "client/state.h"
#include "common/lock_order.h"

namespace scuda::client {

namespace parts {

struct HandleErrors {
  RankedMutex mu{LockRank::kReplyTables, "HandleErrors::mu"};
  std::unordered_map<uint64_t, CUresult> by_id;
};

}  // namespace parts

namespace {

parts::HandleErrors& errors() { return client_state().handle_errors.get(); }

}  // namespace

void note_handle_error(uint64_t id, CUresult rc) {
  std::lock_guard lock(errors().mu);
  errors().by_id[id] = rc;
}

CUresult handle_error(uint64_t id) {
  std::lock_guard lock(errors().mu);
  auto it = errors().by_id.find(id);
  return it == errors().by_id.end() ? CUDA_SUCCESS : it->second;
}

}  // namespace scuda::client
