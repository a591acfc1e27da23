// What more than one loopback TCP stream buys a bulk copy on this host: 256
// MiB split over N connections, each with its own sending and receiving
// thread (receivers into a 16 MiB ring each, as scuda's staging). Prints the
// median aggregate rate of interleaved rounds per N.
//   g++ -O2 -std=c++20 -pthread parallel_streams.cc -o parallel_streams && ./parallel_streams
// More streams raise the aggregate rate well beyond one stream's, which is
// why large copies use lanes (figures: docs/bench/micro.md, "What the diagnostics found").
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "loopback.h"

namespace {

constexpr size_t kTotal = 256u << 20;
constexpr size_t kWrite = 8u << 20;
constexpr size_t kRing = 16u << 20;

uint8_t* touched(size_t n) {
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  std::memset(p, 1, n);
  return static_cast<uint8_t*>(p);
}

double run_once(int streams, const uint8_t* src, const std::vector<uint8_t*>& rings) {
  std::vector<int> tx(streams), rx(streams);
  for (int i = 0; i < streams; ++i) connected_pair(&tx[i], &rx[i]);
  const size_t share = kTotal / streams;
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < streams; ++i) {
    threads.emplace_back([&, i] {
      for (size_t at = 0; at < share; at += kWrite) write_all(tx[i], src + i * share + at, kWrite);
    });
    threads.emplace_back([&, i] {
      for (size_t at = 0; at < share; at += kWrite) read_all(rx[i], rings[i] + at % kRing, kWrite);
    });
  }
  for (auto& t : threads) t.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int i = 0; i < streams; ++i) {
    close(tx[i]);
    close(rx[i]);
  }
  return kTotal * 8 / s / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  const std::vector<int> counts = {1, 2, 4};
  const uint8_t* src = touched(kTotal);
  std::vector<uint8_t*> rings;
  for (int i = 0; i < 4; ++i) rings.push_back(touched(kRing));
  std::vector<std::vector<double>> got(counts.size());
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < counts.size(); ++i) got[i].push_back(run_once(counts[i], src, rings));
  for (size_t i = 0; i < counts.size(); ++i) {
    auto v = got[i];
    std::sort(v.begin(), v.end());
    std::printf("%d stream(s): median %6.1f Gbit/s  min %6.1f  max %6.1f\n", counts[i],
                v[v.size() / 2], v.front(), v.back());
  }
  return 0;
}
