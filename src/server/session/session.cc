#include "server/session/session.h"

#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "protocol/frame_io.h"
#include "protocol/handshake.h"
#include "protocol/ops.h"
#include "server/callbacks/callback_channel.h"
#include "server/kernels/module_cache.h"
#include "server/listener/visible_devices.h"
#include "server/memory/memory_quota.h"
#include "server/session/dispatch.h"
#include "server/session/join_point.h"
#include "server/session/queue_wait.h"
#include "server/session/snapshot.h"
#include "server/status/session_table.h"
#include "server/status/status_answer.h"

namespace scuda::server {

using protocol::Frame;
using protocol::FrameHeader;
using protocol::ReadStatus;

Session::Session(Socket socket, SessionOptions options)
    : socket_(std::move(socket)), options_(std::move(options)) {}

namespace {

// The handshake's deadline: the process is this connection's alone, so an
// alarm that ends it is the whole of the clean-up.
void on_handshake_alarm(int) {
  static const char line[] = "scuda session: no handshake in time; closing the connection\n";
  [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, line, sizeof line - 1);
  _exit(1);
}

void arm_handshake_alarm(std::chrono::milliseconds timeout) {
  signal(SIGALRM, on_handshake_alarm);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(timeout).count();
  itimerval t{};
  t.it_value.tv_sec = us / 1000000;
  t.it_value.tv_usec = us % 1000000;
  setitimer(ITIMER_REAL, &t, nullptr);
}

void disarm_handshake_alarm() {
  itimerval t{};
  setitimer(ITIMER_REAL, &t, nullptr);
  signal(SIGALRM, SIG_DFL);
}

}  // namespace

int Session::run() {
  protocol::Hello hello;
  uint64_t hello_id = 0;
  uint32_t op = 0;
  set_admission({options_.tls, options_.tokens, options_.handshake_timeout, options_.job_key,
                 options_.table});
  arm_handshake_alarm(options_.handshake_timeout);
  const Opening opening = open_connection(&hello, &hello_id, &op);
  disarm_handshake_alarm();
  if (opening != Opening::kHello) return opening == Opening::kRouted ? 0 : 1;
  if (op == protocol::kOpStatus) return answer_status(socket_, hello_id, options_.table) ? 0 : 1;
  if (op == protocol::kOpTokenDrop) return drop_job_token(hello_id) ? 0 : 1;
  if (!take_place(hello_id)) return 0;
  if (!welcome(hello, hello_id)) return 1;
  if (!output_.start()) spdlog::warn("kernels' printf output stays on the server: no pipe for it");
  heartbeat_.start(socket_);
  return serve_requests();
}

int Session::serve_without_handshake(const DriverTable& driver) {
  driver_ = driver;
  return serve_requests();
}

int Session::serve_requests() {
  FrameHeader h;
  std::string error;
  for (std::chrono::microseconds spin{};;) {
    switch (reader_.header(&h, &error, spin)) {
      case ReadStatus::kClosed: spdlog::info("client went away; session ends"); return 0;
      case ReadStatus::kBad: refuse(0, error); return 1;
      case ReadStatus::kOk:
        if (!serve_one(h)) return 1;
        // A program that waited for a reply often sends its next request at
        // once; after a one-way request the session sleeps at once, so that a
        // stream of launches does not keep a core busy.
        spin = h.flags & protocol::kOneWay ? std::chrono::microseconds{} : kWaitSpin;
        break;
    }
  }
}

void Session::refuse(uint64_t request_id, const std::string& message, protocol::ErrorKind kind) {
  spdlog::warn("refusing client: {}", message);
  report_.error();
  protocol::write_error(socket_, request_id, message, kind);
}

// Checks a session's handshake; a status request carries a HELLO's payload
// too, for its token. A join's handshake goes to its session instead, after
// its route (join_point.h).
bool Session::check_hello(const Frame& f, protocol::Hello* hello) {
  protocol::Reader r(f.payload);
  if (!protocol::decode(r, hello)) {
    refuse(f.header.request_id, "malformed handshake");
    return false;
  }
  std::optional<Token> token;
  const bool dropping = f.header.op == protocol::kOpTokenDrop;
  if (const std::string why = hello_refusal(*hello, &token, dropping); !why.empty()) {
    refuse(f.header.request_id, why);
    return false;
  }
  if (token) token_ = *token;
  if (!hello->join.empty()) {
    refuse(f.header.request_id,
           "a join must send its route first: run the same scuda release "
           "on both machines");
    return false;
  }
  return true;
}

// Authentication came first: a client with a wrong token never waits. A
// status request takes no place and never comes here.
bool Session::take_place(uint64_t request_id) {
  report_.authenticated(token_.name, token_.priority);
  const WaitTerms terms{token_.name, token_.max_sessions, options_.max_sessions};
  switch (wait_for_place(socket_, request_id, options_.table, options_.slot, terms)) {
    case Wait::kAdmitted: return !dropped_meanwhile(request_id);
    case Wait::kServerStopping:
      refuse(request_id, "the server is stopping; try another server or later");
      return false;
    case Wait::kTokenRemoved:
      refuse(request_id, fmt::format("token '{}' was taken out of the server's tokens file while "
                                     "this client waited for a place; ask the server's admin for "
                                     "a current token",
                                     token_.name));
      return false;
    case Wait::kClientLeft: return false;
  }
  return false;
}

bool Session::welcome(const protocol::Hello& hello, uint64_t request_id) {
  std::string error;
  if (hello.visible_set && !apply_visible(hello.visible, request_id)) return false;
  if (!load_driver(options_.driver_path, &driver_, &error)) {
    refuse(request_id, "server: " + error);
    return false;
  }
  enforce_memory_quota(&driver_, {token_.name, token_.memory, options_.table, options_.slot});
  protocol::Welcome welcome;
  if (!take_snapshot(driver_, &welcome, &error)) {
    refuse(request_id, "server: " + error);
    return false;
  }
  if (welcome.driver_version / 1000 < hello.cuda_version / 1000) {
    refuse(request_id,
           fmt::format("the program was built for CUDA {}.{} but the server's driver supports "
                       "CUDA {}.{}: update the driver on the GPU host",
                       hello.cuda_version / 1000, hello.cuda_version % 1000 / 10,
                       welcome.driver_version / 1000, welcome.driver_version % 1000 / 10));
    return false;
  }
  welcome.session_pid = static_cast<uint32_t>(getpid());
  for (const protocol::ImageRef& image : hello.images)
    welcome.images_kept.push_back(module_cache().keep(image.hash, image.size) ? 1 : 0);
  spdlog::info("session {} for '{}' (token '{}') ready on driver {}", getpid(), hello.program,
               token_.name, driver_.path);
  report_.active(hello.program);
  protocol::Writer w;
  w.u32(CUDA_SUCCESS);
  protocol::encode(welcome, w);
  report_.sent(protocol::kHeaderSize + w.size());
  FrameHeader h;
  h.flags = protocol::kReply;
  h.op = protocol::kOpHello;
  h.request_id = request_id;
  return protocol::write_frame(socket_, h, w.data().data(), w.size());
}

// Before the driver starts: the client's CUDA_VISIBLE_DEVICES becomes the
// session's, in UUIDs of GPUs the server offers (visible_devices.h).
bool Session::apply_visible(const std::string& list, uint64_t request_id) {
  const std::vector<size_t> chosen = pick_visible(list, options_.offered_gpus);
  if (chosen.empty()) {
    refuse(request_id, fmt::format("the client's CUDA_VISIBLE_DEVICES='{}' names none of the {} "
                                   "GPUs this server offers ({}): give their indices, from 0, or "
                                   "their UUIDs",
                                   printable(list), options_.offered_gpus.size(),
                                   fmt::join(options_.offered_gpus, ", ")));
    return false;
  }
  const std::string value = session_visible(chosen, std::getenv("CUDA_VISIBLE_DEVICES"));
  setenv("CUDA_VISIBLE_DEVICES", value.c_str(), 1);
  spdlog::info("the client's CUDA_VISIBLE_DEVICES='{}' leaves the session {}", printable(list),
               value);
  return true;
}

namespace {

// Whether an op the client waits on (its row in op_list.h says answered)
// came one-way, which would lose its reply. An op the client sends one-way
// is answered when a request asks (tests do, to see its result); generated
// ops have no row, and their handlers serve either way. Handshake frames and
// the server's own have no handler at all.
bool answered_op_sent_one_way(const FrameHeader& rh) {
  return (rh.flags & protocol::kOneWay) && protocol::op_way(rh.op) == protocol::OpWay::kAnswered;
}

}  // namespace

bool Session::serve_one(const FrameHeader& rh) {
  const HandlerEntry* entry = find_handler(rh.op);
  if (!entry) {
    refuse(rh.request_id, fmt::format("unknown op {}", rh.op));
    return false;
  }
  if (answered_op_sent_one_way(rh)) {
    refuse(rh.request_id, fmt::format("malformed {} request: sent one-way, but it is answered",
                                      protocol::op_name(rh.op)));
    return false;
  }
  request_ = rh;
  report_.request(protocol::kHeaderSize + rh.length);
  const size_t size = entry->head ? std::min(entry->head, rh.length) : rh.length;
  if (size > payload_room_) {
    payload_ = std::make_unique_for_overwrite<uint8_t[]>(size);
    payload_room_ = size;
  }
  unread_ = rh.length - size;
  // Reading a large payload over a slow link takes time too: the client
  // may be waiting for the reply of a request behind this one.
  heartbeat_.enter();
  if (!reader_.read(payload_.get(), size)) return false;
  protocol::Reader in(payload_.get(), size);
  protocol::Writer out;
  CUresult rc = entry->fn(*this, in, out);
  if (rc == kMalformed) {
    heartbeat_.leave();
    const std::string why = std::exchange(malformed_why_, {});
    refuse(rh.request_id, fmt::format("malformed {} request{}{}", protocol::op_name(rh.op),
                                      why.empty() ? "" : ": ", why));
    return false;
  }
  const bool read_all = !lost_ && reader_.skip(unread_);
  heartbeat_.leave();
  if (!read_all) return false;
  unread_ = 0;
  if (rc == kReplied) return true;
  if (rh.flags & protocol::kOneWay) {
    if (rc != CUDA_SUCCESS)
      spdlog::debug("one-way {} request {} failed with {}; the next synchronizing call reports it",
                    protocol::op_name(rh.op), rh.request_id, static_cast<int>(rc));
    report_.result(rc);
    latch(rc);
    return true;
  }
  uint32_t result = settle(rc);
  if (result != rc) out.clear();
  if (!relay_output()) return false;
  // The handler's own result: a latched error was counted when it failed.
  report_.result(rc);
  report_.sent(protocol::kHeaderSize + sizeof result + out.size());
  FrameHeader h;
  h.flags = protocol::kReply;
  h.op = rh.op;
  h.request_id = rh.request_id;
  return protocol::write_frame(socket_, h, &result, sizeof result, out.data().data(), out.size());
}

CUresult Session::settle(CUresult rc) {
  if (!(request_.flags & protocol::kSynchronizing)) return rc;
  if (rc == CUDA_SUCCESS) rc = latched_;
  latched_ = CUDA_SUCCESS;
  return rc;
}

void Session::latch(CUresult rc) {
  if (latched_ == CUDA_SUCCESS) latched_ = rc;
}

// Only synchronizing replies carry it: the driver prints kernels' output
// when it synchronizes, and other replies are spared a system call.
bool Session::relay_output() {
  if (!(request_.flags & protocol::kSynchronizing)) return true;
  FrameHeader h;
  h.flags = protocol::kOutput;
  const std::string text = output_.take();
  for (size_t at = 0; at < text.size(); at += protocol::kMaxPayload) {
    const size_t n = std::min<size_t>(protocol::kMaxPayload, text.size() - at);
    report_.sent(protocol::kHeaderSize + n);
    if (!protocol::write_frame(socket_, h, text.data() + at, n)) return false;
  }
  if (!(request_.flags & protocol::kWantChanges)) return true;
  // The changes travel as output named mirror-pull, in a pull's reply's
  // layout: the client needs no request of its own for them.
  h.op = protocol::kOpMirrorPull;
  return mirrors_.take_window_changes(false, [&](protocol::Writer w) {
    report_.sent(protocol::kHeaderSize + w.size());
    return protocol::write_frame(socket_, h, w.data().data(), w.size());
  });
}

CUresult Session::begin_reply(size_t size, const void* data, size_t first) {
  heartbeat_.begin_reply();
  const CUresult rc = settle(CUDA_SUCCESS);
  if (!relay_output()) lost_ = true;
  const uint32_t result = rc;
  FrameHeader h;
  h.flags = protocol::kReply;
  h.op = request_.op;
  h.request_id = request_.request_id;
  h.length = static_cast<uint32_t>(sizeof result + (rc == CUDA_SUCCESS ? size : 0));
  report_.sent(protocol::kHeaderSize + h.length);
  uint8_t head[protocol::kHeaderSize + sizeof result];
  protocol::encode_header(h, head);
  std::memcpy(head + protocol::kHeaderSize, &result, sizeof result);
  iovec iov[2] = {{head, sizeof head}, {const_cast<void*>(data), rc == CUDA_SUCCESS ? first : 0}};
  if (!lost_ && !socket_.writev_all(iov, iov[1].iov_len ? 2 : 1)) lost_ = true;
  return rc;
}

bool Session::read_data(void* dst, size_t size) {
  if (lost_ || size > unread_ || !reader_.read(dst, size)) lost_ = true;
  else unread_ -= size;
  return !lost_;
}

bool Session::send_data(const void* data, size_t size) {
  if (!lost_ && !socket_.write_all(data, size)) lost_ = true;
  return !lost_;
}

bool Session::send_data(std::span<iovec> parts) {
  if (!lost_ && !socket_.writev_all(parts.data(), static_cast<int>(parts.size()))) lost_ = true;
  return !lost_;
}

CUresult Session::malformed(std::string why) {
  malformed_why_ = std::move(why);
  return kMalformed;
}

}  // namespace scuda::server
