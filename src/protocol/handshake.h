// The handshake: the client's Hello and the server's Welcome, which carries
// the snapshot of the devices that the client answers queries from. A Hello
// that names a session to join opens that session's callback channel.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/codec.h"

namespace scuda::protocol {

struct Hello {
  uint64_t api_hash = 0;     // generated op table both sides must share
  int32_t cuda_version = 0;  // CUDA_VERSION of the headers the client was built with
  std::string token;
  std::string program;       // the client's program name, for the server's logs
  // Only on a callback channel's handshake (docs/protocol.md, "Host
  // callbacks"): the session to join, as it named itself, and its secret.
  std::string join = {};
  std::string secret = {};
};

struct DeviceInfo {
  std::string name;
  CUuuid uuid{};
  uint64_t total_mem = 0;
  std::string pci_bus_id;
  // Indexed by CUdevice_attribute; attr_ok is 0 where the driver refused.
  std::vector<int32_t> attrs;
  std::vector<uint8_t> attr_ok;
};

struct Welcome {
  int32_t driver_version = 0;
  uint32_t session_pid = 0;
  std::vector<DeviceInfo> devices;
};

void encode(const Hello& h, Writer& w);
bool decode(Reader& r, Hello* h);
void encode(const Welcome& w, Writer& out);
bool decode(Reader& r, Welcome* w);

// Compares secrets in time that depends only on their lengths.
bool tokens_equal(const std::string& a, const std::string& b);

}  // namespace scuda::protocol
