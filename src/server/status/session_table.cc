#include "server/status/session_table.h"

#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>

#include <cuda.h>
#include <fmt/format.h>

namespace scuda::server {

namespace {

void copy_text(char* out, size_t room, const std::string& text) {
  const size_t n = std::min(room - 1, text.size());
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

}  // namespace

int64_t unix_now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

SessionTable* SessionTable::create(std::string* error) {
  void* p = mmap(nullptr, sizeof(SessionTable), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                 -1, 0);
  if (p == MAP_FAILED) {
    *error = fmt::format("cannot map the session table: {}", std::strerror(errno));
    return nullptr;
  }
  auto* table = new (p) SessionTable;  // never unmapped: it lives as long as the server
  table->started_ms = unix_now_ms();
  return table;
}

SessionSlot* SessionTable::take(const std::string& peer) {
  for (SessionSlot& slot : slots) {
    if (slot.state.load(std::memory_order_relaxed) != kSlotFree) continue;
    slot.generation.fetch_add(1, std::memory_order_relaxed);
    slot.pid.store(0, std::memory_order_relaxed);
    slot.started_ms = unix_now_ms();
    copy_text(slot.peer, sizeof slot.peer, peer);
    slot.program[0] = '\0';
    slot.token[0] = '\0';
    slot.priority = 0;
    slot.position.store(0, std::memory_order_relaxed);
    slot.wait_reason.store(kWaitUnknown, std::memory_order_relaxed);
    for (auto* n : {&slot.bytes_in, &slot.bytes_out, &slot.requests, &slot.errors,
                    &slot.device_memory, &slot.charged})
      n->store(0, std::memory_order_relaxed);
    slot.state.store(kSlotOpening, std::memory_order_release);
    return &slot;
  }
  return nullptr;
}

void SessionTable::release(SessionSlot* slot) {
  // Readers retry while the sequence is odd or has moved, so they never see
  // an ended session counted twice or not at all.
  fold_sequence.fetch_add(1, std::memory_order_acq_rel);
  ended.bytes_in += slot->bytes_in.load();
  ended.bytes_out += slot->bytes_out.load();
  ended.requests += slot->requests.load();
  ended.errors += slot->errors.load();
  slot->state.store(kSlotFree, std::memory_order_release);
  fold_sequence.fetch_add(1, std::memory_order_acq_rel);
}

void SessionTable::release(pid_t pid) {
  for (SessionSlot& slot : slots)
    if (slot.state.load() != kSlotFree && slot.pid.load() == pid) return release(&slot);
}

uint64_t SessionTable::charged_to(const char* name) const {
  uint64_t sum = 0;
  for (const SessionSlot& slot : slots)
    if (holds_place(slot.state.load(std::memory_order_acquire)) &&
        strncmp(slot.token, name, sizeof slot.token) == 0)
      sum += slot.charged.load();
  return sum;
}

namespace {

// The pid's parent, from /proc; 0 when it cannot be read.
pid_t parent_of(pid_t pid) {
  FILE* f = std::fopen(fmt::format("/proc/{}/stat", pid).c_str(), "r");
  if (!f) return 0;
  // The command name in parentheses may hold spaces: the parent comes after
  // its last ')' and the state letter.
  char line[512] = {};
  const size_t n = std::fread(line, 1, sizeof line - 1, f);
  std::fclose(f);
  const char* end = static_cast<const char*>(memrchr(line, ')', n));
  int parent = 0;
  return end && std::sscanf(end + 1, " %*c %d", &parent) == 1 ? parent : 0;
}

// Whether `slot` still names the session that held `pid` at `generation`,
// and the pid is a child of this server's listener.
bool still_the_session(const SessionSlot& slot, pid_t pid, uint32_t generation) {
  return parent_of(pid) == getppid() &&
         slot.generation.load(std::memory_order_acquire) == generation && slot.pid.load() == pid &&
         slot.state.load() != kSlotFree;
}

// Signals the session in `slot` that held pid `pid` at `generation`. The
// listener frees a slot only after it reaped the pid, which another program
// may then take: the signal goes through a pidfd, to a process that is a
// child of this server's listener while the slot still names it. Where
// pidfds are missing (kernels before 5.3, or a seccomp filter that refuses
// them) the same checks come before a plain kill, which leaves the window
// between the check and the signal open.
bool signal_session(const SessionSlot& slot, pid_t pid, uint32_t generation) {
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) {
    const bool no_pidfd = errno == ENOSYS || errno == EPERM;
    return no_pidfd && still_the_session(slot, pid, generation) && kill(pid, SIGTERM) == 0;
  }
  // Alive after the checks: the pid still named the pidfd's process when
  // its parent was read.
  const bool sent = still_the_session(slot, pid, generation) &&
                    syscall(SYS_pidfd_send_signal, fd, 0, nullptr, 0) == 0 &&
                    syscall(SYS_pidfd_send_signal, fd, SIGTERM, nullptr, 0) == 0;
  close(fd);
  return sent;
}

}  // namespace

int SessionTable::end_sessions_of(const std::string& name) {
  int ended = 0;
  for (SessionSlot& slot : slots) {
    const uint32_t generation = slot.generation.load(std::memory_order_acquire);
    const uint32_t state = slot.state.load(std::memory_order_acquire);
    const pid_t pid = slot.pid.load();
    if ((holds_place(state) || state == kSlotQueued) && pid > 0 && pid != getpid() &&
        name.size() < sizeof slot.token &&
        strncmp(slot.token, name.c_str(), sizeof slot.token) == 0 &&
        signal_session(slot, pid, generation))
      ++ended;
  }
  return ended;
}

// A shared (not process-private) futex: the table is mapped into every
// process of the server.
void wait_on_slot(SessionSlot* slot, uint32_t state, int ms) {
  timespec t{ms / 1000, (ms % 1000) * 1000000L};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&slot->state), FUTEX_WAIT, state, &t, nullptr, 0);
}

void wake_slot(SessionSlot* slot) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&slot->state), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

void SessionReport::authenticated(const std::string& name, int priority) {
  if (!slot_) return;
  copy_text(slot_->token, sizeof slot_->token, name);
  slot_->priority = priority;
}

void SessionReport::active(const std::string& program) {
  if (!slot_) return;
  copy_text(slot_->program, sizeof slot_->program, program);
  slot_->pid.store(getpid(), std::memory_order_relaxed);
  table_->sessions_started.fetch_add(1, std::memory_order_relaxed);
  slot_->state.store(kSlotActive, std::memory_order_release);
}

void SessionReport::request(size_t bytes) {
  if (!slot_) return;
  slot_->requests.fetch_add(1, std::memory_order_relaxed);
  slot_->bytes_in.fetch_add(bytes, std::memory_order_relaxed);
}

void SessionReport::received(size_t bytes) {
  if (slot_) slot_->bytes_in.fetch_add(bytes, std::memory_order_relaxed);
}

void SessionReport::sent(size_t bytes) {
  if (slot_) slot_->bytes_out.fetch_add(bytes, std::memory_order_relaxed);
}

void SessionReport::result(uint32_t rc) {
  if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_NOT_READY) error();
}

void SessionReport::error() {
  if (slot_) slot_->errors.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace scuda::server
