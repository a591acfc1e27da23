#include "client/transport/connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "client/stats.h"
#include "client/transport/dial.h"
#include "client/transport/upload_progress.h"
#include "common/config.h"
#include "common/tls_client.h"
#include "protocol/frame_io.h"
#include "protocol/op_layouts.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

std::string program_name() {
  char buf[256] = {};
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "unknown";
}

}  // namespace

// A session that serves a request sends a heartbeat several times a second
// (server/session/heartbeat.h), so a wait for a reply that hears nothing for this
// long means the server is frozen, killed without closing, or cut off.
std::chrono::milliseconds server_silence_limit() {
  static const unsigned seconds = env_number("SCUDA_SERVER_TIMEOUT", 0, 86400, 15);
  return std::chrono::seconds(seconds);
}

protocol::Hello Connection::hello() const {
  protocol::Hello h{protocol::kApiHash, CUDA_VERSION, token_, program_name()};
  // The driver reads it at cuInit; the session's driver reads it for us.
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (visible && !offer_all_) {
    h.visible_set = 1;
    h.visible = visible;
  }
  return h;
}

bool Connection::open(const std::string& address, const std::string& token,
                      const std::vector<protocol::ImageRef>& images, std::string* error) {
  address_ = tls::with_default_port(address);
  token_ = token;
  protocol::Hello h = hello();
  h.images = images;
  protocol::Frame f;
  socket_ = dial(address_, h, &f, error);
  if (!socket_.valid()) return false;
  protocol::Reader r(f.payload);
  if (r.u32() != CUDA_SUCCESS || !protocol::decode(r, &welcome_) ||
      welcome_.images_kept.size() != images.size()) {
    *error = fmt::format("server {} sent a malformed handshake reply", address_);
    return false;
  }
  spdlog::debug("connected to {} (session {}, driver {}, {} devices)", address_,
                welcome_.session_pid, welcome_.driver_version, welcome_.devices.size());
  socket_.set_idle_limit(server_silence_limit());
  return true;
}

Socket Connection::join(const std::string& name, const std::string& secret,
                        std::string* error) const {
  protocol::Hello h = hello();
  h.join = name;
  h.secret = secret;
  protocol::Frame f;
  Socket s = dial(address_, h, &f, error, name);
  if (!s.valid()) return s;
  protocol::Reader r(f.payload);
  if (r.u32() != CUDA_SUCCESS || !r.done()) {
    *error = fmt::format("server {} sent a malformed answer to a join of its session", address_);
    return Socket();
  }
  return s;
}

bool Connection::send(uint32_t op, uint16_t flags, const void* head, size_t head_size,
                      const void* tail, size_t tail_size, uint64_t* id) {
  if (broken_) return false;
  protocol::FrameHeader h;
  h.op = op;
  h.flags = flags;
  h.request_id = next_request_++;
  if (id) *id = h.request_id;
  if (flags & protocol::kWantChanges) changes_asked_ = true;
  if (stats::enabled())
    stats::count_send(op, protocol::kHeaderSize + head_size + tail_size, flags & protocol::kOneWay);
  if ((flags & protocol::kOneWay) && outbox_.hold(h, head, head_size, tail, tail_size))
    return !outbox_.full() || flush_held();
  std::lock_guard write(outbox_.write_lock());
  const bool sent =
      shows_upload_progress(op, head_size + tail_size)
          ? write_with_progress(h, head, head_size, tail, tail_size)
          : protocol::write_frame(socket_, h, head, head_size, tail, tail_size, outbox_.held());
  outbox_.sent();
  if (!sent) lost("the connection broke while sending");
  return sent;
}

// Slices of a megabyte: a progress line is at most that late.
bool Connection::write_with_progress(const protocol::FrameHeader& h, const void* head,
                                     size_t head_size, const void* tail, size_t tail_size) {
  UploadProgress progress(h.op, address_, head_size + tail_size);
  return protocol::write_frame_in_slices(socket_, h, head, head_size, tail, tail_size,
                                         outbox_.held(), 1u << 20,
                                         [&](size_t n) { progress.sent(n); });
}

bool Connection::flush_held() {
  if (outbox_.held().empty()) return true;
  std::lock_guard write(outbox_.write_lock());
  const bool sent = write_held(outbox_.held());
  outbox_.sent();
  if (!sent) lost("the connection broke while sending");
  return sent;
}

// Nothing is written once the connection is lost: the socket is shut down.
bool Connection::write_held(std::span<const uint8_t> bytes) {
  return !broken_ && socket_.write_all(bytes.data(), bytes.size());
}

namespace {

// How long a wait for a reply spins before its thread sleeps (README,
// SCUDA_SPIN_US): on a fast link most replies come within it. CUDA's own
// waits spin too.
std::chrono::microseconds reply_spin() {
  static const std::chrono::microseconds spin(
      env_number("SCUDA_SPIN_US", 0, 10000, kWaitSpin.count()));
  return spin;
}

}  // namespace

namespace {

std::string silence_message() {
  return fmt::format(
      "no word from the server for {} s: it is frozen, stopped or cut off from "
      "this machine (SCUDA_SERVER_TIMEOUT sets the limit, 0 waits for ever)",
      std::chrono::duration_cast<std::chrono::seconds>(server_silence_limit()).count());
}

}  // namespace

bool Connection::next_header(protocol::FrameHeader* h, CUresult* result) {
  for (;;) {
    uint8_t header[protocol::kHeaderSize];
    std::string why;
    if (!reader_.read(header, sizeof header, reply_spin())) {
      *result = lost(socket_.timed_out() ? silence_message() : "the server closed the connection");
      return false;
    }
    if (!protocol::decode_header(header, h, &why)) {
      *result = lost(why);
      return false;
    }
    if (!(h->flags & protocol::kOutput)) return true;
    if (h->op == protocol::kOpMirrorPull) {
      if (!changes_asked_) {
        *result = lost("the server sent changes of registered memory that nothing asked for");
        return false;
      }
      std::vector<uint8_t> changes(h->length);
      if (!reader_.read(changes.data(), changes.size())) {
        *result = lost("the server closed the connection");
        return false;
      }
      mirror_changes_.push_back(std::move(changes));
      continue;
    }
    std::string text(h->length, '\0');
    if (!reader_.read(text.data(), text.size())) {
      *result = lost("the server closed the connection");
      return false;
    }
    if (text.empty()) continue;  // a heartbeat
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
}

bool Connection::reply_head(uint64_t id, CUresult* result, size_t* rest) {
  if (broken_) {
    *result = CUDA_ERROR_DEVICE_UNAVAILABLE;
    return false;
  }
  protocol::FrameHeader h;
  if (!next_header(&h, result)) return false;
  if (h.flags & protocol::kError) {
    std::string message(h.length, '\0');
    reader_.read(message.data(), message.size());
    *result = lost("the server ended the session: " + message);
    return false;
  }
  uint32_t word = 0;
  if (!(h.flags & protocol::kReply) || h.request_id != id || h.length < sizeof word ||
      !reader_.read(&word, sizeof word)) {
    *result = lost("the server sent an unexpected frame");
    return false;
  }
  reply_op_ = h.op;
  *result = static_cast<CUresult>(word);
  *rest = h.length - sizeof word;
  return true;
}

void Connection::count_reply(size_t rest, std::chrono::steady_clock::time_point start) {
  if (awaiting_) spdlog::debug("waited for the reply to {}", protocol::op_name(reply_op_));
  if (!stats::enabled()) return;
  const auto waited = std::chrono::steady_clock::now() - start;
  stats::count_reply(reply_op_, protocol::kHeaderSize + sizeof(uint32_t) + rest,
                     std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count(),
                     awaiting_);
}

CUresult Connection::receive(uint64_t id, std::vector<uint8_t>* reply) {
  awaited_.fetch_add(1, std::memory_order_relaxed);
  ReadTurn turn(*this);
  if (CUresult rc = deliver_before(id); broken_) return rc;
  return read_reply(id, reply);
}

CUresult Connection::read_reply(uint64_t id, std::vector<uint8_t>* reply) {
  const auto start = std::chrono::steady_clock::now();
  CUresult rc;
  size_t rest = 0;
  if (!reply_head(id, &rc, &rest)) return rc;
  reply->resize(rest);
  if (!reader_.read(reply->data(), rest)) return lost("the server closed the connection");
  count_reply(rest, start);
  return rc;
}

CUresult Connection::receive_into(uint64_t id, void* dst, size_t size) {
  return receive_into(id, dst, size, HostLayout::contiguous(size));
}

CUresult Connection::receive_into(uint64_t id, void* dst, size_t size, const HostLayout& layout) {
  awaited_.fetch_add(1, std::memory_order_relaxed);
  ReadTurn turn(*this);
  if (CUresult rc = deliver_before(id); broken_) return rc;
  return read_into(id, dst, size, layout);
}

namespace {

void scatter(const uint8_t* src, size_t size, void* dst, const HostLayout& l) {
  for (size_t i = 0; i * l.row < size; ++i) {
    const size_t at = i / l.rows_per_slice * l.slice_pitch + i % l.rows_per_slice * l.pitch;
    std::memcpy(static_cast<uint8_t*>(dst) + at, src + i * l.row, l.row);
  }
}

}  // namespace

CUresult Connection::read_into(uint64_t id, void* dst, size_t size, const HostLayout& layout) {
  const auto start = std::chrono::steady_clock::now();
  CUresult rc;
  size_t rest = 0;
  if (!reply_head(id, &rc, &rest)) return rc;
  if (rc == CUDA_SUCCESS && rest == size && layout.is_contiguous(size)) {
    if (!reader_.read(dst, size)) return lost("the server closed the connection");
  } else if (rc == CUDA_SUCCESS && rest == size) {
    std::vector<uint8_t> packed(size);
    if (!reader_.read(packed.data(), size)) return lost("the server closed the connection");
    scatter(packed.data(), size, dst, layout);
  } else {
    if (!reader_.skip(rest)) return lost("the server closed the connection");
    if (rc == CUDA_SUCCESS) rc = lost("the server sent a reply of the wrong size");
  }
  count_reply(rest, start);
  return rc;
}

bool Connection::sync_context(uint64_t ctx_id) {
  if (ctx_id == server_context_) return true;
  const protocol::Writer w = protocol::encode(protocol::op::CtxSetCurrent::Request{ctx_id});
  if (!send(protocol::op::CtxSetCurrent::kOp, protocol::kOneWay, w.data().data(), w.size()))
    return false;
  server_context_ = ctx_id;
  return true;
}

// Shut down, not closed: another thread may be reading or writing the
// socket, and a closed descriptor's number could be reused under it.
CUresult Connection::lost(const std::string& why) {
  if (!broken_.exchange(true))
    spdlog::error("lost the connection to scuda server {}: {}; every CUDA call fails from now on",
                  address_, why);
  ::shutdown(socket_.fd(), SHUT_RDWR);
  return CUDA_ERROR_DEVICE_UNAVAILABLE;
}

}  // namespace scuda::client
