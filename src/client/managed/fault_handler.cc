#include "client/managed/fault_handler.h"

#include <execinfo.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include <spdlog/spdlog.h>

#include "common/lock_order.h"

namespace scuda::client::faults {

namespace {

// The claimed ranges, readable from the handler without locks. A slot is
// free while its begin is 0.
constexpr size_t kSlots = 16384;
std::atomic<uintptr_t> g_begin[kSlots];
std::atomic<uintptr_t> g_end[kSlots];
std::atomic<size_t> g_used{0};  // slots at or past this were never used
RankedMutex g_claim_mu{LockRank::kLeaf, "g_claim_mu"};

struct sigaction g_previous;
int g_pipe[2] = {-1, -1};
Resolver g_resolve = nullptr;
Background g_background = nullptr;
std::atomic<pid_t> g_service_tid{0};
// The process the service thread runs in: a forked child has no such
// thread, so its faults in managed memory are not served (never waited
// on forever).
std::atomic<pid_t> g_service_pid{0};

// A fault on its way to the service thread; it lives on the faulting
// thread's stack until `state` leaves kPending.
enum : uint32_t { kPending = 0, kServed = 1, kNotOurs = 2 };
struct Fault {
  uintptr_t address;
  bool write;
  uint32_t state;
};

bool claimed(uintptr_t address) {
  const size_t used = g_used.load(std::memory_order_acquire);
  for (size_t i = 0; i < used; ++i) {
    const uintptr_t begin = g_begin[i].load(std::memory_order_acquire);
    if (begin && address >= begin && address < g_end[i].load(std::memory_order_acquire))
      return true;
  }
  return false;
}

long futex(uint32_t* word, int op, uint32_t value) {
  return syscall(SYS_futex, word, op, value, nullptr, nullptr, 0);
}

// Hands the fault to the service thread and waits; true once it is served.
bool hand_over(uintptr_t address, bool store) {
  Fault fault{address, store, kPending};
  // The pipe carries the fault's address; the waiting thread owns it.
  const auto p = reinterpret_cast<uintptr_t>(&fault);
  if (write(g_pipe[1], &p, sizeof p) != sizeof p) return false;
  while (__atomic_load_n(&fault.state, __ATOMIC_ACQUIRE) == kPending)
    futex(&fault.state, FUTEX_WAIT_PRIVATE, kPending);
  return fault.state == kServed;
}

// The program's handler, as if ours were not there. With the default
// action, returning re-runs the access, which now kills the process.
void chain(int sig, siginfo_t* info, void* context) {
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) g_previous.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous.sa_handler == SIG_DFL || g_previous.sa_handler == SIG_IGN) {
    signal(sig, SIG_DFL);
    return;
  }
  g_previous.sa_handler(sig);
}

// Writes "scuda: <what> <address>\n" to stderr with async-signal-safe calls
// only.
void say(const char* what, uintptr_t address) {
  char line[160];
  size_t n = 0;
  auto put = [&](const char* text) {
    while (*text && n < sizeof line - 20) line[n++] = *text++;
  };
  put("scuda: ");
  put(what);
  put(" 0x");
  for (int shift = 60; shift >= 0; shift -= 4)
    line[n++] = "0123456789abcdef"[(address >> shift) & 15];
  line[n++] = '\n';
  [[maybe_unused]] const ssize_t written = write(STDERR_FILENO, line, n);
}

// The faulting instruction and the stack that led to it, by library and
// offset, so that a crash report names the code that crashed. backtrace's
// first call loads libgcc_s, so start() calls it once outside any fault.
void print_stack(const void* context) {
  const auto* uc = static_cast<const ucontext_t*>(context);
  if (uc != nullptr) say("the faulting instruction is at", uc->uc_mcontext.gregs[REG_RIP]);
  void* frames[32];
  const int n = backtrace(frames, 32);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
}

// A fault that ends the process says whether it was in managed memory, so
// that a crash in a library is told apart from one of scuda's coherence.
void explain(bool in_managed, uintptr_t address, const void* context) {
  const bool fatal = !(g_previous.sa_flags & SA_SIGINFO) &&
                     (g_previous.sa_handler == SIG_DFL || g_previous.sa_handler == SIG_IGN);
  if (in_managed) say("a fault in managed memory could not be served, at", address);
  else if (fatal) say("segmentation fault outside managed memory, at", address);
  if (in_managed || fatal) print_stack(context);
}

// Whether the faulting access was a store: the page-fault error code's
// write bit, so that a store is made writable in one round instead of
// being served read-only and faulting again.
bool is_write(const void* context) {
  constexpr greg_t kWriteBit = 2;
  const auto* uc = static_cast<const ucontext_t*>(context);
  return uc != nullptr && (uc->uc_mcontext.gregs[REG_ERR] & kWriteBit);
}

void on_fault(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const auto address = reinterpret_cast<uintptr_t>(info->si_addr);
  const bool in_managed = claimed(address);
  const bool ours = info->si_code == SEGV_ACCERR && in_managed &&
                    getpid() == g_service_pid.load(std::memory_order_relaxed) &&
                    syscall(SYS_gettid) != g_service_tid.load(std::memory_order_relaxed);
  const bool served = ours && hand_over(address, is_write(context));
  errno = saved_errno;
  if (served) return;
  explain(in_managed, address, context);
  chain(sig, info, context);
}

// Whether another fault is in the pipe: faults go before background work.
bool fault_waiting() {
  pollfd pending{g_pipe[0], POLLIN, 0};
  return poll(&pending, 1, 0) > 0;
}

void* serve(void*) {
  g_service_tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
  for (;;) {
    uintptr_t address = 0;
    const ssize_t n = read(g_pipe[0], &address, sizeof address);
    if (n != sizeof address) {
      if (n < 0 && errno == EINTR) continue;
      spdlog::error("the managed-memory fault service stopped: {}", std::strerror(errno));
      return nullptr;
    }
    Fault* fault = reinterpret_cast<Fault*>(address);
    const uint32_t state = g_resolve(fault->address, fault->write) ? kServed : kNotOurs;
    __atomic_store_n(&fault->state, state, __ATOMIC_RELEASE);
    futex(&fault->state, FUTEX_WAKE_PRIVATE, 1);
    if (state == kServed && !fault_waiting()) g_background();
  }
}

bool start(Resolver resolve, Background background) {
  g_resolve = resolve;
  g_background = background;
  g_service_pid.store(getpid(), std::memory_order_relaxed);
  void* warm_up[1];
  backtrace(warm_up, 1);
  if (pipe2(g_pipe, O_CLOEXEC) != 0) {
    spdlog::error("managed memory: cannot create the fault pipe: {}", std::strerror(errno));
    return false;
  }
  // The service thread takes no signals of the program's.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t thread;
  const int rc = pthread_create(&thread, nullptr, serve, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    spdlog::error("managed memory: cannot start the fault service thread: {}", std::strerror(rc));
    return false;
  }
  pthread_detach(thread);
  struct sigaction action {};
  action.sa_sigaction = on_fault;
  action.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGSEGV, &action, &g_previous) != 0) {
    spdlog::error("managed memory: cannot install the SIGSEGV handler: {}", std::strerror(errno));
    return false;
  }
  return true;
}

// A library that installs its own SIGSEGV handler after ours (a crash
// reporter) gets managed-memory faults first; unless it hands them on, the
// program dies at its next touch of a managed page. Putting ours back in
// front could loop (its handler may chain to ours), so the log says it,
// once, for the crash that may follow.
void check_still_ours() {
  static std::atomic<bool> warned{false};
  struct sigaction now {};
  if (sigaction(SIGSEGV, nullptr, &now) != 0) return;
  if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_fault) return;
  if (warned.exchange(true)) return;
  spdlog::warn(
      "another library replaced scuda's SIGSEGV handler, which serves managed and "
      "mapped host memory; if it does not pass faults on, the program dies at its next "
      "touch of such memory");
}

}  // namespace

bool install(Resolver resolve, Background background) {
  static const bool ok = start(resolve, background);
  if (ok) check_still_ours();
  return ok;
}

bool claim(uintptr_t begin, uintptr_t end) {
  std::lock_guard lock(g_claim_mu);
  const size_t used = g_used.load();
  for (size_t i = 0; i < kSlots; ++i) {
    if (i < used && g_begin[i].load()) continue;
    g_end[i].store(end, std::memory_order_release);
    g_begin[i].store(begin, std::memory_order_release);
    if (i >= used) g_used.store(i + 1, std::memory_order_release);
    return true;
  }
  return false;
}

void release(uintptr_t begin) {
  std::lock_guard lock(g_claim_mu);
  const size_t used = g_used.load();
  for (size_t i = 0; i < used; ++i)
    if (g_begin[i].load() == begin) g_begin[i].store(0, std::memory_order_release);
}

}  // namespace scuda::client::faults
