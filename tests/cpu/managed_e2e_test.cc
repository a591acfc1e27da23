// Managed and mapped host memory end to end (docs/managed-memory.md): this
// test program is the client; its host pages mirror the double's managed
// memory, whose "kernels" (builtins) run in the server process.
#include <cuda.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <new>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "lanes_opened.h"
#include "primary_context_test.h"
#include "shared_server.h"

extern "C" void scuda_page_traffic(uint64_t* pushed, uint64_t* pulled);
extern "C" uint64_t scuda_replies_awaited();

namespace {

const char kModule[] =
    "scuda-double-module\n"
    "kernel vadd 8 8 8 4\n"
    "kernel fill 8 4 4\n"
    "kernel scale 8 4 4\n";

struct Traffic {
  uint64_t pushed = 0, pulled = 0;
};

Traffic traffic() {
  Traffic t;
  scuda_page_traffic(&t.pushed, &t.pulled);
  return t;
}

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

// Pages mapped for a vector of their own.
template <class T>
struct MappedAllocator {
  using value_type = T;
  MappedAllocator() = default;
  template <class U>
  MappedAllocator(const MappedAllocator<U>&) {}
  T* allocate(size_t n) {
    void* p =
        mmap(nullptr, n * sizeof(T), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) { munmap(p, n * sizeof(T)); }
  bool operator==(const MappedAllocator&) const { return true; }
};

// Host memory a test registers: a vector's heap block, as programs register.
// Under ASan the client's and the session's heaps lie at the same fixed
// addresses, so the session could not mirror a heap block at its own
// address (the double's kernels take that address); there the vector's
// block is pages mapped apart, and the client's registered-memory code
// still runs under the sanitizer.
template <class T>
using RegisterableVector =
    std::vector<T, std::conditional_t<kAddressSanitizer, MappedAllocator<T>, std::allocator<T>>>;

class ManagedTest : public scuda::test::PrimaryContextTest {
 protected:
  void SetUp() override {
    PrimaryContextTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_EQ(cuModuleLoadData(&mod_, kModule), CUDA_SUCCESS);
    ASSERT_EQ(cuModuleGetFunction(&vadd_, mod_, "vadd"), CUDA_SUCCESS);
    ASSERT_EQ(cuModuleGetFunction(&fill_, mod_, "fill"), CUDA_SUCCESS);
    ASSERT_EQ(cuModuleGetFunction(&scale_, mod_, "scale"), CUDA_SUCCESS);
  }
  void TearDown() override {
    for (CUdeviceptr p : owned_) EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
    cuModuleUnload(mod_);
    PrimaryContextTest::TearDown();
  }

  template <class T>
  T* managed(size_t count) {
    CUdeviceptr p = 0;
    EXPECT_EQ(cuMemAllocManaged(&p, count * sizeof(T), CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    owned_.push_back(p);
    return reinterpret_cast<T*>(p);
  }
  void launch(CUfunction f, std::vector<void*> params) {
    ASSERT_EQ(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, params.data(), nullptr),
              CUDA_SUCCESS);
  }
  void vadd(float* a, float* b, float* c, int n) { launch(vadd_, {&a, &b, &c, &n}); }
  void fill(unsigned* p, unsigned v, int n) { launch(fill_, {&p, &v, &n}); }
  void scale(float* p, float s, int n) { launch(scale_, {&p, &s, &n}); }

  CUmodule mod_ = nullptr;
  CUfunction vadd_ = nullptr, fill_ = nullptr, scale_ = nullptr;
  std::vector<CUdeviceptr> owned_;
};

TEST_F(ManagedTest, HostWritesReachTheKernelAndItsResultsTheHost) {
  const int n = 5000;
  float *a = managed<float>(n), *b = managed<float>(n), *c = managed<float>(n);
  for (int i = 0; i < n; ++i) a[i] = i, b[i] = 2.0f * i;
  vadd(a, b, c, n);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], 3.0f * i) << i;
}

// The plural call answers each attribute into its own buffer, as the
// server's driver answers the singular one.
TEST_F(ManagedTest, RangeAttributesAnswerEachAttribute) {
  float* a = managed<float>(1024);
  const auto p = reinterpret_cast<CUdeviceptr>(a);
  CUmemLocation device{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  ASSERT_EQ(cuMemAdvise_v2(p, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, device), CUDA_SUCCESS);
  ASSERT_EQ(cuMemPrefetchAsync_v2(p, 4096, device, 0, nullptr), CUDA_SUCCESS);
  int read_mostly = -1, prefetched = -1;
  void* data[] = {&read_mostly, &prefetched};
  size_t sizes[] = {sizeof read_mostly, sizeof prefetched};
  CUmem_range_attribute attributes[] = {CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
                                        CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION};
  ASSERT_EQ(cuMemRangeGetAttributes(data, sizes, attributes, 2, p, 4096), CUDA_SUCCESS);
  EXPECT_EQ(read_mostly, 1);
  EXPECT_EQ(prefetched, 0);
  sizes[1] = 1;  // too small for an int: the driver's refusal comes back
  EXPECT_EQ(cuMemRangeGetAttributes(data, sizes, attributes, 2, p, 4096), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(ManagedTest, DeviceWritesAreSeenAfterEachSynchronization) {
  const int n = 3000;
  unsigned* p = managed<unsigned>(n);
  for (unsigned round = 1; round <= 3; ++round) {
    fill(p, round, n);
    ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
    for (int i = 0; i < n; ++i) ASSERT_EQ(p[i], round) << i;
  }
}

// A loop over several arrays at once faults in each in turn: each array's
// walk still reads ahead, so the pages come in a few round trips each.
TEST_F(ManagedTest, InterleavedSequentialWalksEachReadAhead) {
  const int n = static_cast<int>((1u << 20) / sizeof(unsigned));  // 256 pages of 4 KiB
  unsigned *a = managed<unsigned>(n), *b = managed<unsigned>(n), *c = managed<unsigned>(n);
  fill(a, 1, n);
  fill(b, 2, n);
  fill(c, 3, n);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  const uint64_t before = scuda_replies_awaited();
  uint64_t sum = 0;
  for (int i = 0; i < n; ++i) sum += a[i] + b[i] + c[i];
  EXPECT_EQ(sum, 6u * static_cast<uint64_t>(n));
  const uint64_t pages = 3 * ((1u << 20) / kPage);
  EXPECT_LT(scuda_replies_awaited() - before, pages / 8) << "of " << pages << " pages";
}

// A kernel that only reads its inputs leaves them as the host last had
// them: reading them afterwards compares block hashes and moves none of
// their bytes; the output moves, and a buffer the device rewrote in part
// only its changed blocks (64 KiB each).
TEST_F(ManagedTest, DeviceWorkThatLeavesBuffersAsTheyWereMovesOnlyWhatChanged) {
  const int n = static_cast<int>((4u << 20) / sizeof(float));
  const uint64_t bytes = n * sizeof(float);
  float *a = managed<float>(n), *b = managed<float>(n), *c = managed<float>(n);
  for (int i = 0; i < n; ++i) a[i] = static_cast<float>(i), b[i] = 1.0f;
  for (int round = 1; round <= 2; ++round) {
    vadd(a, b, c, n);
    ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    const Traffic before = traffic();
    for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << "round " << round << ", " << i;
    const uint64_t moved = traffic().pulled - before.pulled;
    if (round == 1) {
      EXPECT_EQ(moved, bytes) << "c alone";
      for (int i = 0; i < n / 3; ++i) a[i] = -a[i];
    } else {
      // c's first third changed; the rest may be compared or moved again.
      EXPECT_GE(moved, bytes / 3);
      EXPECT_LE(moved, bytes);
    }
  }
  // The device rewrites a stretch of a (a whole 64 KiB block and parts of
  // two more) and the host reads all of it.
  const int from = 100000, count = 20000;
  fill(reinterpret_cast<unsigned*>(a) + from, 7, count);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  const Traffic before = traffic();
  unsigned seven = 7;
  float as_float = 0;
  std::memcpy(&as_float, &seven, sizeof seven);
  for (int i = 0; i < n; ++i) {
    const float want = i >= from && i < from + count ? as_float : i < n / 3 ? -float(i) : float(i);
    ASSERT_EQ(std::memcmp(&a[i], &want, sizeof want), 0) << i;
  }
  const uint64_t moved = traffic().pulled - before.pulled;
  EXPECT_GE(moved, count * sizeof(float));
  EXPECT_LE(moved, count * sizeof(float) + 2 * (64u << 10));
}

TEST_F(ManagedTest, UntouchedPagesNeverMove) {
  const size_t n = (64u << 20) / sizeof(unsigned);
  unsigned* p = managed<unsigned>(n);
  const Traffic before = traffic();
  fill(p, 9, static_cast<int>(n));
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(p[n / 2], 9u);  // one page read
  const Traffic after = traffic();
  EXPECT_EQ(after.pushed, before.pushed);
  EXPECT_EQ(after.pulled - before.pulled, kPage);
}

TEST_F(ManagedTest, SparseTouchesOfALargeBufferMoveAboutTheBytesTouched) {
  const size_t bytes = 256u << 20, stride = 64 * kPage / sizeof(float);
  const size_t n = bytes / sizeof(float);
  float* p = managed<float>(n);
  const Traffic before = traffic();
  size_t touched = 0;
  // Values other than zero, so that the kernel changes every touched page.
  for (size_t i = 0; i < n; i += stride, ++touched) p[i] = static_cast<float>(touched + 1);
  scale(p, 2.0f, static_cast<int>(n));
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  for (size_t i = 0, k = 0; i < n; i += stride, ++k) ASSERT_EQ(p[i], 2.0f * (k + 1)) << i;
  const Traffic after = traffic();
  // Fresh pages need no fetch but are pushed whole; the reads after the
  // kernel pull one page each.
  EXPECT_EQ(after.pushed - before.pushed, touched * kPage);
  EXPECT_EQ(after.pulled - before.pulled, touched * kPage);
  EXPECT_LT(after.pulled - before.pulled, bytes / 32);
}

// A large sequential host write after device work (every stream idle) is
// pulled once, made writable in runs and pushed once, whole; a copy that
// only reads it leaves the host's pages valid, so the next write moves only
// the push.
TEST_F(ManagedTest, ALargeSequentialWriteMovesEachByteOnce) {
  const size_t bytes = 32u << 20, n = bytes / sizeof(unsigned);
  unsigned* p = managed<unsigned>(n);
  CUdeviceptr copy = 0;
  ASSERT_EQ(cuMemAlloc(&copy, bytes), CUDA_SUCCESS);
  fill(p, 3, static_cast<int>(n));
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  for (unsigned round = 1; round <= 2; ++round) {
    const Traffic before = traffic();
    const uint64_t waits = scuda_replies_awaited();
    std::memset(p, static_cast<int>(round), bytes);
    ASSERT_EQ(cuMemcpyDtoD(copy, reinterpret_cast<CUdeviceptr>(p), bytes), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    const Traffic after = traffic();
    EXPECT_EQ(after.pushed - before.pushed, bytes) << "round " << round;
    EXPECT_EQ(after.pulled - before.pulled, round == 1 ? bytes : 0) << "round " << round;
    EXPECT_LT(scuda_replies_awaited() - waits, 64u) << "round " << round;
    std::vector<unsigned> back(n);
    ASSERT_EQ(cuMemcpyDtoH(back.data(), copy, bytes), CUDA_SUCCESS);
    const unsigned word = 0x01010101u * round;
    for (size_t i = 0; i < n; i += 997) ASSERT_EQ(back[i], word) << i;
    ASSERT_EQ(back[n - 1], word);
  }
  EXPECT_EQ(cuMemFree(copy), CUDA_SUCCESS);
}

// Work that writes no managed memory, sent between two host writes of a
// buffer, leaves the host's pages valid: the second write pulls nothing.
TEST_F(ManagedTest, CopiesFreesAndEventsElsewhereLeaveTheHostsPagesValid) {
  const size_t bytes = 4u << 20, n = bytes / sizeof(unsigned);
  unsigned* p = managed<unsigned>(n);
  CUdeviceptr copy = 0;
  ASSERT_EQ(cuMemAlloc(&copy, bytes), CUDA_SUCCESS);
  std::vector<unsigned> host(n, 1);
  CUevent event = nullptr;
  ASSERT_EQ(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  fill(p, 3, static_cast<int>(n));
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  std::memset(p, 1, bytes);  // pulled once: the device wrote it
  const std::vector<std::pair<const char*, std::function<CUresult()>>> between = {
      {"a copy from the host into device memory",
       [&] { return cuMemcpyHtoD(copy, host.data(), bytes); }},
      {"an allocation freed",
       [&] {
         CUdeviceptr q = 0;
         const CUresult rc = cuMemAlloc(&q, 1 << 20);
         return rc == CUDA_SUCCESS ? cuMemFree(q) : rc;
       }},
      {"an event recorded", [&] { return cuEventRecord(event, nullptr); }},
  };
  for (const auto& [what, call] : between) {
    ASSERT_EQ(cuMemcpyDtoD(copy, reinterpret_cast<CUdeviceptr>(p), bytes), CUDA_SUCCESS);
    ASSERT_EQ(call(), CUDA_SUCCESS) << what;
    ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    const Traffic before = traffic();
    std::memset(p, 2, bytes);
    ASSERT_EQ(cuMemcpyDtoD(copy, reinterpret_cast<CUdeviceptr>(p), bytes), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    EXPECT_EQ(traffic().pulled - before.pulled, 0u) << "after " << what;
    unsigned word = 0;
    ASSERT_EQ(cuMemcpyDtoH(&word, copy + bytes - sizeof word, sizeof word), CUDA_SUCCESS);
    EXPECT_EQ(word, 0x02020202u) << "after " << what;
  }
  EXPECT_EQ(cuEventDestroy(event), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(copy), CUDA_SUCCESS);
}

// A copy on the device into part of a page the host has written keeps the
// host's bytes on the rest of the page: they are pushed before the copy.
TEST_F(ManagedTest, ADeviceCopyIntoPartOfAPageKeepsTheHostsWritesBesideIt) {
  const size_t per_page = kPage / sizeof(unsigned), half = per_page / 2;
  unsigned* m = managed<unsigned>(per_page);
  CUdeviceptr threes = 0;
  ASSERT_EQ(cuMemAlloc(&threes, half * sizeof(unsigned)), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32(threes, 3, half), CUDA_SUCCESS);
  fill(m, 1, static_cast<int>(per_page));
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  m[0] = 9;
  ASSERT_EQ(cuMemcpyDtoD(reinterpret_cast<CUdeviceptr>(m + half), threes, half * sizeof(unsigned)),
            CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(m[0], 9u);
  EXPECT_EQ(m[1], 1u);
  EXPECT_EQ(m[half], 3u);
  EXPECT_EQ(m[per_page - 1], 3u);
  EXPECT_EQ(cuMemFree(threes), CUDA_SUCCESS);
}

// Waits up to 5 s for the page traffic to reach `at_least` bytes pulled or
// pushed since `before` (background transfers of the fault service).
template <class Moved>
uint64_t moved_within(const Traffic& before, uint64_t at_least, Moved moved) {
  uint64_t bytes = 0;
  for (int i = 0; i < 500; ++i) {
    bytes = moved(traffic()) - moved(before);
    if (bytes >= at_least) break;
    usleep(10000);
  }
  return bytes;
}

uint64_t pushed_of(const Traffic& t) { return t.pushed; }

// A long sequential write is pushed while the host writes: the windows the
// walk has finished cross before any request, each byte once, and a page
// written again after its push is read-only again, so it goes once more.
TEST_F(ManagedTest, ALongSequentialWriteIsPushedWhileTheHostWrites) {
  const size_t bytes = 32u << 20, n = bytes / sizeof(unsigned), last_window = 8u << 20;
  unsigned* p = managed<unsigned>(n);
  CUdeviceptr copy = 0;
  ASSERT_EQ(cuMemAlloc(&copy, bytes), CUDA_SUCCESS);
  fill(p, 3, 1);  // device work: the buffer's pages are the device's from here on
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  const Traffic before = traffic();
  std::memset(p, 4, bytes);
  EXPECT_GE(moved_within(before, bytes - last_window, pushed_of), bytes - last_window);
  EXPECT_LE(traffic().pushed - before.pushed, bytes);
  p[1] = 0x05050505;  // pushed already: faults, and goes with the next request
  ASSERT_EQ(cuMemcpyDtoD(copy, reinterpret_cast<CUdeviceptr>(p), bytes), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(traffic().pushed - before.pushed, bytes + kPage);
  std::vector<unsigned> back(n);
  ASSERT_EQ(cuMemcpyDtoH(back.data(), copy, bytes), CUDA_SUCCESS);
  EXPECT_EQ(back[1], 0x05050505u);
  for (size_t i = 2; i < n; i += 1021) ASSERT_EQ(back[i], 0x04040404u) << i;
  EXPECT_EQ(back[n - 1], 0x04040404u);
  EXPECT_EQ(cuMemFree(copy), CUDA_SUCCESS);
}

// Pages made writable together are pushed whole; the bytes the host did not
// write are the device's, so a partial write keeps them, whether every
// stream was idle (no twin) or work may still be running (twins).
TEST_F(ManagedTest, PartialPageWritesAfterDeviceWorkKeepTheDevicesOtherBytes) {
  const size_t pages = 512, per_page = kPage / sizeof(unsigned), n = pages * per_page;
  unsigned* p = managed<unsigned>(n);
  for (bool whole_context : {true, false}) {
    fill(p, 5, static_cast<int>(n));
    ASSERT_EQ(whole_context ? cuCtxSynchronize() : cuStreamSynchronize(nullptr), CUDA_SUCCESS);
    for (size_t k = 0; k < pages; ++k) p[k * per_page + k % per_page] = 7;  // one word a page
    std::vector<unsigned> back(n);
    ASSERT_EQ(cuMemcpyDtoH(back.data(), reinterpret_cast<CUdeviceptr>(p), n * sizeof(unsigned)),
              CUDA_SUCCESS);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(back[i], i % per_page == (i / per_page) % per_page ? 7u : 5u)
          << i << (whole_context ? " after cuCtxSynchronize" : " after a stream's");
  }
}

// Touching 1% of a large buffer's pages, scattered, after device work moves
// those pages and little more, both ways.
TEST_F(ManagedTest, ASparseTouchAfterDeviceWorkMovesOnlyItsPages) {
  const size_t bytes = 256u << 20, n = bytes / sizeof(unsigned), pages = bytes / kPage;
  unsigned* p = managed<unsigned>(n);
  fill(p, 2, static_cast<int>(n));
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  const Traffic before = traffic();
  size_t touched = 0;
  for (size_t k = 0; k < pages; k += 100, ++touched) {
    unsigned* word = p + k * (kPage / sizeof(unsigned)) + 3;
    ASSERT_EQ(*word, 2u) << k;
    *word = 9;
  }
  fill(p, 2, 1);  // pushes the touched pages ahead of it
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  const Traffic after = traffic();
  EXPECT_EQ(after.pulled - before.pulled, touched * kPage);
  EXPECT_EQ(after.pushed - before.pushed, touched * kPage);
  EXPECT_LE(after.pulled - before.pulled, bytes / 50);
  EXPECT_EQ(p[100 * (kPage / sizeof(unsigned)) + 3], 9u);
  EXPECT_EQ(p[100 * (kPage / sizeof(unsigned)) + 4], 2u);
}

// A sequential read of a small part of a large buffer reads ahead, but
// moves at most about twice what it read.
TEST_F(ManagedTest, AShortSequentialReadMovesAboutWhatItRead) {
  const size_t bytes = 256u << 20, n = bytes / sizeof(unsigned), part = n / 100;
  unsigned* p = managed<unsigned>(n);
  fill(p, 4, static_cast<int>(n));
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  const Traffic before = traffic();
  uint64_t sum = 0;
  for (size_t i = 0; i < part; ++i) sum += p[i];
  EXPECT_EQ(sum, 4u * part);
  const uint64_t pulled = traffic().pulled - before.pulled;
  EXPECT_GE(pulled, part * sizeof(unsigned));
  EXPECT_LE(pulled, bytes / 50);
}

// A second pass over a buffer starts with the window the first pass
// reached, so it takes a few round trips instead of one per doubling.
TEST_F(ManagedTest, ASecondSequentialPassStartsWithTheWindowTheFirstReached) {
  const size_t bytes = 16u << 20, n = bytes / sizeof(unsigned);
  unsigned* p = managed<unsigned>(n);
  // With the lanes open, a window pulled whole is one reply to wait for.
  CUdeviceptr dev = 0;
  ASSERT_EQ(cuMemAlloc(&dev, bytes), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(scuda::test::open_lanes(dev, bytes));
  EXPECT_EQ(cuMemFree(dev), CUDA_SUCCESS);
  uint64_t waits[3] = {};
  for (unsigned pass = 0; pass < 3; ++pass) {
    fill(p, pass + 1, static_cast<int>(n));
    ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    const uint64_t before = scuda_replies_awaited();
    uint64_t sum = 0;
    for (size_t i = 0; i < n; ++i) sum += p[i];
    waits[pass] = scuda_replies_awaited() - before;
    EXPECT_EQ(sum, uint64_t{pass + 1} * n) << "pass " << pass;
  }
  EXPECT_GE(waits[0], 8u);  // one page, then doubling: a dozen faults
  EXPECT_LE(waits[1], 3u) << "the first pass waited " << waits[0] << " times";
  EXPECT_LE(waits[2], 3u) << "a window that reached the buffer's end is kept";
  // A read that stops at its first page moves the remembered window once;
  // the next starts from one page again.
  for (unsigned check = 0; check < 2; ++check) {
    fill(p, 7, static_cast<int>(n));
    ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    const Traffic before = traffic();
    EXPECT_EQ(p[0], 7u);
    if (check == 1) {
      EXPECT_EQ(traffic().pulled - before.pulled, kPage);
    }
  }
}

// A long sequential read has its next window pulled while it reads the
// current one: the bytes arrive in place (each word its own index), the
// pull runs at most one window past the read, and device work after it
// drops what was pulled ahead, as it drops any page.
TEST_F(ManagedTest, ALongSequentialReadHasItsNextWindowPulledAhead) {
  // The walk's windows double to 32 MiB and end 4 KiB short of 96 MiB, so
  // a read of 80 MiB has pulled about 96 MiB, and 128 with the window ahead.
  const size_t bytes = 256u << 20, n = bytes / sizeof(uint32_t), part = n * 5 / 16;
  uint32_t* p = managed<uint32_t>(n);
  std::vector<uint32_t> pattern(n);
  for (size_t i = 0; i < n; ++i) pattern[i] = static_cast<uint32_t>(i * 2654435761u);
  ASSERT_EQ(cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(p), pattern.data(), bytes), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  const Traffic before = traffic();
  for (size_t i = 0; i < part; ++i) ASSERT_EQ(p[i], pattern[i]) << i;
  // The read-ahead runs on the fault service after the last fault's wake.
  const size_t read = part * sizeof(uint32_t), window = 32u << 20;
  const size_t ahead = read + window * 5 / 4;
  for (int tries = 0; tries < 1000 && traffic().pulled - before.pulled < ahead; ++tries)
    usleep(10000);
  const uint64_t pulled = traffic().pulled - before.pulled;
  EXPECT_GT(pulled, ahead);
  EXPECT_LE(pulled, read + 2 * window);
  for (size_t i = part; i < n; ++i) ASSERT_EQ(p[i], pattern[i]) << i;
  EXPECT_LE(traffic().pulled - before.pulled, bytes + window);

  // A read-ahead in flight or arrived when the kernel is sent.
  ASSERT_EQ(cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(p), pattern.data(), bytes), CUDA_SUCCESS);
  for (size_t i = 0; i < part; ++i) ASSERT_EQ(p[i], pattern[i]) << i;
  fill(reinterpret_cast<unsigned*>(p), 7, static_cast<int>(n));
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], 7u) << i;
}

// A free that follows the fault arming a read-ahead at once: the window is
// never read from the freed memory (the double fails a copy from outside
// every allocation, and the client logs the failed pull).
TEST_F(ManagedTest, FreeingRightAfterAReadAheadIsArmedPullsNothingFreed) {
  const size_t bytes = 64u << 20, n = bytes / sizeof(uint32_t);
  // The walk's fourteenth fault, at page 8191, has a 32 MiB window: it arms.
  const size_t arming = 8191 * kPage / sizeof(uint32_t);
  ::testing::internal::CaptureStderr();
  for (unsigned round = 1; round <= 20; ++round) {
    CUdeviceptr d = 0;
    ASSERT_EQ(cuMemAllocManaged(&d, bytes, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    auto* p = reinterpret_cast<uint32_t*>(d);
    fill(p, round, static_cast<int>(n));
    ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    for (size_t i = 0; i <= arming; i += kPage / sizeof(uint32_t)) ASSERT_EQ(p[i], round) << i;
    ASSERT_EQ(cuMemFree(d), CUDA_SUCCESS);
  }
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("failed"), std::string::npos) << err;
}

TEST_F(ManagedTest, AHostWriteAfterALaunchReachesOnlyTheNextLaunch) {
  const int n = 256;
  float *a = managed<float>(n), *zero = managed<float>(n);
  float *first = managed<float>(n), *second = managed<float>(n);
  for (int i = 0; i < n; ++i) a[i] = 1.0f, zero[i] = 0.0f;
  vadd(a, zero, first, n);
  for (int i = 0; i < n; ++i) a[i] = 2.0f;  // no synchronization in between
  vadd(a, zero, second, n);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(first[i], 1.0f) << i;
    ASSERT_EQ(second[i], 2.0f) << i;
  }
}

TEST_F(ManagedTest, HostAndDeviceWritesToOnePageMergeByteByByte) {
  const int n = static_cast<int>(kPage / sizeof(unsigned));
  unsigned* p = managed<unsigned>(n);
  p[n - 2] = 1;
  fill(p, 5, n / 2);  // the device writes the first half
  p[n - 1] = 9;       // while the host writes the last word, unsynchronized
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  for (int i = 0; i < n / 2; ++i) ASSERT_EQ(p[i], 5u) << i;
  EXPECT_EQ(p[n - 2], 1u);
  EXPECT_EQ(p[n - 1], 9u);
}

// A host write to a page the device may be changing waits for the device's
// copy first: the host's atomic read-modify-write, which faults before it
// reads, lands on the kernel's result, as system-scope atomics on both sides
// need.
TEST_F(ManagedTest, AHostAtomicDuringDeviceWorkLandsOnTheDevicesResult) {
  const int n = 16;
  unsigned* p = managed<unsigned>(n);
  for (int i = 0; i < n; ++i) p[i] = 1;
  fill(p, 5, n);  // no synchronization before the host's atomic
  __sync_fetch_and_add(&p[0], 1u);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(p[0], 6u);
  for (int i = 1; i < n; ++i) ASSERT_EQ(p[i], 5u) << i;
}

TEST_F(ManagedTest, CopiesTreatManagedMemoryAsTheDevices) {
  const int n = 2048;
  unsigned* m = managed<unsigned>(n);
  std::vector<unsigned> host(n, 7), back(n, 0);
  m[0] = 1;
  ASSERT_EQ(cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(m), host.data(), n * sizeof(unsigned)),
            CUDA_SUCCESS);
  EXPECT_EQ(m[0], 7u);  // seen at once, without a synchronization
  m[1] = 8;
  ASSERT_EQ(cuMemcpyDtoH(back.data(), reinterpret_cast<CUdeviceptr>(m), n * sizeof(unsigned)),
            CUDA_SUCCESS);
  EXPECT_EQ(back[1], 8u);
  unsigned* other = managed<unsigned>(n);
  m[2] = 6;
  ASSERT_EQ(cuMemcpy(reinterpret_cast<CUdeviceptr>(other), reinterpret_cast<CUdeviceptr>(m),
                     n * sizeof(unsigned)),
            CUDA_SUCCESS);
  EXPECT_EQ(other[2], 6u);
  ASSERT_EQ(cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(other), m, sizeof(unsigned)), CUDA_SUCCESS);
  EXPECT_EQ(other[0], 7u);
}

TEST_F(ManagedTest, PrefetchToTheHostPullsTheRangeAtTheSynchronization) {
  const int n = (1 << 20) / sizeof(unsigned);
  unsigned* p = managed<unsigned>(n);
  fill(p, 4, n);
  CUmemLocation host{};
  host.type = CU_MEM_LOCATION_TYPE_HOST;
  const Traffic before = traffic();
  ASSERT_EQ(cuMemPrefetchAsync_v2(reinterpret_cast<CUdeviceptr>(p), n * sizeof(unsigned), host, 0,
                                  nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  const Traffic synced = traffic();
  EXPECT_EQ(synced.pulled - before.pulled, n * sizeof(unsigned));
  for (int i = 0; i < n; ++i) ASSERT_EQ(p[i], 4u) << i;
  EXPECT_EQ(traffic().pulled, synced.pulled);  // no fault fetched anything
}

// A range advised to live on the host is pulled whole at each
// synchronization after device work, so reading it faults nothing in; once
// the advice is taken back, only what the host touches moves again.
TEST_F(ManagedTest, APreferredLocationOnTheHostPullsTheRangeAfterDeviceWork) {
  const int n = (1 << 20) / sizeof(unsigned);
  unsigned* p = managed<unsigned>(n);
  unsigned* other = managed<unsigned>(n);
  const auto dptr = reinterpret_cast<CUdeviceptr>(p);
  CUmemLocation host{};
  host.type = CU_MEM_LOCATION_TYPE_HOST;
  ASSERT_EQ(cuMemAdvise_v2(dptr, n * sizeof(unsigned), CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host),
            CUDA_SUCCESS);
  for (unsigned round = 1; round <= 2; ++round) {
    fill(p, round, n);
    fill(other, round, n);
    const Traffic before = traffic();
    ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    const Traffic synced = traffic();
    EXPECT_EQ(synced.pulled - before.pulled, n * sizeof(unsigned)) << "round " << round;
    for (int i = 0; i < n; ++i) ASSERT_EQ(p[i], round) << i;
    EXPECT_EQ(traffic().pulled, synced.pulled) << "round " << round;
  }
  ASSERT_EQ(
      cuMemAdvise_v2(dptr, n * sizeof(unsigned), CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, host),
      CUDA_SUCCESS);
  fill(p, 3, n);
  const Traffic before = traffic();
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(traffic().pulled, before.pulled);
  EXPECT_EQ(p[5], 3u);
  EXPECT_EQ(traffic().pulled - before.pulled, kPage);
}

// A batch prefetches each range to its group's location: the host's ranges
// are pulled at the synchronization, as a single prefetch's are.
TEST_F(ManagedTest, BatchPrefetchesTakeEachGroupsLocation) {
  const int n = (256 << 10) / sizeof(unsigned);
  unsigned *a = managed<unsigned>(n), *b = managed<unsigned>(n), *c = managed<unsigned>(n);
  fill(a, 1, n);
  fill(b, 2, n);
  fill(c, 3, n);
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUmemLocation locs[2] = {};
  locs[0].type = CU_MEM_LOCATION_TYPE_DEVICE;
  locs[1].type = CU_MEM_LOCATION_TYPE_HOST;
  CUdeviceptr ptrs[3] = {reinterpret_cast<CUdeviceptr>(a), reinterpret_cast<CUdeviceptr>(b),
                         reinterpret_cast<CUdeviceptr>(c)};
  size_t sizes[3] = {n * sizeof(unsigned), n * sizeof(unsigned), n * sizeof(unsigned)};
  size_t firsts[2] = {0, 1};  // a to the device; b and c to the host
  const Traffic before = traffic();
  ASSERT_EQ(cuMemPrefetchBatchAsync(ptrs, sizes, 3, locs, firsts, 2, 0, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_EQ(traffic().pulled - before.pulled, 2 * n * sizeof(unsigned));
  EXPECT_EQ(b[n - 1], 2u);
  EXPECT_EQ(c[0], 3u);
  size_t unordered[2] = {0, 0};
  EXPECT_EQ(cuMemPrefetchBatchAsync(ptrs, sizes, 3, locs, unordered, 2, 0, stream),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemPrefetchBatchAsync(ptrs, sizes, 3, locs, firsts, 2, 0, CU_STREAM_LEGACY),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
}

// A discarded range's contents are undefined: the host's copy goes, and a
// read afterwards sees the device's bytes, whatever they are.
TEST_F(ManagedTest, DiscardedRangesAreReadFromTheDeviceAgain) {
  const int n = 1024;
  unsigned* p = managed<unsigned>(n);
  for (int i = 0; i < n; ++i) p[i] = 7;
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(p[0], 7u);  // the host's copy is valid again
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUdeviceptr ptrs[1] = {reinterpret_cast<CUdeviceptr>(p)};
  size_t sizes[1] = {n * sizeof(unsigned)};
  ASSERT_EQ(cuMemDiscardBatchAsync(ptrs, sizes, 1, 0, stream), CUDA_SUCCESS);
  EXPECT_EQ(p[0], 0xddddddddu);  // the double's discarded bytes
  EXPECT_EQ(cuMemDiscardBatchAsync(ptrs, sizes, 1, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
}

TEST_F(ManagedTest, PrefetchToTheDeviceAndAdviceAreAccepted) {
  const int n = 4096;
  float* p = managed<float>(n);
  const auto dptr = reinterpret_cast<CUdeviceptr>(p);
  CUmemLocation gpu{};
  gpu.type = CU_MEM_LOCATION_TYPE_DEVICE;
  EXPECT_EQ(cuMemAdvise_v2(dptr, n * sizeof(float), CU_MEM_ADVISE_SET_READ_MOSTLY, gpu),
            CUDA_SUCCESS);
  EXPECT_EQ(cuMemAdvise_v2(dptr, n * sizeof(float), CU_MEM_ADVISE_SET_PREFERRED_LOCATION, gpu),
            CUDA_SUCCESS);
  p[3] = 3.0f;
  EXPECT_EQ(cuMemPrefetchAsync_v2(dptr, n * sizeof(float), gpu, 0, nullptr), CUDA_SUCCESS);
  scale(p, 2.0f, n);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(p[3], 6.0f);
  CUdeviceptr plain = 0;
  ASSERT_EQ(cuMemAlloc(&plain, 4096), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAdvise_v2(plain, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, gpu),
            CUDA_ERROR_INVALID_VALUE);
  cuMemFree(plain);
}

TEST_F(ManagedTest, SmallAllocationsShareAndOutliveEachOthersPages) {
  std::vector<unsigned*> nodes;
  for (int i = 0; i < 64; ++i) nodes.push_back(managed<unsigned>(8));
  for (int i = 0; i < 64; ++i) nodes[i][0] = i;
  ASSERT_EQ(cuMemFree(owned_[10]), CUDA_SUCCESS);
  owned_.erase(owned_.begin() + 10);
  for (int i = 0; i < 64; ++i) {
    if (i == 10) continue;
    fill(nodes[i] + 1, i + 100, 1);
  }
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  for (int i = 0; i < 64; ++i) {
    if (i == 10) continue;
    ASSERT_EQ(nodes[i][0], static_cast<unsigned>(i));
    ASSERT_EQ(nodes[i][1], static_cast<unsigned>(i + 100));
  }
}

// The GPU sample cublas_batched_managed's shape: three large buffers and
// three small pointer arrays sharing a page, freed in allocation order while
// their pages are in every state; the process's other memory stays intact.
TEST_F(ManagedTest, FreeingPagesInEveryStateLeavesOtherMemoryAlone) {
  const int n = 32 * 64 * 64, batch = 32;
  float *a = managed<float>(n), *b = managed<float>(n), *c = managed<float>(n);
  float **pa = managed<float*>(batch), **pb = managed<float*>(batch), **pc = managed<float*>(batch);
  for (int i = 0; i < n; ++i) a[i] = i % 17, b[i] = i % 13, c[i] = 0;
  for (int k = 0; k < batch; ++k) pa[k] = a + k * 4096, pb[k] = b + k * 4096, pc[k] = c + k * 4096;
  for (int k = 0; k < batch; ++k) vadd(pa[k], pb[k], pc[k], 4096);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << i;
  a[1] = 5;    // dirty, with a twin
  (void)b[0];  // clean; most of b stays invalid
  pa[0] = c;   // the shared page dirty
  std::vector<char> heap(1 << 20, 1);
  for (CUdeviceptr p : owned_) ASSERT_EQ(cuMemFree(p), CUDA_SUCCESS);
  owned_.clear();
  std::vector<char> more(1 << 20, 2);
  EXPECT_EQ(heap[12345] + more[54321], 3);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
}

TEST_F(ManagedTest, MappedHostMemoryIsDeviceMemoryAtTheSameAddress) {
  const int n = 3000;
  void* block = nullptr;
  ASSERT_EQ(cuMemHostAlloc(&block, n * sizeof(float), CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
  CUdeviceptr dptr = 0;
  ASSERT_EQ(cuMemHostGetDevicePointer(&dptr, block, 0), CUDA_SUCCESS);
  EXPECT_EQ(dptr, reinterpret_cast<CUdeviceptr>(block));
  unsigned flags = 0;
  ASSERT_EQ(cuMemHostGetFlags(&flags, block), CUDA_SUCCESS);
  EXPECT_EQ(flags, unsigned{CU_MEMHOSTALLOC_DEVICEMAP});
  auto* h = static_cast<float*>(block);
  for (int i = 0; i < n; ++i) h[i] = i;
  scale(reinterpret_cast<float*>(dptr), 3.0f, n);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  for (int i = 0; i < n; ++i) ASSERT_EQ(h[i], 3.0f * i) << i;
  EXPECT_EQ(cuMemFreeHost(block), CUDA_SUCCESS);

  // Under UVA a block without DEVICEMAP has a device address too: its mirror's.
  void* plain = nullptr;
  ASSERT_EQ(cuMemHostAlloc(&plain, 4096, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemHostGetDevicePointer(&dptr, plain, 0), CUDA_SUCCESS);
  static_cast<float*>(plain)[5] = 2.0f;
  scale(reinterpret_cast<float*>(dptr), 4.0f, 8);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(static_cast<float*>(plain)[5], 8.0f);
  EXPECT_EQ(cuMemFreeHost(plain), CUDA_SUCCESS);
}

// Registered memory stays the program's own (here, a vector's heap block);
// the session mirrors it and the changed bytes travel each way.
TEST_F(ManagedTest, RegisteredHostMemoryIsSeenByKernelsBothWays) {
  const int n = 5000;
  RegisterableVector<float> h(n);
  for (int i = 0; i < n; ++i) h[i] = i;
  ASSERT_EQ(cuMemHostRegister(h.data(), n * sizeof(float), 0), CUDA_SUCCESS);
  CUdeviceptr dptr = 0;
  ASSERT_EQ(cuMemHostGetDevicePointer(&dptr, h.data() + 1, 0), CUDA_SUCCESS);
  EXPECT_EQ(dptr, reinterpret_cast<CUdeviceptr>(h.data() + 1));
  scale(h.data(), 2.0f, n);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  for (int i = 0; i < n; ++i) ASSERT_EQ(h[i], 2.0f * i) << i;
  h[7] = 100.0f;
  scale(h.data(), 2.0f, n);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(h[7], 200.0f);
  for (int i = 8; i < n; ++i) ASSERT_EQ(h[i], 4.0f * i) << i;
  EXPECT_EQ(cuMemHostUnregister(h.data()), CUDA_SUCCESS);
}

// The [begin, end) ranges mapped in process `pid`.
std::vector<std::pair<uintptr_t, uintptr_t>> mappings_of(const std::string& pid) {
  std::vector<std::pair<uintptr_t, uintptr_t>> out;
  std::ifstream maps("/proc/" + pid + "/maps");
  for (std::string line; std::getline(maps, line);) {
    std::istringstream range(line.substr(0, line.find(' ')));
    uintptr_t begin = 0;
    uintptr_t end = 0;
    char dash = 0;
    if (range >> std::hex >> begin >> dash >> end) out.emplace_back(begin, end);
  }
  return out;
}

// A page-aligned address of `size` bytes that the server's listener (and
// so each session it forks) has mapped and this process has not, or 0.
uintptr_t taken_in_the_server(size_t size) {
  const auto here = mappings_of("self");
  for (const auto& [begin, end] : mappings_of(std::to_string(scuda::test::shared_server().pid()))) {
    if (end - begin < size || begin >= (uintptr_t{1} << 47)) continue;  // not [vsyscall]
    bool free_here = true;
    for (const auto& [b, e] : here) free_here = free_here && (e <= begin || b >= begin + size);
    if (free_here) return begin;
  }
  return 0;
}

// Where the program's address is taken in the session, the mirror goes
// elsewhere: a kernel given the host address, and a memset of it, still
// reach the mirror, since the client rewrites the address.
TEST_F(ManagedTest, RegisteredMemoryMirroredElsewhereIsReachedThroughItsHostAddress) {
  const size_t size = 4096;
  const uintptr_t at = taken_in_the_server(size);
  ASSERT_NE(at, 0u) << "no mapping of the server's is free in this process";
  void* p = mmap(reinterpret_cast<void*>(at), size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  ASSERT_EQ(p, reinterpret_cast<void*>(at));
  auto* h = static_cast<float*>(p);
  for (int i = 0; i < 64; ++i) h[i] = i;
  ASSERT_EQ(cuMemHostRegister(p, size, 0), CUDA_SUCCESS);
  CUdeviceptr dptr = 0;
  ASSERT_EQ(cuMemHostGetDevicePointer(&dptr, p, 0), CUDA_SUCCESS);
  EXPECT_NE(dptr, reinterpret_cast<CUdeviceptr>(p)) << "the session mirrored it in place";
  scale(h, 3.0f, 64);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(h[i], 3.0f * i) << i;
  ASSERT_EQ(cuMemsetD32(reinterpret_cast<CUdeviceptr>(h + 100), 7, 4), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  unsigned word = 0;
  std::memcpy(&word, h + 101, sizeof word);
  EXPECT_EQ(word, 7u);
  EXPECT_EQ(cuMemHostUnregister(p), CUDA_SUCCESS);
  munmap(p, size);
}

// A registered range no device work has named costs nothing: the device
// cannot reach it. Once a kernel's argument points into it, only the bytes
// that changed move, each way.
TEST_F(ManagedTest, RegisteredMemoryMovesOnlyTheBytesThatChangedOnceNamed) {
  const size_t n = (16u << 20) / sizeof(unsigned);
  std::vector<unsigned> h(n);
  unsigned* other = managed<unsigned>(16);
  ASSERT_EQ(cuMemHostRegister(h.data(), n * sizeof(unsigned), 0), CUDA_SUCCESS);
  const Traffic before = traffic();
  h[n / 2] = 0x05050505;  // changes travel byte by byte: all four differ
  fill(other, 1, 16);     // device work that cannot reach h
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  Traffic after = traffic();
  EXPECT_EQ(after.pushed - before.pushed, 0u);
  EXPECT_EQ(after.pulled - before.pulled, 0u);
  fill(h.data() + 1000, 0x09090909, 10);  // names h: the host's change goes ahead
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  for (int i = 1000; i < 1010; ++i) ASSERT_EQ(h[i], 0x09090909u) << i;
  EXPECT_EQ(h[n / 2], 0x05050505u);
  EXPECT_EQ(traffic().pushed - after.pushed, sizeof(unsigned));
  EXPECT_EQ(traffic().pulled - after.pulled, 10 * sizeof(unsigned));
  after = traffic();
  h[7] = 0x01010101;
  fill(other, 2, 16);  // h is kept in step now
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(traffic().pushed - after.pushed, sizeof(unsigned));
  EXPECT_EQ(cuMemHostUnregister(h.data()), CUDA_SUCCESS);
}

// Once a range was pulled, the session sends the device's changes to it
// ahead of each synchronizing reply: a launch and a stream synchronization
// cost the one round trip of the synchronization, as with no registered
// memory at all.
TEST_F(ManagedTest, ChangesOfAKeptRangeComeWithTheSynchronizationsReply) {
  RegisterableVector<unsigned> h(4096, 0);
  ASSERT_EQ(cuMemHostRegister(h.data(), h.size() * sizeof(unsigned), 0), CUDA_SUCCESS);
  fill(h.data(), 1, 16);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);  // the first pull keeps it
  ASSERT_EQ(h[0], 1u);
  for (unsigned round = 2; round < 6; ++round) {
    const uint64_t replies = scuda_replies_awaited();
    const Traffic before = traffic();
    const unsigned v = 0x01010101u * round;  // every byte changes
    fill(h.data() + 100 * round, v, 8);
    ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
    EXPECT_EQ(scuda_replies_awaited() - replies, 1u) << "round " << round;
    EXPECT_EQ(traffic().pulled - before.pulled, 8 * sizeof(unsigned)) << "round " << round;
    for (unsigned i = 0; i < 8; ++i) ASSERT_EQ(h[100 * round + i], v) << round << " " << i;
  }
  h[3000] = 9;  // the host's change still goes ahead of the next launch
  fill(h.data() + 3001, 10, 1);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(h[3000], 9u);
  EXPECT_EQ(h[3001], 10u);
  EXPECT_EQ(cuMemHostUnregister(h.data()), CUDA_SUCCESS);
}

// A registered range no device work has named takes copies as ordinary
// host memory: what the host wrote in between never reaches the device,
// and a copy overwrites it even with the bytes the mirror already held.
TEST_F(ManagedTest, CopiesIntoUnnamedRegisteredMemoryMoveNothingElse) {
  const size_t n = 1u << 16;
  std::vector<unsigned> h(n);
  ASSERT_EQ(cuMemHostRegister(h.data(), n * sizeof(unsigned), 0), CUDA_SUCCESS);
  CUdeviceptr d = 0;
  ASSERT_EQ(cuMemAlloc(&d, n * sizeof(unsigned)), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32(d, 0, n), CUDA_SUCCESS);
  const Traffic before = traffic();
  for (int round = 0; round < 2; ++round) {
    std::fill(h.begin(), h.end(), 0xffffffffu);
    ASSERT_EQ(cuMemcpyDtoHAsync(h.data(), d, n * sizeof(unsigned), nullptr), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
    for (size_t i = 0; i < n; i += 4099) ASSERT_EQ(h[i], 0u) << "round " << round << " at " << i;
  }
  EXPECT_EQ(traffic().pushed - before.pushed, 0u);
  EXPECT_EQ(traffic().pulled - before.pulled, 0u);
  EXPECT_EQ(cuMemFree(d), CUDA_SUCCESS);
  EXPECT_EQ(cuMemHostUnregister(h.data()), CUDA_SUCCESS);
}

// A memset names registered memory as a kernel's argument does.
// A 2D copy may name managed memory as a host side: it is the device's,
// copied there, and the client does not fault on it while it holds the
// connection (a fault there would wait for that very lock).
TEST_F(ManagedTest, TwoDCopiesOfManagedMemoryNamedAsHostCopyOnTheDevice) {
  const size_t width = 64 * sizeof(unsigned), height = 8;
  unsigned* m = managed<unsigned>(64 * height);
  fill(m, 0x0c0ffee, 64 * height);  // the device's now: the host's pages are gone
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  CUdeviceptr d = 0;
  ASSERT_EQ(cuMemAlloc(&d, width * height), CUDA_SUCCESS);
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = m;
  c.srcPitch = width;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = d;
  c.dstPitch = width;
  c.WidthInBytes = width;
  c.Height = height;
  ASSERT_EQ(cuMemcpy2D(&c), CUDA_SUCCESS);
  std::vector<unsigned> back(64 * height);
  ASSERT_EQ(cuMemcpyDtoH(back.data(), d, width * height), CUDA_SUCCESS);
  for (unsigned v : back) ASSERT_EQ(v, 0x0c0ffeeu);
  EXPECT_EQ(cuMemFree(d), CUDA_SUCCESS);
}

TEST_F(ManagedTest, MemsetsReachRegisteredMemory) {
  RegisterableVector<unsigned> h(4096, 7);
  ASSERT_EQ(cuMemHostRegister(h.data(), h.size() * sizeof(unsigned), 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32(reinterpret_cast<CUdeviceptr>(h.data() + 10), 5, 20), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  for (size_t i = 0; i < h.size(); ++i) ASSERT_EQ(h[i], i >= 10 && i < 30 ? 5u : 7u) << i;
  EXPECT_EQ(cuMemHostUnregister(h.data()), CUDA_SUCCESS);
}

TEST_F(ManagedTest, UnregisteringKeepsTheDevicesLastWrites) {
  RegisterableVector<unsigned> h(64);
  ASSERT_EQ(cuMemHostRegister(h.data(), h.size() * sizeof(unsigned), CU_MEMHOSTREGISTER_DEVICEMAP),
            CUDA_SUCCESS);
  unsigned flags = 0;
  ASSERT_EQ(cuMemHostGetFlags(&flags, h.data() + 3), CUDA_SUCCESS);
  EXPECT_EQ(flags, unsigned{CU_MEMHOSTREGISTER_DEVICEMAP});
  fill(h.data(), 4, 64);
  ASSERT_EQ(cuMemHostUnregister(h.data()), CUDA_SUCCESS);
  for (unsigned v : h) ASSERT_EQ(v, 4u);
  CUdeviceptr dptr = 0;
  EXPECT_EQ(cuMemHostGetDevicePointer(&dptr, h.data(), 0), CUDA_ERROR_INVALID_VALUE);
}

// Under UVA page-locked memory is device memory at its host address, with or
// without CU_MEMHOSTALLOC_DEVICEMAP: a kernel and a memset given such a
// block (XLA's redzone checks) reach it.
TEST_F(ManagedTest, KernelsAndMemsetsReachPageLockedMemory) {
  const int n = 3000;
  unsigned* h = nullptr;
  ASSERT_EQ(cuMemAllocHost(reinterpret_cast<void**>(&h), n * sizeof(unsigned)), CUDA_SUCCESS);
  for (int i = 0; i < n; ++i) h[i] = 7;
  ASSERT_EQ(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(h + 10), 5, 20, nullptr), CUDA_SUCCESS);
  fill(h + 100, 9, 50);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  for (int i = 0; i < n; ++i) {
    const unsigned want = i >= 10 && i < 30 ? 5 : i >= 100 && i < 150 ? 9 : 7;
    ASSERT_EQ(h[i], want) << i;
  }
  h[0] = 11;  // the host's later writes reach the next kernel
  fill(h + 1, 12, 1);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(h[0], 11u);
  EXPECT_EQ(h[1], 12u);
  EXPECT_EQ(cuMemFreeHost(h), CUDA_SUCCESS);
}

// A block that device work never named is not mirrored: host writes to it
// cost the next launch nothing.
TEST_F(ManagedTest, PageLockedMemoryNoKernelNamesStaysOnTheClient) {
  const size_t n = (4u << 20) / sizeof(unsigned);
  unsigned* h = nullptr;
  ASSERT_EQ(cuMemAllocHost(reinterpret_cast<void**>(&h), n * sizeof(unsigned)), CUDA_SUCCESS);
  unsigned* other = managed<unsigned>(16);
  const Traffic before = traffic();
  for (size_t i = 0; i < n; ++i) h[i] = 3;
  fill(other, 1, 16);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(traffic().pushed - before.pushed, 0u);
  EXPECT_EQ(cuMemFreeHost(h), CUDA_SUCCESS);
}

// Freeing a mirrored block stops its mirror: memory mapped at the same
// address afterwards is not overwritten by the device's old bytes.
TEST_F(ManagedTest, FreeingAMirroredBlockForgetsItsMirror) {
  const size_t size = 64 * kPage;
  unsigned* h = nullptr;
  ASSERT_EQ(cuMemAllocHost(reinterpret_cast<void**>(&h), size), CUDA_SUCCESS);
  fill(h, 1, 16);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  ASSERT_EQ(h[0], 1u);
  ASSERT_EQ(cuMemFreeHost(h), CUDA_SUCCESS);
  unsigned* again = nullptr;
  ASSERT_EQ(cuMemAllocHost(reinterpret_cast<void**>(&again), size), CUDA_SUCCESS);
  unsigned* other = managed<unsigned>(16);
  fill(other, 2, 16);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  for (size_t i = 0; i < 16; ++i) ASSERT_EQ(again[i], 0u) << i;
  EXPECT_EQ(cuMemFreeHost(again), CUDA_SUCCESS);
}

TEST_F(ManagedTest, RegistrationErrorsAreTheDrivers) {
  std::vector<char> h(8192);
  ASSERT_EQ(cuMemHostRegister(h.data(), h.size(), 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemHostRegister(h.data() + 100, 10, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  EXPECT_EQ(cuMemHostUnregister(h.data() + 100), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  EXPECT_EQ(cuMemHostUnregister(h.data()), CUDA_SUCCESS);
  EXPECT_EQ(cuMemHostUnregister(h.data()), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  EXPECT_EQ(cuMemHostRegister(h.data(), h.size(), CU_MEMHOSTREGISTER_IOMEMORY),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(cuMemHostRegister(h.data(), 0, 0), CUDA_ERROR_INVALID_VALUE);
}

// A forked child has no fault service: touching managed memory the host
// does not hold ends it with the fault explained, instead of waiting
// forever.
TEST_F(ManagedTest, AForkedChildsManagedFaultEndsItInsteadOfHanging) {
  const size_t n = kPage / sizeof(unsigned);
  unsigned* p = managed<unsigned>(n);
  fill(p, 6, static_cast<int>(n));
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);  // the host's page is invalid now
  EXPECT_DEATH({ std::exit(static_cast<int>(p[0])); },
               "a fault in managed memory could not be served");
  EXPECT_EQ(p[0], 6u);  // the parent is served as before
}

TEST_F(ManagedTest, FaultsOutsideManagedMemoryStillKillTheProgram) {
  managed<int>(16);  // the handler is installed by now
  GTEST_FLAG_SET(death_test_style, "fast");
  EXPECT_EXIT(*static_cast<volatile int*>(nullptr) = 1, ::testing::KilledBySignal(SIGSEGV),
              "segmentation fault outside managed memory, at 0x0000000000000000");
}

// The crash report names the faulting instruction and the stack, by binary,
// so that a crash in a library can be found.
TEST_F(ManagedTest, AFatalFaultPrintsWhereItHappened) {
  managed<int>(16);
  GTEST_FLAG_SET(death_test_style, "fast");
  EXPECT_EXIT(*static_cast<volatile int*>(nullptr) = 1, ::testing::KilledBySignal(SIGSEGV),
              "the faulting instruction is at 0x[0-9a-f]{16}\n(.|\n)*managed_e2e_test\\(");
}

// A handler installed over scuda's would take managed-memory faults first:
// the next managed allocation says so.
TEST_F(ManagedTest, AHandlerInstalledOverScudasIsReported) {
  managed<int>(16);
  struct sigaction mine {
  }, saved{};
  mine.sa_handler = SIG_DFL;
  ASSERT_EQ(sigaction(SIGSEGV, &mine, &saved), 0);
  ::testing::internal::CaptureStderr();
  managed<int>(16);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(sigaction(SIGSEGV, &saved, nullptr), 0);
  EXPECT_NE(err.find("another library replaced scuda's SIGSEGV handler"), std::string::npos) << err;
}

}  // namespace
