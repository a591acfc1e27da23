// The session's map from client-chosen handle ids to the driver's handles.
// Every handle that arrives from the network is resolved here, so a client
// can name only objects of its own session, and only as the right kind.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "handle_kinds.h"

namespace scuda::server {

class HandleTable {
 public:
  // Resolves a client id to the driver handle of kind `kind`. Id 0 resolves
  // to nullptr; for streams, ids 1 and 2 resolve to CU_STREAM_LEGACY and
  // CU_STREAM_PER_THREAD. A CUkernel id is accepted where a CUfunction is
  // expected, as the driver does. Returns false for anything else.
  bool resolve(uint64_t id, HandleKind kind, void** real) const;
  // True when `proposed` may name a new object: not reserved, not in use.
  bool can_bind(uint64_t proposed) const;
  // Records `real` under `proposed` and returns the id the client must use
  // from now on: the existing one when `real` is already known as this
  // kind and the client reads the answer (`answered`). A client that sent
  // its request one-way uses `proposed` whatever the session answers, and
  // an id known as another kind is a destroyed object's whose address the
  // driver gave the new one: `proposed` is bound then.
  uint64_t bind(uint64_t proposed, HandleKind kind, void* real, bool answered = true);
  // Records `real` under `id` even when the session knows it by another id:
  // for a client that handed `id` out before the reply. find(real) keeps
  // answering the first id.
  void alias(uint64_t id, HandleKind kind, void* real);
  // Looks up the id of a driver handle the session already knows; 0 if none.
  uint64_t find(void* real) const;
  void forget(uint64_t id);
  // Keeps `bytes` alive until `id` is forgotten: bytes the driver's object
  // reads for as long as it lives (a library loaded without a copy).
  void lend(uint64_t id, std::shared_ptr<const std::string> bytes);

 private:
  struct Entry {
    HandleKind kind;
    void* real;
    std::shared_ptr<const std::string> lent;
  };
  std::unordered_map<uint64_t, Entry> by_id_;
  std::unordered_map<void*, uint64_t> by_real_;
};

}  // namespace scuda::server
