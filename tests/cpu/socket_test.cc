// Socket::read_some with a spin: bytes due within it are read without the
// thread sleeping, and it still waits for bytes due later.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <chrono>
#include <thread>

#include "common/socket.h"

namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// Times this thread gave up the processor to wait.
long waits() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_nvcsw;
}

struct Pair {
  Pair() {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    reader = scuda::Socket(fds[0]);
    writer = scuda::Socket(fds[1]);
  }
  // Writes `byte` after `delay`, from another thread.
  std::thread later(milliseconds delay, char byte) {
    return std::thread([this, delay, byte] {
      std::this_thread::sleep_for(delay);
      writer.write_all(&byte, 1);
    });
  }
  scuda::Socket reader, writer;
};

TEST(SocketSpin, BytesDueWithinTheSpinAreReadWithoutSleeping) {
  Pair p;
  std::thread w = p.later(milliseconds(5), 'a');
  const long before = waits();
  char got = 0;
  EXPECT_EQ(p.reader.read_some(&got, 1, microseconds(2'000'000)), 1);
  EXPECT_EQ(waits() - before, 0);
  EXPECT_EQ(got, 'a');
  w.join();
}

TEST(SocketSpin, BytesDueAfterTheSpinAreWaitedFor) {
  Pair p;
  std::thread w = p.later(milliseconds(50), 'b');
  const long before = waits();
  char got = 0;
  EXPECT_EQ(p.reader.read_some(&got, 1, microseconds(1000)), 1);
  EXPECT_GE(waits() - before, 1);
  EXPECT_EQ(got, 'b');
  w.join();
}

TEST(SocketSpin, AClosedPeerEndsTheSpin) {
  Pair p;
  p.writer.close();
  char got = 0;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(p.reader.read_some(&got, 1, microseconds(2'000'000)), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1000));
}

}  // namespace
