// What loopback TCP throughput depends on, beside scuda: the sender's buffer
// alignment, the bytes framed before each chunk, and where the receiver
// puts the bytes. Prints one line per case, the median of interleaved rounds.
//   g++ -O2 -std=c++20 -pthread tcp_alignment.cc -o tcp_alignment && ./tcp_alignment
// Neither alignment, nor the framing, nor a cache-sized receive buffer moves
// a loopback stream beyond its own spread (figures: docs/bench/micro.md,
// "What the diagnostics found").
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "loopback.h"

namespace {

constexpr size_t kTotal = 256u << 20;
constexpr size_t kChunk = 8u << 20;
constexpr size_t kPiece = 2u << 20;

uint8_t* map(size_t n, bool huge) {
  void* p =
      mmap(nullptr, n + (2u << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  auto* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(p) + (2u << 20) - 1) &
                                          ~uintptr_t((2u << 20) - 1));
  if (huge) madvise(base, n, MADV_HUGEPAGE);
  else madvise(base, n, MADV_NOHUGEPAGE);
  std::memset(base, 1, n);
  return base;
}

struct Case {
  std::string name;
  size_t src_offset;  // sender buffer's offset from a 2 MiB boundary
  bool src_huge;
  size_t header;      // bytes sent before each chunk
  size_t dst_ring;    // receiver's buffer: this many bytes, reused
  size_t dst_offset;  // receiver writes at this offset in it
  bool dst_huge;
};

// TCP_LAB_PIN=A,B puts the sender on CPU A and the receiver on CPU B.
void pin(int which) {
  const char* env = std::getenv("TCP_LAB_PIN");
  if (!env) return;
  int cpus[2] = {0, 0};
  if (std::sscanf(env, "%d,%d", &cpus[0], &cpus[1]) != 2) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpus[which], &set);
  sched_setaffinity(0, sizeof set, &set);
}

double run_once(const Case& c, uint8_t* src_base, uint8_t* dst_base) {
  int tx, rx;
  connected_pair(&tx, &rx);
  const uint8_t* src = src_base + c.src_offset;
  uint8_t* dst = dst_base + c.dst_offset;
  std::thread receiver([&] {
    pin(1);
    std::vector<uint8_t> header(c.header + 1);
    size_t at = 0;
    for (size_t done = 0; done < kTotal; done += kChunk) {
      if (c.header && !read_all(rx, header.data(), c.header)) return;
      for (size_t p = 0; p < kChunk; p += kPiece) {
        if (at + kPiece > c.dst_ring) at = 0;
        if (!read_all(rx, dst + at, kPiece)) return;
        at += kPiece;
      }
    }
    write_all(rx, "k", 1);
  });
  const auto start = std::chrono::steady_clock::now();
  std::vector<uint8_t> header(c.header + 1, 7);
  for (size_t done = 0; done < kTotal; done += kChunk) {
    iovec iov[2] = {{header.data(), c.header}, {const_cast<uint8_t*>(src + done), kChunk}};
    msghdr m{};
    m.msg_iov = c.header ? iov : iov + 1;
    m.msg_iovlen = c.header ? 2 : 1;
    size_t left = c.header + kChunk;
    while (left) {
      ssize_t k = sendmsg(tx, &m, MSG_NOSIGNAL);
      if (k <= 0) break;
      left -= static_cast<size_t>(k);
      for (size_t i = 0; i < m.msg_iovlen && k; ++i) {
        const size_t used = std::min<size_t>(k, m.msg_iov[i].iov_len);
        m.msg_iov[i].iov_base = static_cast<char*>(m.msg_iov[i].iov_base) + used;
        m.msg_iov[i].iov_len -= used;
        k -= static_cast<ssize_t>(used);
      }
      while (m.msg_iovlen && m.msg_iov[0].iov_len == 0) {
        ++m.msg_iov;
        --m.msg_iovlen;
      }
    }
  }
  char ack;
  read_all(tx, &ack, 1);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  receiver.join();
  close(tx);
  close(rx);
  return kTotal * 8 / s / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  pin(0);
  const std::vector<Case> cases = {
      {"raw peer: src+16, hdr 9 once~0, dst 1MiB hot", 16, false, 0, 1u << 20, 0, false},
      {"src+16 hdr0 dst 16MiB ring", 16, false, 0, 16u << 20, 0, false},
      {"src+0  hdr0 dst 16MiB ring", 0, false, 0, 16u << 20, 0, false},
      {"src+16 hdr49 dst 16MiB ring (scuda h2d pageable)", 16, false, 49, 16u << 20, 0, false},
      {"src+0  hdr49 dst 16MiB ring (scuda h2d pinned)", 0, false, 49, 16u << 20, 0, false},
      {"src+16 hdr64 dst 16MiB ring", 16, false, 64, 16u << 20, 0, false},
      {"src+16 hdr64+16 dst ring+16", 16, false, 80, 16u << 20, 16, false},
      {"src+0  hdr64 dst 16MiB ring", 0, false, 64, 16u << 20, 0, false},
      {"src+0  hdr64 dst 1MiB hot", 0, false, 64, 1u << 20, 0, false},
      {"src+0 huge hdr64 dst ring huge", 0, true, 64, 16u << 20, 0, true},
      {"src+16 huge hdr49 dst ring huge", 16, true, 49, 16u << 20, 0, true},
  };
  uint8_t* src_plain = map(kTotal + 4096, false);
  uint8_t* src_huge = map(kTotal + 4096, true);
  uint8_t* dst_plain = map(32u << 20, false);
  uint8_t* dst_huge = map(32u << 20, true);
  std::vector<std::vector<double>> got(cases.size());
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      got[i].push_back(
          run_once(c, c.src_huge ? src_huge : src_plain, c.dst_huge ? dst_huge : dst_plain));
    }
  for (size_t i = 0; i < cases.size(); ++i) {
    auto v = got[i];
    std::sort(v.begin(), v.end());
    std::printf("%-55s median %6.1f Gbit/s  min %6.1f  max %6.1f\n", cases[i].name.c_str(),
                v[v.size() / 2], v.front(), v.back());
  }
  return 0;
}
