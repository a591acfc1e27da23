// What a 4-byte synchronous copy's round trip is made of: a loopback TCP
// ping-pong (13 bytes out, 4 back, as scuda bench's raw ping) with each end
// waiting in a blocking recv or spinning on a non-blocking one, and the
// GPU's own 4-byte device-to-host copy, the ways a program or the scuda
// server may make it.
//   g++ -O2 -std=c++20 tests/gpu/diagnostics/sync_latency.cc -I/usr/local/cuda/include \
//       -lcuda -lpthread -o /tmp/sync_latency && /tmp/sync_latency
// A synchronous copy's round trip is the ping-pong plus the GPU's own copy,
// and spinning instead of blocking in recv shortens the ping-pong on each end
// that does it; that is why the client's and the session's waits spin a while
// (README). Figures: docs/bench/micro.md, "4-byte synchronous copy".
#include <cuda.h>
#include <errno.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "loopback.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRounds = 20000;

// Reads n bytes, spinning on non-blocking reads when `spin`.
bool take(int fd, char* p, size_t n, bool spin) {
  if (!spin) return read_all(fd, p, n);
  while (n) {
    const ssize_t k = ::recv(fd, p, n, MSG_DONTWAIT);
    if (k == 0 || (k < 0 && errno != EAGAIN)) return false;
    if (k > 0) {
      p += k;
      n -= static_cast<size_t>(k);
    }
  }
  return true;
}

template <class F>
double median_us(F&& once) {
  std::vector<double> us;
  for (int i = 0; i < kRounds; ++i) {
    const auto t0 = Clock::now();
    once();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  return us[us.size() / 2];
}

void ping_pong(bool client_spins, bool peer_spins) {
  int a, b;
  connected_pair(&a, &b);
  std::thread peer([&] {
    char req[13], ans[4] = {};
    while (take(b, req, sizeof req, peer_spins) && write_all(b, ans, sizeof ans)) {
    }
  });
  char req[13] = {}, ans[4];
  const double us = median_us([&] {
    write_all(a, req, sizeof req);
    take(a, ans, sizeof ans, client_spins);
  });
  std::printf("tcp ping-pong, client %s, peer %s: %.2f us\n", client_spins ? "spins" : "blocks",
              peer_spins ? "spins" : "blocks", us);
  shutdown(a, SHUT_RDWR);
  peer.join();
  close(a);
  close(b);
}

void gpu_copies() {
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr d;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx) || cuMemAlloc(&d, 4)) {
    std::printf("no GPU\n");
    return;
  }
  char pageable[4];
  void* pinned = nullptr;
  cuMemHostAlloc(&pinned, 4, 0);
  static char registered[1 << 20];
  cuMemHostRegister(registered, sizeof registered, 0);
  CUstream s;
  cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  std::printf("cuMemcpyDtoH, pageable: %.2f us\n",
              median_us([&] { cuMemcpyDtoH(pageable, d, 4); }));
  std::printf("cuMemcpyDtoH, cuMemHostAlloc: %.2f us\n",
              median_us([&] { cuMemcpyDtoH(pinned, d, 4); }));
  std::printf("cuMemcpyDtoHAsync + cuStreamSynchronize, legacy stream, registered: %.2f us\n",
              median_us([&] {
                cuMemcpyDtoHAsync(registered, d, 4, nullptr);
                cuStreamSynchronize(nullptr);
              }));
  std::printf("cuMemcpyDtoHAsync + cuStreamSynchronize, own stream, registered: %.2f us\n",
              median_us([&] {
                cuMemcpyDtoHAsync(registered, d, 4, s);
                cuStreamSynchronize(s);
              }));
}

}  // namespace

int main() {
  ping_pong(false, false);
  ping_pong(true, false);
  ping_pong(false, true);
  ping_pong(true, true);
  gpu_copies();
}
