// End to end: the driver calls that take arrays of structs or call the
// program back (issue 18), through the stand-in libcuda and a real
// `scuda server` loading the driver test double, which implements each
// with behaviour the tests can see. Nothing here runs on a GPU.
#include <cuda.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "primary_context_test.h"
#include "shared_server.h"

namespace {

// The double's kernels; their unified functions lie one page apart from
// its base (tests/double/library.cc).
const char kModule[] =
    "scuda-double-module\n"
    "kernel vadd 8 8 8 4\n"
    "kernel fill 8 4 4\n";
constexpr uintptr_t kUnifiedFunctions = 0x7f0000000000;

class SurfaceTest : public scuda::test::PrimaryContextTest {};

// The server's driver answers; its address comes back as it is.
TEST_F(SurfaceTest, UnifiedFunctionsAreTheServersAddresses) {
  CUlibrary lib = nullptr;
  ASSERT_EQ(cuLibraryLoadData(&lib, kModule, nullptr, nullptr, 0, nullptr, nullptr, 0),
            CUDA_SUCCESS);
  void* vadd = nullptr;
  void* fill = nullptr;
  ASSERT_EQ(cuLibraryGetUnifiedFunction(&vadd, lib, "vadd"), CUDA_SUCCESS);
  ASSERT_EQ(cuLibraryGetUnifiedFunction(&fill, lib, "fill"), CUDA_SUCCESS);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(vadd), kUnifiedFunctions);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(fill), kUnifiedFunctions + 0x1000);
  void* missing = nullptr;
  EXPECT_EQ(cuLibraryGetUnifiedFunction(&missing, lib, "nowhere"), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(missing, nullptr);
  ASSERT_EQ(cuLibraryUnload(lib), CUDA_SUCCESS);
}

// The double's 4 SMs go in pairs: a query says how many groups fit, a
// split fills the groups asked for and leaves the rest.
TEST_F(SurfaceTest, SmResourcesSplitOnTheServer) {
  CUdevResource sms{};
  ASSERT_EQ(cuDeviceGetDevResource(dev_, &sms, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
  ASSERT_EQ(sms.sm.smCount, 4u);
  unsigned groups = 0;
  ASSERT_EQ(cuDevSmResourceSplitByCount(nullptr, &groups, &sms, nullptr, 0, 1), CUDA_SUCCESS);
  EXPECT_EQ(groups, 2u);
  CUdevResource result[3] = {};
  CUdevResource remaining{};
  groups = 1;
  ASSERT_EQ(cuDevSmResourceSplitByCount(result, &groups, &sms, &remaining, 0, 2), CUDA_SUCCESS);
  ASSERT_EQ(groups, 1u);
  EXPECT_EQ(result[0].type, CU_DEV_RESOURCE_TYPE_SM);
  EXPECT_EQ(result[0].sm.smCount, 2u);
  EXPECT_EQ(result[1].type, CU_DEV_RESOURCE_TYPE_INVALID);
  EXPECT_EQ(remaining.sm.smCount, 2u);
  groups = 3;
  ASSERT_EQ(cuDevSmResourceSplitByCount(result, &groups, &sms, &remaining, 0, 1), CUDA_SUCCESS);
  EXPECT_EQ(groups, 2u);
  EXPECT_EQ(result[1].sm.smCount, 2u);
  EXPECT_EQ(remaining.sm.smCount, 0u);
  EXPECT_EQ(cuDevSmResourceSplitByCount(result, &groups, &sms, nullptr, 0, 8),
            CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);
}

CUstreamBatchMemOpParams write_op(CUdeviceptr at, uint64_t value, bool wide) {
  CUstreamBatchMemOpParams op{};
  op.writeValue.operation =
      wide ? CU_STREAM_MEM_OP_WRITE_VALUE_64 : CU_STREAM_MEM_OP_WRITE_VALUE_32;
  op.writeValue.address = at;
  if (wide) op.writeValue.value64 = value;
  else op.writeValue.value = static_cast<cuuint32_t>(value);
  return op;
}

struct Words {
  uint32_t narrow;
  uint32_t pad;
  uint64_t wide;
};

Words read_words(CUdeviceptr at) {
  Words w{};
  EXPECT_EQ(cuMemcpyDtoH(&w, at, sizeof w), CUDA_SUCCESS);
  return w;
}

// The operations cross by value: get-params returns them from the server's
// driver in the client's own copy, and launches write what they say.
TEST_F(SurfaceTest, BatchMemOpNodesRoundTripAndRun) {
  CUdeviceptr words = 0;
  ASSERT_EQ(cuMemAlloc(&words, sizeof(Words)), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8(words, 0, sizeof(Words)), CUDA_SUCCESS);
  std::vector<CUstreamBatchMemOpParams> ops = {write_op(words, 0x1234, false),
                                               write_op(words + 8, 0x1122334455667788, true)};
  CUgraph graph = nullptr;
  ASSERT_EQ(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
  CUDA_BATCH_MEM_OP_NODE_PARAMS params{ctx_, 2, ops.data(), 0};
  CUgraphNode node = nullptr;
  ASSERT_EQ(cuGraphAddBatchMemOpNode(&node, graph, nullptr, 0, &params), CUDA_SUCCESS);
  ops[0].writeValue.value = 0xdead;  // the node keeps its own copy

  CUDA_BATCH_MEM_OP_NODE_PARAMS got{};
  ASSERT_EQ(cuGraphBatchMemOpNodeGetParams(node, &got), CUDA_SUCCESS);
  EXPECT_EQ(got.ctx, ctx_);
  ASSERT_EQ(got.count, 2u);
  ASSERT_NE(got.paramArray, nullptr);
  EXPECT_NE(got.paramArray, ops.data());
  EXPECT_EQ(got.paramArray[0].writeValue.operation, CU_STREAM_MEM_OP_WRITE_VALUE_32);
  EXPECT_EQ(got.paramArray[0].writeValue.value, 0x1234u);
  EXPECT_EQ(got.paramArray[1].writeValue.address, words + 8);
  EXPECT_EQ(got.paramArray[1].writeValue.value64, 0x1122334455667788u);

  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(read_words(words).narrow, 0x1234u);
  EXPECT_EQ(read_words(words).wide, 0x1122334455667788u);

  // A set changes the graph's node; an executable graph's set, its copy.
  params.count = 1;
  ASSERT_EQ(cuGraphBatchMemOpNodeSetParams(node, &params), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphBatchMemOpNodeGetParams(node, &got), CUDA_SUCCESS);
  ASSERT_EQ(got.count, 1u);
  EXPECT_EQ(got.paramArray[0].writeValue.value, 0xdeadu);
  std::vector<CUstreamBatchMemOpParams> later = {write_op(words, 0x77, false)};
  CUDA_BATCH_MEM_OP_NODE_PARAMS exec_params{ctx_, 1, later.data(), 0};
  ASSERT_EQ(cuGraphExecBatchMemOpNodeSetParams(exec, node, &exec_params), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(read_words(words).narrow, 0x77u);

  CUstreamBatchMemOpParams outside = write_op(0x10, 1, false);
  CUDA_BATCH_MEM_OP_NODE_PARAMS bad{ctx_, 1, &outside, 0};
  EXPECT_EQ(cuGraphBatchMemOpNodeSetParams(node, &bad), CUDA_ERROR_INVALID_VALUE);
  bad.paramArray = nullptr;
  EXPECT_EQ(cuGraphBatchMemOpNodeSetParams(node, &bad), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree(words), CUDA_SUCCESS);
}

constexpr size_t kPhysical = 2 << 20;
constexpr size_t kWidth = 64, kHeight = 4;

CUmemGenericAllocationHandle patterned_memory(CUdeviceptr* va, unsigned char pattern) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  CUmemGenericAllocationHandle memory = 0;
  EXPECT_EQ(cuMemCreate(&memory, kPhysical, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAddressReserve(va, kPhysical, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemMap(*va, kPhysical, 0, memory, 0), CUDA_SUCCESS);
  CUmemAccessDesc access{prop.location, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  EXPECT_EQ(cuMemSetAccess(*va, kPhysical, &access, 1), CUDA_SUCCESS);
  EXPECT_EQ(cuMemsetD8(*va, pattern, kPhysical), CUDA_SUCCESS);
  return memory;
}

CUarray byte_array(unsigned flags) {
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  desc.Width = kWidth;
  desc.Height = kHeight;
  desc.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  desc.NumChannels = 1;
  desc.Flags = flags;
  CUarray a = nullptr;
  EXPECT_EQ(cuArray3DCreate(&a, &desc), CUDA_SUCCESS);
  return a;
}

// Rows 1 and 2 of the array's level 0.
CUarrayMapInfo middle_rows(CUarray array, CUmemGenericAllocationHandle memory, bool map) {
  CUarrayMapInfo m{};
  m.resourceType = CU_RESOURCE_TYPE_ARRAY;
  m.resource.array = array;
  m.subresourceType = CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_SPARSE_LEVEL;
  m.subresource.sparseLevel.offsetY = 1;
  m.subresource.sparseLevel.extentWidth = kWidth;
  m.subresource.sparseLevel.extentHeight = 2;
  m.subresource.sparseLevel.extentDepth = 1;
  m.memOperationType = map ? CU_MEM_OPERATION_TYPE_MAP : CU_MEM_OPERATION_TYPE_UNMAP;
  m.memHandleType = CU_MEM_HANDLE_TYPE_GENERIC;
  m.memHandle.memHandle = memory;
  m.deviceBitMask = 1;
  return m;
}

std::vector<unsigned char> array_bytes(CUarray a) {
  std::vector<unsigned char> bytes(kWidth * kHeight);
  EXPECT_EQ(cuMemcpyAtoH(bytes.data(), a, 0, bytes.size()), CUDA_SUCCESS);
  return bytes;
}

// The session resolves each entry's array; the double fills a mapped
// region from the physical memory, so the array's bytes show the mapping.
TEST_F(SurfaceTest, SparseArrayMappingsReachTheArraysNamed) {
  CUdeviceptr va = 0;
  const CUmemGenericAllocationHandle memory = patterned_memory(&va, 0x5a);
  const CUarray sparse = byte_array(CUDA_ARRAY3D_SPARSE);
  CUarrayMapInfo map = middle_rows(sparse, memory, true);
  ASSERT_EQ(cuMemMapArrayAsync(&map, 1, nullptr), CUDA_SUCCESS);
  std::vector<unsigned char> bytes = array_bytes(sparse);
  for (size_t i = 0; i < bytes.size(); ++i)
    ASSERT_EQ(bytes[i], i / kWidth == 1 || i / kWidth == 2 ? 0x5a : 0) << i;
  CUarrayMapInfo unmap = middle_rows(sparse, 0, false);
  ASSERT_EQ(cuMemMapArrayAsync(&unmap, 1, nullptr), CUDA_SUCCESS);
  bytes = array_bytes(sparse);
  EXPECT_EQ(std::count(bytes.begin(), bytes.end(), 0), static_cast<long>(bytes.size()));

  const CUarray dense = byte_array(0);
  CUarrayMapInfo refused = middle_rows(dense, memory, true);
  EXPECT_EQ(cuMemMapArrayAsync(&refused, 1, nullptr), CUDA_ERROR_INVALID_VALUE);
  CUarrayMapInfo unknown = middle_rows(reinterpret_cast<CUarray>(0xdead0000), memory, true);
  EXPECT_EQ(cuMemMapArrayAsync(&unknown, 1, nullptr), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuMemMapArrayAsync(nullptr, 1, nullptr), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuArrayDestroy(sparse), CUDA_SUCCESS);
  ASSERT_EQ(cuArrayDestroy(dense), CUDA_SUCCESS);
  ASSERT_EQ(cuMemUnmap(va, kPhysical), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAddressFree(va, kPhysical), CUDA_SUCCESS);
  ASSERT_EQ(cuMemRelease(memory), CUDA_SUCCESS);
}

// The double "decompresses" by copying; the error index of a failed batch
// comes back with its error.
TEST_F(SurfaceTest, DecompressionBatchesRunOnTheServer) {
  constexpr size_t kBytes = 256;
  CUdeviceptr src = 0, dst = 0, actual = 0;
  ASSERT_EQ(cuMemAlloc(&src, kBytes), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&dst, kBytes), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&actual, sizeof(cuuint32_t)), CUDA_SUCCESS);
  std::vector<unsigned char> data(kBytes);
  for (size_t i = 0; i < kBytes; ++i) data[i] = static_cast<unsigned char>(i * 7);
  ASSERT_EQ(cuMemcpyHtoD(src, data.data(), kBytes), CUDA_SUCCESS);
  CUmemDecompressParams p[2] = {};
  p[0].srcNumBytes = kBytes;
  p[0].dstNumBytes = kBytes;
  p[0].dstActBytes = reinterpret_cast<cuuint32_t*>(actual);
  p[0].src = reinterpret_cast<const void*>(src);
  p[0].dst = reinterpret_cast<void*>(dst);
  p[0].algo = CU_MEM_DECOMPRESS_ALGORITHM_LZ4;
  size_t error_index = 42;
  ASSERT_EQ(cuMemBatchDecompressAsync(p, 1, 0, &error_index, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  std::vector<unsigned char> out(kBytes);
  ASSERT_EQ(cuMemcpyDtoH(out.data(), dst, kBytes), CUDA_SUCCESS);
  EXPECT_EQ(out, data);
  cuuint32_t produced = 0;
  ASSERT_EQ(cuMemcpyDtoH(&produced, actual, sizeof produced), CUDA_SUCCESS);
  EXPECT_EQ(produced, kBytes);

  p[1] = p[0];
  p[1].algo = static_cast<CUmemDecompressAlgorithm>(0);
  EXPECT_EQ(cuMemBatchDecompressAsync(p, 2, 0, &error_index, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(error_index, 1u);
  EXPECT_EQ(cuMemBatchDecompressAsync(p, 1, 5, &error_index, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(error_index, SIZE_MAX);
  for (CUdeviceptr d : {src, dst, actual}) ASSERT_EQ(cuMemFree(d), CUDA_SUCCESS);
}

struct Heard {
  std::vector<CUasyncNotificationInfo> infos;
  std::vector<CUasyncCallbackHandle> handles;
};

void listen(CUasyncNotificationInfo* info, void* data, CUasyncCallbackHandle handle) {
  auto* heard = static_cast<Heard*>(data);
  heard->infos.push_back(*info);
  heard->handles.push_back(handle);
}

// The double notifies when an allocation goes over the device's memory:
// the program's callback runs here, with its own data and handle, before
// the failing allocation returns; once unregistered it hears nothing more.
TEST_F(SurfaceTest, AsyncNotificationsReachTheProgramsCallback) {
  Heard heard;
  CUasyncCallbackHandle handle = nullptr;
  ASSERT_EQ(cuDeviceRegisterAsyncNotification(dev_, listen, &heard, &handle), CUDA_SUCCESS);
  ASSERT_NE(handle, nullptr);
  CUdeviceptr small = 0;
  ASSERT_EQ(cuMemAlloc(&small, 1 << 20), CUDA_SUCCESS);
  size_t free = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo(&free, &total), CUDA_SUCCESS);
  ASSERT_LT(free, total);
  CUdeviceptr over = 0;
  ASSERT_EQ(cuMemAlloc(&over, total), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(heard.infos.size(), 1u);
  EXPECT_EQ(heard.infos[0].type, CU_ASYNC_NOTIFICATION_TYPE_OVER_BUDGET);
  EXPECT_EQ(heard.infos[0].info.overBudget.bytesOverBudget, total - free);
  EXPECT_EQ(heard.handles[0], handle);

  ASSERT_EQ(cuDeviceUnregisterAsyncNotification(dev_, handle), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&over, total), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(heard.infos.size(), 1u);
  EXPECT_EQ(cuDeviceUnregisterAsyncNotification(dev_, handle), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuDeviceRegisterAsyncNotification(dev_, nullptr, nullptr, &handle),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuMemFree(small), CUDA_SUCCESS);
}

}  // namespace
