// What a malicious server can send a client: the first byte picks the part.
// Even: the bytes are a server's whole side of a connection (the handshake's
// answer, then replies and output frames), read by the client's Connection
// while it waits for replies in each way it has (receive, receive_into with a
// layout, deliver_later, handle_later). Odd: the bytes are one reply payload
// or callback channel message, given to the client's decoders of them.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/kernels/kernel_arguments.h"
#include "client/kernels/layouts.h"
#include "client/memory/registered_memory.h"
#include "client/modules/held_images.h"
#include "client/transport/callback_channel.h"
#include "client/transport/connection.h"
#include "client_gen.h"
#include "common/socket.h"
#include "protocol/changed_blocks.h"
#include "protocol/frame_io.h"
#include "protocol/op_layouts.h"
#include "protocol/ops.h"

namespace {

using namespace scuda;
using client::Connection;
using protocol::Reader;

int g_listener = -1;
std::string g_address;

// The reply decoders of generated stubs (client_gen.h) over a few shapes.
void decode_generated(const uint8_t* data, size_t size) {
  Reader r(data, size);
  CUstream stream = nullptr;
  client::gen::get_out_handle(r, &stream);
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  client::gen::get_inout(r, &desc);
  uint8_t buf[40];
  client::gen::get_out_buf(r, buf, sizeof buf);
  CUgraphNode nodes[4];
  client::gen::get_out_handles(r, nodes, 4);
  CUuuid ids[3];
  client::gen::get_out_items(r, ids, 3);
  client::gen::finish(r, "fuzz");
}

// A kernel's parameter layout from the server, then the program's arguments
// packed by it. Each argument has the most room a parameter may take.
void decode_layout(const uint8_t* data, size_t size) {
  constexpr uint64_t kFunction = 0x7000;
  static std::vector<uint8_t> argument(64 << 10);
  static std::vector<void*> params(32768, argument.data());
  Reader r(data, size);
  protocol::op::ParamSlots slots;
  protocol::read_field(r, slots);
  if (!r.ok() || !slots || !client::valid_layout(*slots)) return;
  client::note_layout(kFunction, std::make_shared<const client::Layout>(std::move(*slots)));
  protocol::Writer w;
  client::pack_arguments(kFunction, params.data(), nullptr, w);
}

// The decoders of reply payloads and callback channel messages.
void decode_payload(const uint8_t* data, size_t size) {
  decode_generated(data, size);
  decode_layout(data, size);
  {
    Reader r(data, size);
    uint64_t id = 0;
    client::read_load_reply(r, protocol::ImageHash{}, 1, true, &id);
  }
  {
    Reader r(data, size);
    client::registered::apply_changes(r);
  }
  {
    // A changed-block pull's reply, for 1 MiB in 64 KiB blocks.
    static std::vector<uint8_t> held(1u << 20);
    Reader r(data, size);
    size_t changed = 0;
    std::string why;
    protocol::read_changed(r, held.data(), held.size(), 64u << 10, &changed, &why);
  }
  if (size >= 9) {
    // A channel frame's op, then its payload after the callback's id.
    const uint32_t ops[] = {protocol::kOpHostCallback, protocol::kOpLogMessage,
                            protocol::kOpAsyncNotification};
    Reader r(data + 9, size - 9);
    uint64_t id = 0;
    std::memcpy(&id, data + 1, sizeof id);
    client::run_reached(ops[data[0] % 3], id, r);
  }
}

// The fake server: answers the HELLO with `bytes`, then reads what the
// client sends until it closes.
void serve(Socket s, const uint8_t* bytes, size_t size) {
  protocol::Frame hello;
  std::string why;
  if (protocol::read_frame(s, &hello, &why) != protocol::ReadStatus::kOk) return;
  s.write_all(bytes, size);
  shutdown(s.fd(), SHUT_WR);
  uint8_t sink[65536];
  while (read(s.fd(), sink, sizeof sink) > 0) {
  }
  // Closed with a reset: a run makes more connections than the ports that
  // TIME_WAIT would hold.
  const linger reset{1, 0};
  setsockopt(s.fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
}

// A client that waits for replies in every way it can, with the lock held
// as its callers hold it.
void converse(Connection& c) {
  std::lock_guard lock(c.mutex());
  const uint8_t head[8] = {};
  uint64_t later = 0, handled = 0, awaited = 0, into = 0;
  uint8_t delivered[64];
  if (!c.send(protocol::kOpMemcpyDtoH, 0, head, sizeof head, nullptr, 0, &later)) return;
  c.deliver_later(later, delivered, sizeof delivered);
  if (!c.send(protocol::kOp_cuStreamCreate, 0, head, sizeof head, nullptr, 0, &handled)) return;
  c.handle_later(handled, [](CUresult rc, Reader& r) {
    const size_t n = r.remaining();
    decode_generated(r.take(n), n);
    return rc;
  });
  if (!c.send(protocol::kOpModuleGetFunction, protocol::kSynchronizing, head, sizeof head, nullptr,
              0, &awaited))
    return;
  std::vector<uint8_t> reply;
  if (c.receive(awaited, &reply) == CUDA_SUCCESS) decode_payload(reply.data(), reply.size());
  // Three rows of 16 bytes, 32 apart.
  uint8_t rows[80];
  if (!c.send(protocol::kOpMemcpy3D, 0, head, sizeof head, nullptr, 0, &into)) return;
  c.receive_into(into, rows, 48, client::HostLayout{16, 32, 3, 96});
  c.settle_all();
  c.take_deferred_error();
}

void run_connection(const uint8_t* data, size_t size) {
  std::thread server;
  {
    Connection c;
    std::string error;
    server = std::thread([&] {
      Socket s(accept4(g_listener, nullptr, nullptr, SOCK_CLOEXEC));
      if (s.valid()) serve(std::move(s), data, size);
    });
    if (c.open(g_address, "", {}, &error)) converse(c);
  }
  server.join();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  signal(SIGPIPE, SIG_IGN);
  spdlog::set_level(spdlog::level::off);
  // No waits: a refused or queued client gives up at once, and a reply is
  // not spun for.
  setenv("SCUDA_WAIT_TIMEOUT", "0", 1);
  setenv("SCUDA_CONNECT_RETRY", "0", 1);
  setenv("SCUDA_SPIN_US", "0", 1);
  // Output frames go to stdout, which libFuzzer does not need.
  if (int null = open("/dev/null", O_WRONLY); null >= 0) dup2(null, STDOUT_FILENO);
  g_listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(g_listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      listen(g_listener, 4) != 0 ||
      getsockname(g_listener, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    abort();
  g_address = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 65536) return 0;
  if (data[0] % 2 == 0) run_connection(data + 1, size - 1);
  else decode_payload(data + 1, size - 1);
  return 0;
}
