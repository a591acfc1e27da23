// Descriptors a session shares with the other sessions of its server
// (protocol/ipc_handle.h): exported device memory, allocation handles and
// memory pools. A session keeps each exported descriptor under a random
// secret and serves it, over a local socket named after its pid, to any
// process of the same user that presents the reference; a session that
// imports fetches it from there (fetch_export).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "common/socket.h"
#include "protocol/ipc_handle.h"

namespace scuda::server {

class IpcExports {
 public:
  // Keeps `fd`, a descriptor of `size` bytes of memory (0 for a pool), for
  // other sessions to fetch, and says its reference. An export under the
  // same non-zero `key` (a mapping's address) is reused. False, with *error
  // saying why, when the local socket cannot be opened.
  bool add(Socket fd, uint64_t size, uint64_t key, protocol::IpcRef* ref, std::string* error);
  // Drops the exports made under `key`: the memory behind it is unmapped.
  void drop(uint64_t key);

 private:
  struct Export {
    Socket fd;
    uint64_t size = 0;
    uint64_t key = 0;
    protocol::IpcRef ref;
  };
  bool serving(std::string* error);
  void serve(Socket listener);
  void answer(Socket& peer);

  std::mutex mu_;
  bool serving_ = false;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Export> exports_;  // by id
};

// Fetches the descriptor `ref` names from the session that exported it, and
// the size it was exported with; an invalid socket, with *error saying why,
// when that session is gone or refuses.
Socket fetch_export(const protocol::IpcRef& ref, uint64_t* size, std::string* error);

}  // namespace scuda::server
