#include "client/transport/dial.h"

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

using Clock = std::chrono::steady_clock;
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
          spdlog::warn(
              "nothing listens at {} yet; trying again for up to {} s "
              "(SCUDA_CONNECT_RETRY)",
              address, std::chrono::duration_cast<seconds>(retry_window()).count());
      });
}

// How long the handshake's reply may take: the session loads the driver and
// looks at every GPU first.
constexpr milliseconds kHandshakeLimit = seconds(60);

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
    *error +=
        " (is `scuda server` running there? The address comes from --server, SCUDA_SERVER "
        "or ~/.config/scuda/host)";
    return s;
  }
  if (!route.empty() && !protocol::write_join_route(s, route)) {
    *error = fmt::format("connection to {} failed while it joined its session", address);
    return Socket();
  }
  if (target.tls && !start_tls(s, hp.host, error)) return Socket();
  return s;
}

// SCUDA_WAIT_TIMEOUT: for how many seconds a client waits for a server at
// its limit of sessions to take it (0: it does not wait).
seconds wait_timeout() {
  static const unsigned s = env_number("SCUDA_WAIT_TIMEOUT", 0, 86400, 300);
  return seconds(s);
}

// "1st", "2nd", "3rd", "4th", ... "11th", "12th", "13th", "21st".
std::string ordinal(uint32_t n) {
  const uint32_t tens = n % 100, ones = n % 10;
  const char* suffix = tens >= 11 && tens <= 13 ? "th"
                       : ones == 1              ? "st"
                       : ones == 2              ? "nd"
                       : ones == 3              ? "rd"
                                                : "th";
  return std::to_string(n) + suffix;
}

// A wait in the server's admission queue: said when the place changes and
// at least every half minute, and bounded by SCUDA_WAIT_TIMEOUT.
class QueueWait {
 public:
  explicit QueueWait(Clock::time_point start) : start_(start) {}

  bool waiting() const { return !last_.reason.empty(); }
  bool over() const { return Clock::now() - start_ >= wait_timeout(); }
  // How long the next read may wait: until the wait's end, within the
  // handshake's limit.
  milliseconds read_limit() const {
    if (!waiting()) return kHandshakeLimit;
    const auto left =
        std::chrono::duration_cast<milliseconds>(start_ + wait_timeout() - Clock::now());
    return std::clamp(left, milliseconds(1), kHandshakeLimit);
  }
  void heard(const protocol::QueuePosition& q) {
    const bool moved = q.position != last_.position;
    last_ = q;
    if (!moved && Clock::now() - said_ < seconds(30)) return;
    said_ = Clock::now();
    spdlog::warn(
        "waiting for a GPU: {} in line ({}); waited {} s of up to {} s "
        "(SCUDA_WAIT_TIMEOUT)",
        ordinal(q.position), q.reason, waited().count(), wait_timeout().count());
  }
  std::string gave_up(const std::string& address) const {
    return fmt::format(
        "server {} did not take the client: it was {} in line ({}) and waited {} s "
        "(SCUDA_WAIT_TIMEOUT sets how long)",
        address, ordinal(last_.position), last_.reason, waited().count());
  }

 private:
  seconds waited() const { return std::chrono::round<seconds>(Clock::now() - start_); }

  Clock::time_point start_;
  Clock::time_point said_{};
  protocol::QueuePosition last_;
};

// A place in line, if `f` tells one.
bool queue_position(const protocol::Frame& f, protocol::QueuePosition* q) {
  if ((f.header.flags & protocol::kError) || f.header.op != protocol::kOpQueuePosition)
    return false;
  protocol::Reader r(f.payload);
  return protocol::decode(r, q);
}

// Why the handshake's read failed, in words for the user.
std::string read_failure(const Socket& s, const std::string& address, std::string why) {
  if (s.timed_out())
    why = fmt::format(
        "server {} accepted the connection but did not answer its handshake in "
        "{} s: it is frozen or overloaded",
        address, std::chrono::duration_cast<seconds>(kHandshakeLimit).count());
  if (why.empty())
    why = fmt::format("server {} closed the connection during the handshake", address);
  if (std::string tls_why = tls::explain_refusal(s.tls_error()); !tls_why.empty()) return tls_why;
  return why;
}

// Reads the HELLO's answer, past the places in line the server tells while
// the client waits in its admission queue; false when it did not come.
bool read_answer(Socket& s, const std::string& address, QueueWait& queue, protocol::Frame* reply,
                 std::string* error) {
  for (;;) {
    std::string why;
    const milliseconds limit = queue.read_limit();
    s.set_idle_limit(limit);
    const bool read = protocol::read_frame(s, reply, &why) == protocol::ReadStatus::kOk;
    // A read bounded by the wait's end times out at that end, give or take
    // the clock's rounding.
    const bool wait_ended = !read && s.timed_out() && limit < kHandshakeLimit;
    if (queue.waiting() && (queue.over() || wait_ended)) {
      *error = queue.gave_up(address);
      return false;
    }
    if (!read) {
      *error = read_failure(s, address, why);
      return false;
    }
    protocol::QueuePosition q;
    if (!queue_position(*reply, &q)) return true;
    queue.heard(q);
  }
}

// One attempt; *busy says the server turned the client away only because it
// is at its limit of connections.
Socket dial_once(const std::string& address, const std::string& route, const protocol::Hello& hello,
                 protocol::Frame* reply, QueueWait& queue, std::string* error, bool* busy) {
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
  if (!read_answer(s, address, queue, reply, error)) return Socket();
  s.set_idle_limit(milliseconds(0));
  if (reply->header.flags & protocol::kError) {
    *busy = reply->header.op == protocol::kErrorBusy;
    *error = fmt::format("server {} refused the connection: {}", address,
                         std::string(reply->payload.begin(), reply->payload.end()));
    return Socket();
  }
  return s;
}

}  // namespace

// A server at its limit of sessions keeps the client in its admission queue
// (read_answer); one that holds as many connections as it can is asked
// again, every few seconds, until it takes the client or the wait's limit
// passes; that wait is said at its start and every half minute.
Socket dial(const std::string& address, const protocol::Hello& hello, protocol::Frame* reply,
            std::string* error, const std::string& route) {
  const auto start = Clock::now();
  QueueWait queue(start);
  seconds next_word(0);
  bool busy = false;
  Socket s = with_retries(
      wait_timeout(), milliseconds(250), milliseconds(2000),
      [&](bool* again) {
        Socket attempt = dial_once(address, route, hello, reply, queue, error, &busy);
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
