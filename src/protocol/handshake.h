// The handshake: the client's Hello and the server's Welcome, which carries
// the snapshot of the devices that the client answers queries from. A Hello
// that names a session to join opens another connection to that session:
// its callback channel, or a lane.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "protocol/codec.h"
#include "protocol/layout.h"
#include "protocol/ops.h"

namespace scuda::protocol {

// A module image, named as load requests name it.
struct ImageRef {
  ImageHash hash{};
  uint64_t size = 0;
};

// The most images a Hello may ask the session to keep.
constexpr uint64_t kMaxKeptImages = 256;

// Each message is a layout (layout.h): its fields cross in the order
// fields() names them, and decode() then checks the bounds the fields'
// types cannot say.
struct Hello {
  uint64_t api_hash = 0;     // generated op table both sides must share
  int32_t cuda_version = 0;  // CUDA_VERSION of the headers the client was built with
  std::string token;
  std::string program;  // the client's program name, for the server's logs
  // Only on a joining connection's handshake (docs/protocol.md,
  // "Handshake"): the session's join point, as it named it, and its secret.
  std::string join = {};
  std::string secret = {};
  // Images the server's cache held on this client's earlier runs: the
  // session keeps those it still has, so that their loads need not wait
  // (docs/protocol.md, "Module images").
  std::vector<ImageRef> images = {};
  // The client's CUDA_VISIBLE_DEVICES, which its session applies
  // (server/listener/visible_devices.h); unset (0): every GPU the server offers.
  uint8_t visible_set = 0;
  std::string visible = {};
  auto fields() {
    return std::tie(api_hash, cuda_version, token, program, join, secret, images, visible_set,
                    visible);
  }
};

struct DeviceInfo {
  std::string name;
  CUuuid uuid{};
  uint64_t total_mem = 0;
  std::string pci_bus_id;
  // Indexed by CUdevice_attribute; attr_ok is 0 where the driver refused.
  std::vector<int32_t> attrs;
  std::vector<uint8_t> attr_ok;
  auto fields() { return std::tie(name, uuid, total_mem, pci_bus_id, attrs, attr_ok); }
};

struct Welcome {
  int32_t driver_version = 0;
  uint32_t session_pid = 0;
  std::vector<DeviceInfo> devices;
  std::vector<uint8_t> images_kept;  // 1 or 0 for each of the Hello's images
  auto fields() { return std::tie(driver_version, session_pid, devices, images_kept); }
};

// The client's place in the server's admission queue (kOpQueuePosition),
// sent while its HELLO waits there.
struct QueuePosition {
  uint32_t position = 0;  // 1: first in line
  uint32_t waiting = 0;   // clients in line
  std::string reason;     // why it waits, in words
  auto fields() { return std::tie(position, waiting, reason); }
};

void encode(const QueuePosition& q, Writer& w);
bool decode(Reader& r, QueuePosition* q);
void encode(const Hello& h, Writer& w);
bool decode(Reader& r, Hello* h);
void encode(const Welcome& w, Writer& out);
bool decode(Reader& r, Welcome* w);

// Compares secrets in time that depends only on their lengths.
bool tokens_equal(const std::string& a, const std::string& b);

}  // namespace scuda::protocol
