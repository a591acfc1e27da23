// cuMemAlloc_v2 at addresses the client chooses (docs/protocol.md, "Device
// memory"), against a server whose double has 16 GiB: allocations go
// one-way while well clear of capacity (smaller ones in slots of 2 MiB
// chunks), and wait for their result near it; frees go one-way.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/transport/remote_call.h"
#include "device_checks.h"
#include "primary_context_test.h"
#include "protocol/codec.h"
#include "protocol/op_layouts.h"
#include "protocol/ops.h"
#include "server_process.h"

extern "C" uint64_t scuda_replies_awaited();

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGiB = size_t{1} << 30;
constexpr size_t kTotal = 16 * kGiB;

scuda::test::ServerProcess* server = nullptr;

// The double's device memory is set before the server starts (its session
// processes inherit it).
class VmmServer : public ::testing::Environment {
 public:
  void SetUp() override {
    setenv("SCUDA_DOUBLE_TOTAL_MEMORY", std::to_string(kTotal).c_str(), 1);
    server = new scuda::test::ServerProcess();
    setenv("SCUDA_SERVER", server->address().c_str(), 1);
  }
  void TearDown() override { delete server; }
};

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new VmmServer);

std::string double_log() {
  std::ifstream in(server->launch_log());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The first word of each line the double logged after `from` bytes.
std::vector<std::string> logged_since(size_t from) {
  std::istringstream in(double_log().substr(from));
  std::vector<std::string> words;
  for (std::string line; std::getline(in, line);) words.push_back(line.substr(0, line.find(' ')));
  return words;
}

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

// Memory the program maps in a range it reserved is device memory to a
// unified copy (NCCL copies so, with cudaMemcpyDefault).
TEST_F(VmmTest, UnifiedCopiesReachMemoryMappedInAReservedRange) {
  scuda::test::OwnMapping mapping(0, 2 * kMiB, 4 * kMiB);
  ASSERT_TRUE(mapping.ok());
  const CUdeviceptr va = mapping.address();
  const CUmemAccessDesc access{{CU_MEM_LOCATION_TYPE_DEVICE, 0},
                               CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  ASSERT_EQ(cuMemSetAccess(va, 2 * kMiB, &access, 1), CUDA_SUCCESS);
  std::vector<uint32_t> out(1000), in(1000);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint32_t>(i * 3 + 1);
  const size_t bytes = out.size() * sizeof(uint32_t);
  ASSERT_EQ(cuMemcpy(va + 4096, reinterpret_cast<CUdeviceptr>(out.data()), bytes), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpy(reinterpret_cast<CUdeviceptr>(in.data()), va + 4096, bytes), CUDA_SUCCESS);
  EXPECT_EQ(in, out);
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

// cuBLAS and cuDNN ask for a few small buffers: slots of chunks the client
// maps like any other allocation, each described as asked for.
TEST_F(VmmTest, SmallAllocationsAreCarvedWithoutARoundTrip) {
  const std::vector<size_t> sizes = {1, 256, 512, 513, 4096, 100000, kMiB / 2, kMiB + 1, 4096, 1};
  const uint64_t before = scuda_replies_awaited();
  std::vector<CUdeviceptr> ptrs(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) ASSERT_EQ(cuMemAlloc(&ptrs[i], sizes[i]), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before) << "allocations waited for the server";
  std::map<CUdeviceptr, size_t> ranges;
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(ptrs[i] % 512, 0u) << sizes[i];
    ranges[ptrs[i]] = sizes[i];
    CUdeviceptr base = 0;
    size_t size = 0;
    ASSERT_EQ(cuMemGetAddressRange(&base, &size, ptrs[i] + sizes[i] - 1), CUDA_SUCCESS);
    EXPECT_EQ(base, ptrs[i]);
    EXPECT_EQ(size, sizes[i]);
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                   CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void* data[] = {&base, &size};
    ASSERT_EQ(cuPointerGetAttributes(2, attrs, data, ptrs[i]), CUDA_SUCCESS);
    EXPECT_EQ(base, ptrs[i]);
    EXPECT_EQ(size, sizes[i]);
    ASSERT_EQ(cuMemsetD8(ptrs[i], static_cast<unsigned char>(i), sizes[i]), CUDA_SUCCESS);
  }
  ASSERT_EQ(ranges.size(), sizes.size());
  for (auto it = ranges.begin(); std::next(it) != ranges.end(); ++it)
    EXPECT_LE(it->first + it->second, std::next(it)->first) << "overlaps the next";
  std::vector<uint8_t> bytes(sizes[5] + 1);
  EXPECT_EQ(cuMemcpyDtoH(bytes.data(), ptrs[5], sizes[5] + 1), CUDA_ERROR_INVALID_VALUE)
      << "past the allocation, though inside its chunk";
  ASSERT_EQ(cuMemcpyDtoH(bytes.data(), ptrs[5], sizes[5]), CUDA_SUCCESS);
  EXPECT_EQ(bytes[0], 5);
  EXPECT_EQ(bytes[sizes[5] - 1], 5) << "no neighbour wrote over it";
  for (CUdeviceptr p : ptrs) EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
}

TEST_F(VmmTest, FreesMakeNoRoundTrip) {
  CUdeviceptr large = 0, small = 0;
  ASSERT_EQ(cuMemAlloc(&large, 6 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&small, 4096), CUDA_SUCCESS);
  const size_t before_free = free_memory();
  const uint64_t before = scuda_replies_awaited();
  ASSERT_EQ(cuMemFree(large), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree(small), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(0), CUDA_SUCCESS) << "cudaFree(nullptr), as the driver answers it";
  EXPECT_EQ(scuda_replies_awaited(), before) << "frees waited for the server";
  EXPECT_EQ(free_memory(), before_free + 6 * kMiB) << "a synchronous call sees the unmap";
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
}

TEST_F(VmmTest, InvalidFreesStillFail) {
  CUdeviceptr large = 0, small = 0;
  ASSERT_EQ(cuMemAlloc(&large, 2 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&small, 512), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(small + 256), CUDA_ERROR_INVALID_VALUE) << "inside an allocation";
  EXPECT_EQ(cuMemFree(large + 4096), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(small), CUDA_ERROR_INVALID_CONTEXT) << "the driver's answer";
  ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree(small), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree(large), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(small), CUDA_ERROR_INVALID_VALUE) << "twice";
  EXPECT_EQ(cuMemFree(large), CUDA_ERROR_INVALID_VALUE) << "twice";
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS) << "nothing failed one-way";
}

// Native cuMemFree waits for the device's work: work queued before a free,
// on any stream, must not overlap work queued after the slot's reuse.
TEST_F(VmmTest, AFreedSlotIsReusedOnlyAfterTheDevicesWork) {
  CUmodule mod = nullptr;
  CUfunction fill = nullptr;
  ASSERT_EQ(cuModuleLoadData(&mod, "scuda-double-module\nkernel fill 8 4 4\n"), CUDA_SUCCESS);
  ASSERT_EQ(cuModuleGetFunction(&fill, mod, "fill"), CUDA_SUCCESS);
  CUstream other = nullptr;
  ASSERT_EQ(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  auto launch = [&](CUdeviceptr p, CUstream stream) {
    unsigned value = 7;
    int n = 16;
    void* params[] = {&p, &value, &n};
    return cuLaunchKernel(fill, 1, 1, 1, 16, 1, 1, 0, stream, params, nullptr);
  };
  CUdeviceptr p = 0, again = 0;
  ASSERT_EQ(cuMemAlloc(&p, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS) << "earlier frees have waited";
  const size_t log_start = double_log().size();
  const uint64_t before = scuda_replies_awaited();
  ASSERT_EQ(launch(p, other), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree(p), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&again, 64), CUDA_SUCCESS);
  EXPECT_EQ(again, p) << "the freed slot first";
  ASSERT_EQ(launch(again, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(logged_since(log_start), (std::vector<std::string>{"launch", "synchronize", "launch"}));
  EXPECT_EQ(cuMemFree(again), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(other), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleUnload(mod), CUDA_SUCCESS);
}

// 1 MiB slots, two to a chunk (no other test asks for them): chunks count
// as used memory, and freeing keeps one idle chunk of the class.
TEST_F(VmmTest, ChunksCountAndOneIdleChunkIsKept) {
  const size_t slot = 800 * 1024;
  std::vector<CUdeviceptr> ptrs(2);
  for (CUdeviceptr& p : ptrs) ASSERT_EQ(cuMemAlloc(&p, slot), CUDA_SUCCESS);
  for (CUdeviceptr p : ptrs) ASSERT_EQ(cuMemFree(p), CUDA_SUCCESS);
  const size_t before_free = free_memory();  // with the class's idle chunk
  const uint64_t before = scuda_replies_awaited();
  ptrs.resize(6);
  for (CUdeviceptr& p : ptrs) ASSERT_EQ(cuMemAlloc(&p, slot), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before);
  EXPECT_EQ(free_memory(), before_free - 4 * kMiB) << "the idle chunk and two more";
  const uint64_t after = scuda_replies_awaited();
  for (CUdeviceptr p : ptrs) ASSERT_EQ(cuMemFree(p), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), after);
  EXPECT_EQ(free_memory(), before_free) << "one idle chunk kept";
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
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
  CUdeviceptr rest = 0;
  ASSERT_EQ(cuMemAlloc(&rest, free_memory() / (2 * kMiB) * (2 * kMiB)), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAlloc(&over, 200 * 1024), CUDA_ERROR_OUT_OF_MEMORY)
      << "a small allocation's chunk near capacity (no other test asks for its class)";
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS) << "nothing failed one-way";
  ASSERT_EQ(cuMemFree(rest), CUDA_SUCCESS);
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
template <class Op>
uint32_t request(const typename Op::Request& r) {
  const scuda::protocol::Writer w = scuda::protocol::encode(r);
  const uint32_t op = Op::kOp;
  void* reply = nullptr;
  size_t reply_size = 0;
  const uint32_t rc = scuda_remote_call(0, op, w.data().data(), w.size(), &reply, &reply_size);
  std::free(reply);
  return rc;
}

TEST_F(VmmTest, MapsOverOrOutsideTheSessionsMemoryAreRefused) {
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc(&p, 4 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8(p, 0x5c, 4 * kMiB), CUDA_SUCCESS);
  const uint32_t invalid = CUDA_ERROR_INVALID_VALUE;
  using VaMap = scuda::protocol::op::VaMap;
  EXPECT_EQ(request<VaMap>({p, 2 * kMiB}), invalid) << "the same start";
  EXPECT_EQ(request<VaMap>({p + 2 * kMiB, 4 * kMiB}), invalid) << "overlapping its end";
  EXPECT_EQ(request<VaMap>({p + 4 * kMiB + 4096, 2 * kMiB}), invalid) << "unaligned";
  EXPECT_EQ(request<VaMap>({p + 4 * kMiB, 3 * kMiB}), invalid) << "an unaligned size";
  EXPECT_EQ(request<VaMap>({p + 4 * kMiB, 0}), invalid) << "nothing";
  EXPECT_EQ(request<VaMap>({0x200000, 2 * kMiB}), invalid) << "outside every reservation";
  EXPECT_EQ(request<VaMap>({p, ~uint64_t{0} - 2 * kMiB + 1}), invalid) << "wrapping around";
  EXPECT_EQ(request<scuda::protocol::op::VaFree>({p + 2 * kMiB}), uint32_t{CUDA_SUCCESS})
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
        const size_t size = i % 2 ? (t + 1) * 1000 : (t + 1) * 2 * kMiB;
        ASSERT_EQ(cuMemAlloc(&p, size), CUDA_SUCCESS);
        ASSERT_EQ(cuMemsetD8(p, static_cast<unsigned char>(t), size), CUDA_SUCCESS);
        std::lock_guard lock(mu);
        all.push_back(p);
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(std::set<CUdeviceptr>(all.begin(), all.end()).size(), all.size());
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS) << "no map overlapped another";
  for (CUdeviceptr p : all) EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
}

// Memory on the server's host could not be dereferenced here: its creation
// is refused, so that a program that probes for it (NCCL: granularity, then
// one creation) takes page-locked memory instead.
TEST_F(VmmTest, MemoryLocatedOnTheHostIsRefused) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  size_t granularity = 0;
  ASSERT_EQ(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_SUCCESS);
  EXPECT_GT(granularity, 0u);
  CUmemGenericAllocationHandle memory = 0;
  EXPECT_EQ(cuMemCreate(&memory, 2 * kMiB, &prop, 0), CUDA_ERROR_NOT_SUPPORTED);
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  ASSERT_EQ(cuMemCreate(&memory, 2 * kMiB, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemRelease(memory), CUDA_SUCCESS);
}

}  // namespace
