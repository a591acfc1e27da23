// An IPC handle as another process hands it over: 64 untrusted bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "protocol/ipc_handle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t handle[64] = {};
  std::memcpy(handle, data, size < sizeof handle ? size : sizeof handle);
  scuda::protocol::decode_ipc_handle(handle);
  return 0;
}
