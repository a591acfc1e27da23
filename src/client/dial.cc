#include "client/dial.h"

#include <fmt/format.h>

#include "protocol/frame_io.h"
#include "protocol/ops.h"

namespace scuda::client {

Socket dial(const std::string& address, const protocol::Hello& hello, protocol::Frame* reply,
            std::string* error) {
  HostPort hp;
  if (!parse_host_port(address, &hp, error)) return Socket();
  Socket s = connect_tcp(hp, error);
  if (!s.valid()) {
    // Only a server that cannot be reached may not be running; one that
    // answers says what is wrong itself.
    *error += " (is `scuda server` running there? The address comes from --server, SCUDA_SERVER "
              "or ~/.config/scuda/host)";
    return s;
  }
  protocol::Writer w;
  protocol::encode(hello, w);
  protocol::FrameHeader h;
  h.op = protocol::kOpHello;
  if (!protocol::write_frame(s, h, w.data().data(), w.size())) {
    *error = fmt::format("connection to {} failed during the handshake", address);
    return Socket();
  }
  std::string why;
  if (protocol::read_frame(s, reply, &why) != protocol::ReadStatus::kOk) {
    *error = why.empty() ? fmt::format("server {} closed the connection during the handshake", address)
                         : why;
    return Socket();
  }
  if (reply->header.flags & protocol::kError) {
    *error = fmt::format("server {} refused the connection: {}", address,
                         std::string(reply->payload.begin(), reply->payload.end()));
    return Socket();
  }
  return s;
}

}  // namespace scuda::client
