#include "common/server_request.h"

#include <cuda.h>

#include <fmt/format.h>

#include "common/socket.h"
#include "common/tls_client.h"
#include "protocol/frame_io.h"
#include "protocol/handshake.h"
#include "protocol/ops.h"

namespace scuda {

namespace {

// Runs TLS on `s` as the library's clients do (common/tls_client.h).
bool start_tls(Socket& s, const std::string& host, std::string* error) {
  const auto context = tls::client_context_from_env(error);
  return context && tls::connect(s, *context, host, std::chrono::seconds(10), error);
}

// A connection to the server, over TLS where the address or environment
// asks for it; invalid with *error saying whether nothing listens there,
// the host cannot be reached, or TLS failed.
Socket connect_to(const std::string& address, std::string* error) {
  const tls::Target target = tls::target_of(address);
  HostPort hp;
  if (!parse_host_port(target.address, &hp, error)) return Socket();
  bool refused = false;
  Socket s = connect_tcp(hp, error, std::chrono::seconds(10), &refused);
  if (!s.valid() && refused)
    *error = fmt::format(
        "nothing listens at {} (connection refused): is scuda server running "
        "there, on that port?",
        address);
  else if (!s.valid()) *error = fmt::format("cannot reach {}: {}", address, *error);
  if (s.valid() && target.tls && !start_tls(s, hp.host, error)) return Socket();
  return s;
}

bool exchange(const ServerRequest& request, Socket& s, protocol::Frame* reply, std::string* error) {
  protocol::Writer w;
  protocol::encode(protocol::Hello{protocol::kApiHash, CUDA_VERSION, request.token, "scuda"}, w);
  protocol::FrameHeader h;
  h.op = request.op;
  s.set_idle_limit(request.wait);
  std::string why;
  if (protocol::write_frame(s, h, w.data().data(), w.size()) &&
      protocol::read_frame(s, reply, &why) == protocol::ReadStatus::kOk)
    return true;
  *error = fmt::format("{} accepted the connection but did not answer as a scuda server{}",
                       request.address, why.empty() ? "" : ": " + why);
  if (const std::string tls_why = tls::explain_refusal(s.tls_error()); !tls_why.empty())
    *error = tls_why;
  return false;
}

}  // namespace

bool ask_server(const ServerRequest& request, std::vector<uint8_t>* body, std::string* error) {
  Socket s = connect_to(tls::with_default_port(request.address), error);
  protocol::Frame reply;
  if (!s.valid() || !exchange(request, s, &reply, error)) return false;
  if (reply.header.flags & protocol::kError) {
    *error =
        fmt::format("the scuda server at {} refused {}: {}", request.address, request.refused_what,
                    std::string(reply.payload.begin(), reply.payload.end()));
    return false;
  }
  protocol::Reader r(reply.payload);
  if (const uint32_t rc = r.u32(); !r.ok() || rc != CUDA_SUCCESS) {
    *error =
        fmt::format("the scuda server at {} could not answer (CUDA error {})", request.address, rc);
    return false;
  }
  body->assign(reply.payload.begin() + sizeof(uint32_t), reply.payload.end());
  return true;
}

}  // namespace scuda
