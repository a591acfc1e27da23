#include "client/dial.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "common/config.h"
#include "common/tls_client.h"

#include "protocol/frame_io.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// SCUDA_CONNECT_TIMEOUT: seconds one connect attempt may take (a host that
// drops packets never refuses).
milliseconds connect_timeout() {
  static const unsigned s = env_number("SCUDA_CONNECT_TIMEOUT", 1, 3600, 10);
  return seconds(s);
}

// SCUDA_CONNECT_RETRY: for how many seconds a refused connect is tried
// again (a server restarting, or started together with its clients).
milliseconds retry_window() {
  static const unsigned s = env_number("SCUDA_CONNECT_RETRY", 0, 3600, 3);
  return seconds(s);
}

// Calls attempt(&again) until it returns a valid socket or leaves `again`
// false, pausing between tries (from `first`, doubling up to `most`) while
// the next try would start within `window` of the first; says(waited) comes
// before each pause.
template <class Attempt, class Say>
Socket with_retries(milliseconds window, milliseconds first, milliseconds most, Attempt attempt,
                    Say say) {
  const auto start = std::chrono::steady_clock::now();
  for (milliseconds pause = first;; pause = std::min(pause * 2, most)) {
    bool again = false;
    Socket s = attempt(&again);
    const auto waited = std::chrono::steady_clock::now() - start;
    if (s.valid() || !again || waited + pause > window) return s;
    say(std::chrono::duration_cast<seconds>(waited));
    std::this_thread::sleep_for(pause);
  }
}

// Connects, trying again while nothing listens at the address, for at most
// the retry window.
Socket connect_with_retry(const HostPort& hp, const std::string& address, std::string* error) {
  bool said = false;
  return with_retries(
      retry_window(), milliseconds(100), milliseconds(1000),
      [&](bool* refused) { return connect_tcp(hp, error, connect_timeout(), refused); },
      [&](seconds) {
        if (!std::exchange(said, true))
          spdlog::warn("nothing listens at {} yet; trying again for up to {} s "
                       "(SCUDA_CONNECT_RETRY)",
                       address, std::chrono::duration_cast<seconds>(retry_window()).count());
      });
}

// How long the handshake's reply may take: the session loads the driver and
// looks at every GPU first.
constexpr milliseconds kHandshakeLimit = seconds(60);

// A join's route: the one frame the server reads in the clear to hand the
// connection to its session, which alone can run TLS for it.
bool send_route(Socket& s, const std::string& route) {
  protocol::Writer w;
  w.str(route);
  protocol::FrameHeader h;
  h.op = protocol::kOpJoinRoute;
  return protocol::write_frame(s, h, w.data().data(), w.size());
}

bool start_tls(Socket& s, const std::string& host, std::string* error) {
  std::string why;
  const auto context = tls::client_context_from_env(&why);
  if (!context) {
    *error = "TLS: " + why;
    return false;
  }
  return tls::connect(s, *context, host, kHandshakeLimit, error);
}

// Connects, sends the route of a join, and runs TLS where it is on.
Socket open_transport(const std::string& address, const std::string& route, std::string* error) {
  const tls::Target target = tls::target_of(address);
  HostPort hp;
  if (!parse_host_port(target.address, &hp, error)) return Socket();
  Socket s = connect_with_retry(hp, address, error);
  if (!s.valid()) {
    // Only a server that cannot be reached may not be running; one that
    // answers says what is wrong itself.
    *error += " (is `scuda server` running there? The address comes from --server, SCUDA_SERVER "
              "or ~/.config/scuda/host)";
    return s;
  }
  if (!route.empty() && !send_route(s, route)) {
    *error = fmt::format("connection to {} failed while it joined its session", address);
    return Socket();
  }
  if (target.tls && !start_tls(s, hp.host, error)) return Socket();
  return s;
}

// One attempt; *busy says the server turned the client away only because it
// is at its limit of sessions.
Socket dial_once(const std::string& address, const std::string& route,
                 const protocol::Hello& hello, protocol::Frame* reply, std::string* error,
                 bool* busy) {
  *busy = false;
  Socket s = open_transport(address, route, error);
  if (!s.valid()) return s;
  protocol::Writer w;
  protocol::encode(hello, w);
  protocol::FrameHeader h;
  h.op = protocol::kOpHello;
  if (!protocol::write_frame(s, h, w.data().data(), w.size())) {
    *error = fmt::format("connection to {} failed during the handshake", address);
    return Socket();
  }
  std::string why;
  s.set_idle_limit(kHandshakeLimit);
  if (protocol::read_frame(s, reply, &why) != protocol::ReadStatus::kOk) {
    if (s.timed_out())
      why = fmt::format("server {} accepted the connection but did not answer its handshake in "
                        "{} s: it is frozen or overloaded", address,
                        std::chrono::duration_cast<seconds>(kHandshakeLimit).count());
    *error = why.empty() ? fmt::format("server {} closed the connection during the handshake", address)
                         : why;
    if (const std::string tls_why = tls::explain_refusal(s.tls_error()); !tls_why.empty())
      *error = tls_why;
    return Socket();
  }
  s.set_idle_limit(milliseconds(0));
  if (reply->header.flags & protocol::kError) {
    *busy = reply->header.op == protocol::kErrorBusy;
    *error = fmt::format("server {} refused the connection: {}", address,
                         std::string(reply->payload.begin(), reply->payload.end()));
    return Socket();
  }
  return s;
}

// SCUDA_WAIT_TIMEOUT: for how many seconds a client waits for a server at
// its limit of sessions to take it (0: it does not wait).
seconds wait_timeout() {
  static const unsigned s = env_number("SCUDA_WAIT_TIMEOUT", 0, 86400, 300);
  return seconds(s);
}

}  // namespace

// A server at its limit of sessions is asked again, every few seconds,
// until it takes the client or the wait's limit passes; the wait is said at
// its start and every half minute.
Socket dial(const std::string& address, const protocol::Hello& hello, protocol::Frame* reply,
            std::string* error, const std::string& route) {
  const auto start = std::chrono::steady_clock::now();
  seconds next_word(0);
  bool busy = false;
  Socket s = with_retries(
      wait_timeout(), milliseconds(250), milliseconds(2000),
      [&](bool* again) {
        Socket attempt = dial_once(address, route, hello, reply, error, &busy);
        *again = busy;
        return attempt;
      },
      [&](seconds waited) {
        if (waited < next_word) return;
        spdlog::warn("waiting for a GPU: {}; waited {} s of up to {} s (SCUDA_WAIT_TIMEOUT)",
                     std::string(reply->payload.begin(), reply->payload.end()), waited.count(),
                     wait_timeout().count());
        next_word = waited + seconds(30);
      });
  if (busy)
    *error += fmt::format(
        " (waited {} s; SCUDA_WAIT_TIMEOUT sets how long)",
        std::chrono::duration_cast<seconds>(std::chrono::steady_clock::now() - start).count());
  return s;
}

}  // namespace scuda::client
