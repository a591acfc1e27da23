// The handshake's payloads, decoded from untrusted bytes: the Hello a
// server reads from any client, and the Welcome and admission-queue
// position a client reads from a server.
#include <cstddef>
#include <cstdint>

#include "protocol/codec.h"
#include "protocol/handshake.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    scuda::protocol::Reader r(data, size);
    scuda::protocol::Hello hello;
    scuda::protocol::decode(r, &hello);
  }
  {
    scuda::protocol::Reader r(data, size);
    scuda::protocol::Welcome welcome;
    scuda::protocol::decode(r, &welcome);
  }
  {
    scuda::protocol::Reader r(data, size);
    scuda::protocol::QueuePosition position;
    scuda::protocol::decode(r, &position);
  }
  return 0;
}
