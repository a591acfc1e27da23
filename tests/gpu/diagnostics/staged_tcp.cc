// What the server's staging costs a loopback TCP stream, with no scuda in
// the way: a receiver that copies each 2 MiB piece to the GPU as it lands
// (host-to-device), and a sender that copies pieces off the GPU before
// sending them (device-to-host), beside the same streams with no GPU work.
//   nvcc -O2 -std=c++20 staged_tcp.cc -lcuda -o staged_tcp && ./staged_tcp
// Neither the copies beside the stream nor 8 MiB requests against a ring of
// pieces kept ahead cost the stream anything measurable, but a receiver
// whose staging is not page-locked is slower (figures: docs/bench/micro.md,
// "What the diagnostics found").
#include <cuda.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "loopback.h"

namespace {

constexpr size_t kTotal = 256u << 20;
constexpr size_t kPiece = 2u << 20;
constexpr size_t kStaging = 16u << 20;

void check(CUresult rc, const char* what) {
  if (rc == CUDA_SUCCESS) return;
  std::fprintf(stderr, "%s failed: %d\n", what, rc);
  std::exit(1);
}

struct Env {
  CUcontext ctx;
  CUdeviceptr dev;
  uint8_t* staging;             // registered
  uint8_t* plain;               // not registered
  std::vector<uint8_t> client;  // the far end's buffer, as a program's
};

using Side = std::function<void(int fd)>;

// One timed transfer of kTotal: `server` runs on this thread, `client` on
// another, each with its end of a fresh connection.
double timed(Env& e, const Side& server, const Side& client) {
  int a, b;
  connected_pair(&a, &b);
  std::thread far([&] {
    check(cuCtxSetCurrent(e.ctx), "cuCtxSetCurrent");
    client(b);
  });
  const auto start = std::chrono::steady_clock::now();
  server(a);
  far.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  close(a);
  close(b);
  return kTotal * 8 / s / 1e9;
}

// Host to device: the client sends, the server receives.
Side upload_client(Env& e) {
  return [&e](int fd) { write_all(fd, e.client.data(), kTotal); };
}

Side receive_only(uint8_t* buf) {
  return [buf](int fd) {
    for (size_t at = 0; at < kTotal; at += kPiece) read_all(fd, buf + at % kStaging, kPiece);
  };
}

// scuda's server: each piece's copy is queued as soon as the piece is in;
// each 8 MiB half waits for its last copies before it is read into again.
Side receive_and_copy(Env& e, uint8_t* buf) {
  return [&e, buf](int fd) {
    CUevent done[2] = {};
    for (size_t at = 0; at < kTotal; at += kPiece) {
      const int half = at % kStaging >= kStaging / 2;
      if (at % (kStaging / 2) == 0 && done[half]) {
        check(cuEventSynchronize(done[half]), "cuEventSynchronize");
        cuEventDestroy(done[half]);
        done[half] = nullptr;
      }
      read_all(fd, buf + at % kStaging, kPiece);
      check(cuMemcpyHtoDAsync(e.dev + at, buf + at % kStaging, kPiece, nullptr), "HtoDAsync");
      if ((at + kPiece) % (kStaging / 2) == 0) {
        check(cuEventCreate(&done[half], CU_EVENT_DISABLE_TIMING), "cuEventCreate");
        check(cuEventRecord(done[half], nullptr), "cuEventRecord");
      }
    }
    check(cuCtxSynchronize(), "cuCtxSynchronize");
    for (CUevent ev : done)
      if (ev) cuEventDestroy(ev);
  };
}

// Device to host: the server sends, the client receives.
Side download_client(Env& e) {
  return [&e](int fd) { read_all(fd, e.client.data(), kTotal); };
}

Side send_only(uint8_t* buf) {
  return [buf](int fd) {
    for (size_t at = 0; at < kTotal; at += kPiece) write_all(fd, buf + at % kStaging, kPiece);
  };
}

// scuda's server today: per 8 MiB request, queue its 4 pieces' copies with
// an event each, then send each piece once its event is done.
Side chunked_send(Env& e, uint8_t* buf) {
  return [&e, buf](int fd) {
    constexpr size_t kChunk = 8u << 20;
    for (size_t chunk = 0; chunk < kTotal; chunk += kChunk) {
      CUevent ev[4];
      for (int i = 0; i < 4; ++i) {
        check(cuMemcpyDtoHAsync(buf + i * kPiece, e.dev + chunk + i * kPiece, kPiece, nullptr),
              "DtoHAsync");
        check(cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING), "cuEventCreate");
        check(cuEventRecord(ev[i], nullptr), "cuEventRecord");
      }
      for (int i = 0; i < 4; ++i) {
        check(cuEventSynchronize(ev[i]), "cuEventSynchronize");
        write_all(fd, buf + i * kPiece, kPiece);
        cuEventDestroy(ev[i]);
      }
    }
  };
}

// A ring of staging slots kept `ahead` pieces ahead of the socket.
Side ring_send(Env& e, uint8_t* buf, size_t ahead) {
  return [&e, buf, ahead](int fd) {
    const size_t slots = kStaging / kPiece;
    std::vector<CUevent> ev(slots);
    for (auto& x : ev) check(cuEventCreate(&x, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    const size_t pieces = kTotal / kPiece;
    auto queue = [&](size_t i) {
      check(cuMemcpyDtoHAsync(buf + i % slots * kPiece, e.dev + i * kPiece, kPiece, nullptr),
            "DtoHAsync");
      check(cuEventRecord(ev[i % slots], nullptr), "cuEventRecord");
    };
    for (size_t i = 0; i < std::min(ahead, pieces); ++i) queue(i);
    for (size_t i = 0; i < pieces; ++i) {
      check(cuEventSynchronize(ev[i % slots]), "cuEventSynchronize");
      write_all(fd, buf + i % slots * kPiece, kPiece);
      if (i + ahead < pieces) queue(i + ahead);
    }
    for (auto x : ev) cuEventDestroy(x);
  };
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  Env e;
  check(cuInit(0), "cuInit");
  CUdevice dev;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&e.ctx, dev), "retain");
  check(cuCtxSetCurrent(e.ctx), "cuCtxSetCurrent");
  check(cuMemAlloc(&e.dev, kTotal), "cuMemAlloc");
  auto map = [] {
    void* p = mmap(nullptr, kStaging, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    std::memset(p, 1, kStaging);
    return static_cast<uint8_t*>(p);
  };
  e.staging = map();
  e.plain = map();
  check(cuMemHostRegister(e.staging, kStaging, CU_MEMHOSTREGISTER_PORTABLE), "register");
  e.client.assign(kTotal, 1);
  struct Case {
    const char* name;
    Side server, client;
  };
  const std::vector<Case> cases = {
      {"h2d: receive only, 16 MiB ring", receive_only(e.staging), upload_client(e)},
      {"h2d: receive + HtoDAsync, registered", receive_and_copy(e, e.staging), upload_client(e)},
      {"h2d: receive + HtoDAsync, not registered", receive_and_copy(e, e.plain), upload_client(e)},
      {"d2h: send only", send_only(e.staging), download_client(e)},
      {"d2h: 8 MiB requests (scuda today)", chunked_send(e, e.staging), download_client(e)},
      {"d2h: ring, 1 ahead", ring_send(e, e.staging, 1), download_client(e)},
      {"d2h: ring, 3 ahead", ring_send(e, e.staging, 3), download_client(e)},
      {"d2h: ring, 7 ahead", ring_send(e, e.staging, 7), download_client(e)},
  };
  std::vector<std::vector<double>> got(cases.size());
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < cases.size(); ++i)
      got[i].push_back(timed(e, cases[i].server, cases[i].client));
  for (size_t i = 0; i < cases.size(); ++i) {
    auto v = got[i];
    std::sort(v.begin(), v.end());
    std::printf("%-45s median %6.1f Gbit/s  min %6.1f  max %6.1f\n", cases[i].name, v[v.size() / 2],
                v.front(), v.back());
  }
  return 0;
}
