// cuMemAlloc_v2 at addresses the client chooses (docs/protocol.md, "Device
// memory"), against a server whose double has 16 GiB: allocations of the
// granularity (2 MiB) or more go one-way while well clear of capacity, and
// wait for their result near it.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "client/remote_call.h"
#include "primary_context_test.h"
#include "protocol/codec.h"
#include "protocol/ops.h"
#include "server_process.h"

extern "C" uint64_t scuda_replies_awaited();

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGiB = size_t{1} << 30;
constexpr size_t kTotal = 16 * kGiB;

// The double's device memory is set before the server starts (its session
// processes inherit it).
class VmmServer : public ::testing::Environment {
 public:
  void SetUp() override {
    setenv("SCUDA_DOUBLE_TOTAL_MEMORY", std::to_string(kTotal).c_str(), 1);
    server_ = new scuda::test::ServerProcess();
    setenv("SCUDA_SERVER", server_->address().c_str(), 1);
  }
  void TearDown() override { delete server_; }

 private:
  scuda::test::ServerProcess* server_ = nullptr;
};

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new VmmServer);

class VmmTest : public scuda::test::PrimaryContextTest {
 protected:
  void SetUp() override {
    PrimaryContextTest::SetUp();
    if (HasFatalFailure()) return;
    // The first allocation of the process reserves the addresses (one
    // round trip); every test starts past it.
    CUdeviceptr first = 0;
    ASSERT_EQ(cuMemAlloc(&first, 2 * kMiB), CUDA_SUCCESS);
    ASSERT_EQ(cuMemFree(first), CUDA_SUCCESS);
  }
  size_t free_memory() {
    size_t free = 0, total = 0;
    EXPECT_EQ(cuMemGetInfo(&free, &total), CUDA_SUCCESS);
    EXPECT_EQ(total, kTotal);
    return free;
  }
};

TEST_F(VmmTest, AllocationsOfTheGranularityGoOneWay) {
  const size_t before_free = free_memory();
  const uint64_t before = scuda_replies_awaited();
  std::vector<CUdeviceptr> ptrs(3);
  ASSERT_EQ(cuMemAlloc(&ptrs[0], 2 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&ptrs[1], 20 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&ptrs[2], 5 * kMiB + 1), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before) << "allocations waited for the server";
  EXPECT_EQ(ptrs[0] % (2 * kMiB), 0u);
  EXPECT_EQ(free_memory(), before_free - 2 * kMiB - 20 * kMiB - 6 * kMiB)
      << "a synchronous call sees the maps sent before it";
  for (CUdeviceptr p : ptrs) EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
  EXPECT_EQ(free_memory(), before_free);
}

TEST_F(VmmTest, DataRoundTripsThroughMappedMemory) {
  const size_t size = 4 * kMiB + 100;
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc(&p, size), CUDA_SUCCESS);
  std::vector<uint8_t> out(size), in(size);
  for (size_t i = 0; i < size; ++i) out[i] = static_cast<uint8_t>(i * 7 + 3);
  ASSERT_EQ(cuMemcpyHtoD(p, out.data(), size), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8(p + size - 10, 0xab, 10), CUDA_SUCCESS);
  for (size_t i = size - 10; i < size; ++i) out[i] = 0xab;
  ASSERT_EQ(cuMemcpyDtoH(in.data(), p, size), CUDA_SUCCESS);
  EXPECT_EQ(in, out);
  EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
}

TEST_F(VmmTest, RangesAreTheAllocationsAsAskedFor) {
  const size_t size = 3 * kMiB + 5;
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc(&p, size), CUDA_SUCCESS);
  CUdeviceptr base = 0;
  size_t range = 0;
  ASSERT_EQ(cuMemGetAddressRange(&base, &range, p + kMiB), CUDA_SUCCESS);
  EXPECT_EQ(base, p);
  EXPECT_EQ(range, size);
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                 CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  unsigned type = 0;
  CUdeviceptr start = 0;
  size_t length = 0;
  void* data[] = {&type, &start, &length};
  ASSERT_EQ(cuPointerGetAttributes(3, attrs, data, p + 17), CUDA_SUCCESS);
  EXPECT_EQ(type, unsigned{CU_MEMORYTYPE_DEVICE});
  EXPECT_EQ(start, p);
  EXPECT_EQ(length, size);
  std::vector<uint8_t> bytes(size + 1);
  EXPECT_EQ(cuMemcpyDtoH(bytes.data(), p, size + 1), CUDA_ERROR_INVALID_VALUE)
      << "past the allocation, though inside its mapping";
  EXPECT_EQ(cuMemcpyHtoD(p + 1, bytes.data(), size), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
}

TEST_F(VmmTest, FreedAddressesAreReused) {
  CUdeviceptr a = 0, b = 0, c = 0, again = 0;
  ASSERT_EQ(cuMemAlloc(&a, 8 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&b, 4 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&c, 8 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree(b), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&again, 4 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(again, b) << "first fit takes the hole";
  for (int i = 0; i < 200; ++i) {
    CUdeviceptr p = 0;
    ASSERT_EQ(cuMemAlloc(&p, 64 * kMiB), CUDA_SUCCESS);
    ASSERT_EQ(cuMemsetD32(p, i, 16), CUDA_SUCCESS);
    ASSERT_EQ(cuMemFree(p), CUDA_SUCCESS);
  }
  for (CUdeviceptr p : {a, again, c}) EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
}

TEST_F(VmmTest, SmallAllocationsWaitForTheServer) {
  const uint64_t before = scuda_replies_awaited();
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc(&p, 4096), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before + 1);
  EXPECT_NE(p % (2 * kMiB), 0u) << "the driver's own address, not one of the reservation's";
  EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
}

// PyTorch's caching allocator frees its cache and retries when cudaMalloc
// says it is out of memory: that must come from the call itself.
TEST_F(VmmTest, RunningOutNearCapacityIsReportedAtOnce) {
  CUdeviceptr big = 0, near = 0, over = 0;
  uint64_t before = scuda_replies_awaited();
  ASSERT_EQ(cuMemAlloc(&big, 12 * kGiB), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before) << "well clear of capacity";
  before = scuda_replies_awaited();
  ASSERT_EQ(cuMemAlloc(&near, 3 * kGiB), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before + 1) << "near capacity the map waits for its result";
  EXPECT_EQ(cuMemAlloc(&over, 2 * kGiB), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuMemAlloc(&over, 2 * kTotal), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS) << "nothing failed one-way";
  ASSERT_EQ(cuMemFree(big), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&over, 2 * kGiB), CUDA_SUCCESS) << "the retry after freeing";
  EXPECT_EQ(cuMemFree(over), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(near), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
}

// Memory the client does not know of (the program's own cuMemCreate) can
// make a one-way map fail: its error comes back at the next synchronizing
// call, and freeing the allocation frees its address.
TEST_F(VmmTest, AFailedOneWayMapIsReportedAtTheNextSynchronization) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev_;
  CUmemGenericAllocationHandle hog = 0;
  ASSERT_EQ(cuMemCreate(&hog, 15 * kGiB, &prop, 0), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  const uint64_t before = scuda_replies_awaited();
  ASSERT_EQ(cuMemAlloc(&p, 2 * kGiB), CUDA_SUCCESS) << "the estimate did not know of the hog";
  EXPECT_EQ(scuda_replies_awaited(), before);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
  EXPECT_EQ(cuMemRelease(hog), CUDA_SUCCESS);
  CUdeviceptr again = 0;
  ASSERT_EQ(cuMemAlloc(&again, 2 * kGiB), CUDA_SUCCESS);
  EXPECT_EQ(again, p);
  EXPECT_EQ(cuMemFree(again), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
}

// A request through the client's session, as a hostile client could send
// it: the result the server replied with.
uint32_t request(uint32_t op, std::vector<uint64_t> words) {
  scuda::protocol::Writer w;
  for (uint64_t word : words) w.u64(word);
  void* reply = nullptr;
  size_t reply_size = 0;
  const uint32_t rc = scuda_remote_call(op, w.data().data(), w.size(), &reply, &reply_size);
  std::free(reply);
  return rc;
}

TEST_F(VmmTest, MapsOverOrOutsideTheSessionsMemoryAreRefused) {
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc(&p, 4 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8(p, 0x5c, 4 * kMiB), CUDA_SUCCESS);
  const uint32_t invalid = CUDA_ERROR_INVALID_VALUE;
  using scuda::protocol::kOpVaMap;
  EXPECT_EQ(request(kOpVaMap, {p, 2 * kMiB}), invalid) << "the same start";
  EXPECT_EQ(request(kOpVaMap, {p + 2 * kMiB, 4 * kMiB}), invalid) << "overlapping its end";
  EXPECT_EQ(request(kOpVaMap, {p + 4 * kMiB + 4096, 2 * kMiB}), invalid) << "unaligned";
  EXPECT_EQ(request(kOpVaMap, {p + 4 * kMiB, 3 * kMiB}), invalid) << "an unaligned size";
  EXPECT_EQ(request(kOpVaMap, {p + 4 * kMiB, 0}), invalid) << "nothing";
  EXPECT_EQ(request(kOpVaMap, {0x200000, 2 * kMiB}), invalid) << "outside every reservation";
  EXPECT_EQ(request(kOpVaMap, {p, ~uint64_t{0} - 2 * kMiB + 1}), invalid) << "wrapping around";
  EXPECT_EQ(request(scuda::protocol::kOpVaFree, {p + 2 * kMiB}), uint32_t{CUDA_SUCCESS})
      << "nothing mapped there: left alone";
  std::vector<uint8_t> back(4 * kMiB);
  ASSERT_EQ(cuMemcpyDtoH(back.data(), p, back.size()), CUDA_SUCCESS);
  EXPECT_EQ(back, std::vector<uint8_t>(4 * kMiB, 0x5c)) << "the allocation is untouched";
  EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
}

TEST_F(VmmTest, ThreadsAllocateAtOnce) {
  constexpr int kThreads = 4, kEach = 40;
  std::mutex mu;
  std::vector<CUdeviceptr> all;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
      for (int i = 0; i < kEach; ++i) {
        CUdeviceptr p = 0;
        ASSERT_EQ(cuMemAlloc(&p, (t + 1) * 2 * kMiB), CUDA_SUCCESS);
        ASSERT_EQ(cuMemsetD8(p, static_cast<unsigned char>(t), (t + 1) * 2 * kMiB), CUDA_SUCCESS);
        std::lock_guard lock(mu);
        all.push_back(p);
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(std::set<CUdeviceptr>(all.begin(), all.end()).size(), all.size());
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS) << "no map overlapped another";
  for (CUdeviceptr p : all) EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
}

}  // namespace
