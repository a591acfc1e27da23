// End to end: graphs built explicitly and by stream capture, through the
// stand-in libcuda and a real `scuda server` loading the driver test double
// (whose graph launches run their nodes on the host). Nothing here runs on
// a GPU. A process of its own: while a capture is active, capture queries go
// to the server, which changes what driver_e2e_test counts.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "shared_server.h"

extern "C" uint64_t scuda_replies_awaited();

namespace {

// The double's built-ins: vadd(a, b, c, n), fill(p, v, n), scale(p, s, n).
const char kModule[] =
    "scuda-double-module\n"
    "kernel vadd 8 8 8 4\n"
    "kernel fill 8 4 4\n"
    "kernel scale 8 4 4\n";

constexpr int kN = 256;
constexpr size_t kBytes = kN * sizeof(float);

unsigned bits(float f) {
  unsigned u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

std::vector<CUgraphNode> sorted(std::vector<CUgraphNode> v) {
  std::sort(v.begin(), v.end());
  return v;
}

class GraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
    ASSERT_EQ(cuModuleLoadData(&mod_, kModule), CUDA_SUCCESS);
    ASSERT_EQ(cuModuleGetFunction(&vadd_, mod_, "vadd"), CUDA_SUCCESS);
    ASSERT_EQ(cuModuleGetFunction(&fill_, mod_, "fill"), CUDA_SUCCESS);
    ASSERT_EQ(cuModuleGetFunction(&scale_, mod_, "scale"), CUDA_SUCCESS);
    for (CUdeviceptr* p : {&a_, &b_, &c_, &d_}) {
      ASSERT_EQ(cuMemAlloc(p, kBytes), CUDA_SUCCESS);
      ASSERT_EQ(cuMemsetD32(*p, 0, kN), CUDA_SUCCESS);
    }
    ASSERT_EQ(cuGraphCreate(&graph_, 0), CUDA_SUCCESS);
  }
  void TearDown() override {
    if (graph_) cuGraphDestroy(graph_);
    for (CUdeviceptr p : {a_, b_, c_, d_}) cuMemFree(p);
    cuModuleUnload(mod_);
    cuDevicePrimaryCtxRelease(0);
  }

  CUDA_KERNEL_NODE_PARAMS kernel(CUfunction f, void** args) {
    CUDA_KERNEL_NODE_PARAMS k{};
    k.func = f;
    k.gridDimX = 2;
    k.gridDimY = k.gridDimZ = 1;
    k.blockDimX = 128;
    k.blockDimY = k.blockDimZ = 1;
    k.kernelParams = args;
    return k;
  }

  CUgraphNode add_kernel(CUfunction f, void** args, std::vector<CUgraphNode> deps) {
    CUgraphNode node = nullptr;
    const CUDA_KERNEL_NODE_PARAMS k = kernel(f, args);
    EXPECT_EQ(cuGraphAddKernelNode(&node, graph_, deps.data(), deps.size(), &k), CUDA_SUCCESS);
    return node;
  }

  CUgraphNode add_copy(CUdeviceptr dst, CUdeviceptr src, std::vector<CUgraphNode> deps,
                       CUmemorytype src_type = CU_MEMORYTYPE_DEVICE) {
    CUDA_MEMCPY3D copy{};
    copy.srcMemoryType = src_type;
    copy.srcDevice = src;
    copy.srcHost = reinterpret_cast<void*>(src);
    copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.dstDevice = dst;
    copy.WidthInBytes = kBytes;
    copy.Height = copy.Depth = 1;
    CUgraphNode node = nullptr;
    last_rc_ = cuGraphAddMemcpyNode(&node, graph_, deps.data(), deps.size(), &copy, ctx_);
    return node;
  }

  // The diamond: fill a with 1 and memset b to 2 (roots), c = a + b, c *= scale,
  // then copy c to d.
  void build_diamond() {
    fill_args_ = {&a_, &one_, &n_};
    vadd_args_ = {&a_, &b_, &c_, &n_};
    scale_args_ = {&c_, &factor_, &n_};
    fill_node_ = add_kernel(fill_, fill_args_.data(), {});
    CUDA_MEMSET_NODE_PARAMS m{};
    m.dst = b_;
    m.value = bits(2.0f);
    m.elementSize = 4;
    m.width = kN;
    m.height = 1;
    ASSERT_EQ(cuGraphAddMemsetNode(&memset_node_, graph_, nullptr, 0, &m, ctx_), CUDA_SUCCESS);
    vadd_node_ = add_kernel(vadd_, vadd_args_.data(), {fill_node_, memset_node_});
    scale_node_ = add_kernel(scale_, scale_args_.data(), {vadd_node_});
    copy_node_ = add_copy(d_, c_, {scale_node_});
    ASSERT_EQ(last_rc_, CUDA_SUCCESS);
  }

  void expect_all(CUdeviceptr p, float want) {
    std::vector<float> got(kN);
    ASSERT_EQ(cuMemcpyDtoH(got.data(), p, kBytes), CUDA_SUCCESS);
    for (int i = 0; i < kN; ++i) ASSERT_EQ(got[i], want) << i;
  }

  CUcontext ctx_ = nullptr;
  CUmodule mod_ = nullptr;
  CUfunction vadd_ = nullptr, fill_ = nullptr, scale_ = nullptr;
  CUdeviceptr a_ = 0, b_ = 0, c_ = 0, d_ = 0;
  CUgraph graph_ = nullptr;
  int n_ = kN;
  unsigned one_ = bits(1.0f);
  float factor_ = 10.0f;
  std::vector<void*> fill_args_, vadd_args_, scale_args_;
  CUgraphNode fill_node_ = nullptr, memset_node_ = nullptr, vadd_node_ = nullptr,
              scale_node_ = nullptr, copy_node_ = nullptr;
  CUresult last_rc_ = CUDA_SUCCESS;
};

TEST_F(GraphTest, ExplicitGraphRunsAtEachLaunchOnlyAndLaunchesGoOneWay) {
  build_diamond();
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph_, 0), CUDA_SUCCESS);
  expect_all(d_, 0.0f);  // building and instantiating ran nothing
  const uint64_t before = scuda_replies_awaited();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  expect_all(d_, 30.0f);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
}

TEST_F(GraphTest, NodeQueriesReturnTheIdsTheNodesWereAddedUnder) {
  build_diamond();
  size_t count = 0;
  ASSERT_EQ(cuGraphGetNodes(graph_, nullptr, &count), CUDA_SUCCESS);
  ASSERT_EQ(count, 5u);
  std::vector<CUgraphNode> nodes(7, reinterpret_cast<CUgraphNode>(1));
  count = nodes.size();
  ASSERT_EQ(cuGraphGetNodes(graph_, nodes.data(), &count), CUDA_SUCCESS);
  EXPECT_EQ(count, 5u);
  EXPECT_EQ(nodes[5], nullptr);  // room beyond the count is cleared, as CUDA does
  nodes.resize(5);
  EXPECT_EQ(sorted(nodes), sorted({fill_node_, memset_node_, vadd_node_, scale_node_, copy_node_}));

  std::vector<CUgraphNode> roots(2);
  count = roots.size();
  ASSERT_EQ(cuGraphGetRootNodes(graph_, roots.data(), &count), CUDA_SUCCESS);
  EXPECT_EQ(sorted(roots), sorted({fill_node_, memset_node_}));

  std::vector<CUgraphNode> deps(2);
  std::vector<CUgraphEdgeData> edges(2);
  count = deps.size();
  ASSERT_EQ(cuGraphNodeGetDependencies(vadd_node_, deps.data(), edges.data(), &count),
            CUDA_SUCCESS);
  EXPECT_EQ(sorted(deps), sorted({fill_node_, memset_node_}));

  CUgraphNodeType type;
  ASSERT_EQ(cuGraphNodeGetType(memset_node_, &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_MEMSET);
  ASSERT_EQ(cuGraphNodeGetType(copy_node_, &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_MEMCPY);
}

TEST_F(GraphTest, KernelNodeParamsComeBackAsArgumentsThatCanBeChangedAndSet) {
  build_diamond();
  CUDA_KERNEL_NODE_PARAMS k{};
  ASSERT_EQ(cuGraphKernelNodeGetParams(scale_node_, &k), CUDA_SUCCESS);
  EXPECT_EQ(k.func, scale_);
  EXPECT_EQ(k.gridDimX, 2u);
  EXPECT_EQ(k.blockDimX, 128u);
  ASSERT_NE(k.kernelParams, nullptr);
  EXPECT_EQ(*static_cast<CUdeviceptr*>(k.kernelParams[0]), c_);
  EXPECT_EQ(*static_cast<float*>(k.kernelParams[1]), 10.0f);
  EXPECT_EQ(*static_cast<int*>(k.kernelParams[2]), kN);
  *static_cast<float*>(k.kernelParams[1]) = 5.0f;
  ASSERT_EQ(cuGraphKernelNodeSetParams(scale_node_, &k), CUDA_SUCCESS);

  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph_, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  expect_all(d_, 15.0f);
  cuGraphExecDestroy(exec);
}

// Attributes come back as set; the event one names is the program's handle,
// translated by the session both ways.
TEST_F(GraphTest, KernelNodeAttributesComeBackAsSet) {
  build_diamond();
  CUkernelNodeAttrValue priority{};
  priority.priority = 3;
  ASSERT_EQ(cuGraphKernelNodeSetAttribute(fill_node_, CU_LAUNCH_ATTRIBUTE_PRIORITY, &priority),
            CUDA_SUCCESS);
  CUevent event = nullptr;
  ASSERT_EQ(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  CUkernelNodeAttrValue completion{};
  completion.launchCompletionEvent.event = event;
  ASSERT_EQ(cuGraphKernelNodeSetAttribute(fill_node_, CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT,
                                          &completion),
            CUDA_SUCCESS);
  CUkernelNodeAttrValue got{};
  ASSERT_EQ(cuGraphKernelNodeGetAttribute(fill_node_, CU_LAUNCH_ATTRIBUTE_PRIORITY, &got),
            CUDA_SUCCESS);
  EXPECT_EQ(got.priority, 3);
  ASSERT_EQ(
      cuGraphKernelNodeGetAttribute(fill_node_, CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT, &got),
      CUDA_SUCCESS);
  EXPECT_EQ(got.launchCompletionEvent.event, event);
  CUkernelNodeAttrValue bogus{};
  bogus.launchCompletionEvent.event = reinterpret_cast<CUevent>(uintptr_t{0xdead0});
  EXPECT_EQ(cuGraphKernelNodeSetAttribute(fill_node_, CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT,
                                          &bogus),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventDestroy(event), CUDA_SUCCESS);
}

// A user object's destructor is the program's, run on this side when the
// graph that holds the last reference goes.
TEST_F(GraphTest, UserObjectDestructorsRunWhenTheLastReferenceGoes) {
  std::atomic<int> destroyed{0};
  CUuserObject object = nullptr;
  ASSERT_EQ(cuUserObjectCreate(
                &object, &destroyed, [](void* p) { ++*static_cast<std::atomic<int>*>(p); }, 1,
                CU_USER_OBJECT_NO_DESTRUCTOR_SYNC),
            CUDA_SUCCESS);
  ASSERT_EQ(cuUserObjectRetain(object, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphRetainUserObject(graph_, object, 2, CU_GRAPH_USER_OBJECT_MOVE), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(destroyed.load(), 0);
  ASSERT_EQ(cuGraphDestroy(graph_), CUDA_SUCCESS);
  graph_ = nullptr;
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(destroyed.load(), 1);
  EXPECT_EQ(cuUserObjectCreate(&object, &destroyed, nullptr, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC),
            CUDA_ERROR_INVALID_VALUE);
}

// A memory allocation node's parameters come back with the address it was
// given and its access descriptors, held by the client.
TEST_F(GraphTest, MemAllocNodeParamsComeBackWithTheirAccessDescriptors) {
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  params.accessDescs = &access;
  params.accessDescCount = 1;
  params.bytesize = 1 << 20;
  CUgraphNode node = nullptr;
  ASSERT_EQ(cuGraphAddMemAllocNode(&node, graph_, nullptr, 0, &params), CUDA_SUCCESS);
  ASSERT_NE(params.dptr, 0u);
  CUDA_MEM_ALLOC_NODE_PARAMS got{};
  ASSERT_EQ(cuGraphMemAllocNodeGetParams(node, &got), CUDA_SUCCESS);
  EXPECT_EQ(got.dptr, params.dptr);
  EXPECT_EQ(got.bytesize, params.bytesize);
  ASSERT_EQ(got.accessDescCount, 1u);
  ASSERT_NE(got.accessDescs, nullptr);
  EXPECT_NE(got.accessDescs, &access);  // the client's copy
  EXPECT_EQ(got.accessDescs[0].flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  EXPECT_EQ(got.accessDescs[0].location.type, CU_MEM_LOCATION_TYPE_DEVICE);
}

TEST_F(GraphTest, ExecutableGraphsTakeNewParamsAndWholeUpdates) {
  build_diamond();
  CUDA_GRAPH_INSTANTIATE_PARAMS ip{};
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithParams(&exec, graph_, &ip), CUDA_SUCCESS);
  EXPECT_EQ(ip.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);

  float hundred = 100.0f;
  void* args[] = {&c_, &hundred, &n_};
  const CUDA_KERNEL_NODE_PARAMS k = kernel(scale_, args);
  ASSERT_EQ(cuGraphExecKernelNodeSetParams(exec, scale_node_, &k), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  expect_all(d_, 300.0f);

  // The graph itself still scales by 10: a whole update brings that back.
  CUgraphExecUpdateResultInfo info{};
  ASSERT_EQ(cuGraphExecUpdate(exec, graph_, &info), CUDA_SUCCESS);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  expect_all(d_, 30.0f);

  CUgraphNode extra = nullptr;
  ASSERT_EQ(cuGraphAddEmptyNode(&extra, graph_, &copy_node_, 1), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphExecUpdate(exec, graph_, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  cuGraphExecDestroy(exec);
}

// An array without its count is the driver's INVALID_VALUE, and the
// session goes on (the server would take the request for a malformed one).
TEST_F(GraphTest, AnArrayWithoutItsCountIsAnInvalidValue) {
  build_diamond();
  CUgraphNode nodes[8];
  EXPECT_EQ(cuGraphGetNodes(graph_, nodes, nullptr), CUDA_ERROR_INVALID_VALUE);
  size_t count = 0;
  ASSERT_EQ(cuGraphGetNodes(graph_, nullptr, &count), CUDA_SUCCESS);
  EXPECT_GT(count, 0u);
}

TEST_F(GraphTest, UnknownOrWrongKindNodeHandlesAreRejected) {
  build_diamond();
  CUgraphNode node = nullptr;
  CUgraphNode bogus = reinterpret_cast<CUgraphNode>(uintptr_t{0xdead0000});
  EXPECT_EQ(cuGraphAddEmptyNode(&node, graph_, &bogus, 1), CUDA_ERROR_INVALID_HANDLE);
  CUgraphNode a_graph = reinterpret_cast<CUgraphNode>(graph_);
  EXPECT_EQ(cuGraphAddEmptyNode(&node, graph_, &a_graph, 1), CUDA_ERROR_INVALID_HANDLE);
  CUgraphNodeType type;
  EXPECT_EQ(cuGraphNodeGetType(bogus, &type), CUDA_ERROR_INVALID_HANDLE);
  CUDA_KERNEL_NODE_PARAMS k{};
  EXPECT_EQ(cuGraphKernelNodeGetParams(bogus, &k), CUDA_ERROR_INVALID_HANDLE);
  CUgraphNode from[] = {fill_node_}, to[] = {bogus};
  EXPECT_EQ(cuGraphAddDependencies(graph_, from, to, nullptr, 1), CUDA_ERROR_INVALID_HANDLE);
}

// A node naming client host memory copies what the host holds at each
// launch, and the host sees what a node wrote after the next synchronization.
TEST_F(GraphTest, MemcpyNodesNamingClientHostMemoryCopyAtEachLaunch) {
  std::vector<float> in(kN, 1.0f), out(kN, 0.0f);
  CUgraphNode to_device =
      add_copy(d_, reinterpret_cast<CUdeviceptr>(in.data()), {}, CU_MEMORYTYPE_HOST);
  ASSERT_EQ(last_rc_, CUDA_SUCCESS);
  CUDA_MEMCPY3D back{};
  back.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  back.srcDevice = d_;
  back.dstMemoryType = CU_MEMORYTYPE_UNIFIED;  // a host pointer, as cudart passes it
  back.dstDevice = reinterpret_cast<CUdeviceptr>(out.data());
  back.WidthInBytes = kBytes;
  back.Height = back.Depth = 1;
  CUgraphNode to_host = nullptr;
  ASSERT_EQ(cuGraphAddMemcpyNode(&to_host, graph_, &to_device, 1, &back, ctx_), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph_, 0), CUDA_SUCCESS);
  for (float v : {1.0f, 5.0f, -2.5f}) {
    std::fill(in.begin(), in.end(), v);
    ASSERT_EQ(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
    for (int i = 0; i < kN; ++i) ASSERT_EQ(out[i], v) << i;
    expect_all(d_, v);
  }
  cuGraphExecDestroy(exec);
  // A unified address the client knows as device memory stays device memory.
  add_copy(d_, c_, {}, CU_MEMORYTYPE_UNIFIED);
  EXPECT_EQ(last_rc_, CUDA_SUCCESS);
}

// A host node runs its function on the client at each launch, after the
// nodes it depends on, and sees what a copy node before it wrote into host
// memory. The server calls only its stand-in: were it to call the client's
// function pointer, its session would crash and the launches fail.
TEST_F(GraphTest, HostNodesRunOnTheClientAtEachLaunchAfterTheirDependencies) {
  build_diamond();
  std::vector<float> out(kN, 0.0f);
  CUDA_MEMCPY3D back{};
  back.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  back.srcDevice = d_;
  back.dstMemoryType = CU_MEMORYTYPE_HOST;
  back.dstHost = out.data();
  back.WidthInBytes = kBytes;
  back.Height = back.Depth = 1;
  CUgraphNode to_host = nullptr;
  ASSERT_EQ(cuGraphAddMemcpyNode(&to_host, graph_, &copy_node_, 1, &back, ctx_), CUDA_SUCCESS);
  struct Seen {
    std::vector<float>* out;
    std::vector<float> first;
    int calls = 0;
  } seen{&out, {}, 0};
  CUDA_HOST_NODE_PARAMS host{};
  host.fn = [](void* data) {
    auto* s = static_cast<Seen*>(data);
    if (s->calls++ == 0) s->first = *s->out;
    std::fill(s->out->begin(), s->out->end(), -1.0f);  // as a program resets its result
  };
  host.userData = &seen;
  CUgraphNode node = nullptr;
  ASSERT_EQ(cuGraphAddHostNode(&node, graph_, &to_host, 1, &host), CUDA_SUCCESS);
  CUgraphNodeType type;
  ASSERT_EQ(cuGraphNodeGetType(node, &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_HOST);
  CUDA_HOST_NODE_PARAMS got{};
  ASSERT_EQ(cuGraphHostNodeGetParams(node, &got), CUDA_SUCCESS);
  EXPECT_EQ(got.fn, host.fn);
  EXPECT_EQ(got.userData, &seen);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph_, 0), CUDA_SUCCESS);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(seen.calls, 3);
  ASSERT_EQ(seen.first.size(), size_t{kN});
  for (int i = 0; i < kN; ++i) ASSERT_EQ(seen.first[i], 30.0f) << i;
  cuGraphExecDestroy(exec);
}

class CaptureTest : public GraphTest {
 protected:
  void SetUp() override {
    GraphTest::SetUp();
    ASSERT_EQ(cuStreamCreate(&s1_, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamCreate(&s2_, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(cuEventCreate(&fork_, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    ASSERT_EQ(cuEventCreate(&join_, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  }
  void TearDown() override {
    cuEventDestroy(fork_);
    cuEventDestroy(join_);
    cuStreamDestroy(s1_);
    cuStreamDestroy(s2_);
    GraphTest::TearDown();
  }

  CUstream s1_ = nullptr, s2_ = nullptr;
  CUevent fork_ = nullptr, join_ = nullptr;
};

// s1: fill a, memset b, c = a + b, fork to s2: c *= 10, join back, copy c to d.
TEST_F(CaptureTest, CapturedWorkRunsOnlyWhenTheGraphIsLaunched) {
  void* fill_args[] = {&a_, &one_, &n_};
  void* vadd_args[] = {&a_, &b_, &c_, &n_};
  void* scale_args[] = {&c_, &factor_, &n_};
  ASSERT_EQ(cuStreamBeginCapture(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchKernel(fill_, 2, 1, 1, 128, 1, 1, 0, s1_, fill_args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32Async(b_, bits(2.0f), kN, s1_), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchKernel(vadd_, 2, 1, 1, 128, 1, 1, 0, s1_, vadd_args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(fork_, s1_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(s2_, fork_, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchKernel(scale_, 2, 1, 1, 128, 1, 1, 0, s2_, scale_args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(join_, s2_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(s1_, join_, 0), CUDA_SUCCESS);

  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  CUgraph capturing = nullptr;
  const CUgraphNode* deps = nullptr;
  size_t count = 0;
  ASSERT_EQ(cuStreamGetCaptureInfo(s1_, &status, &id, &capturing, &deps, nullptr, &count),
            CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_NE(id, 0u);
  ASSERT_EQ(count, 2u);  // s1's own vadd and, through the join, s2's scale
  const std::vector<CUgraphNode> joined(deps, deps + count);
  for (CUgraphNode node : joined) {
    CUgraphNodeType type;
    ASSERT_EQ(cuGraphNodeGetType(node, &type), CUDA_SUCCESS);
    EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_KERNEL);
  }

  ASSERT_EQ(cuMemcpyDtoDAsync(d_, c_, kBytes, s1_), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(s1_, &graph), CUDA_SUCCESS);
  EXPECT_EQ(graph, capturing);
  ASSERT_EQ(cuStreamIsCapturing(s2_, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  expect_all(d_, 0.0f);  // captured, not run

  size_t nodes = 0;
  ASSERT_EQ(cuGraphGetNodes(graph, nullptr, &nodes), CUDA_SUCCESS);
  EXPECT_EQ(nodes, 5u);
  std::vector<CUgraphNode> all(nodes);
  ASSERT_EQ(cuGraphGetNodes(graph, all.data(), &nodes), CUDA_SUCCESS);
  for (CUgraphNode node : joined)  // the same ids again
    EXPECT_NE(std::find(all.begin(), all.end(), node), all.end());

  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(cuGraphLaunch(exec, s1_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(s1_), CUDA_SUCCESS);
  expect_all(d_, 30.0f);
  cuGraphExecDestroy(exec);
  cuGraphDestroy(graph);
}

// While a capture is active, queries go to the server; once every capture
// has ended they are answered by the client again, with no round trip.
TEST_F(CaptureTest, CaptureQueriesAreLocalWhileNoCaptureIsActive) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  ASSERT_EQ(cuStreamBeginCapture(s1_, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(fork_, s1_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(s2_, fork_, 0), CUDA_SUCCESS);
  uint64_t before = scuda_replies_awaited();
  ASSERT_EQ(cuStreamIsCapturing(s2_, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE) << "s2 joined through the event";
  EXPECT_EQ(scuda_replies_awaited(), before + 1);
  ASSERT_EQ(cuEventRecord(join_, s2_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(s1_, join_, 0), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  CUgraph none = nullptr;
  EXPECT_EQ(cuStreamEndCapture(s2_, &none), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED)
      << "s2 did not begin it";
  ASSERT_EQ(cuStreamIsCapturing(s1_, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE) << "a failed end elsewhere ends nothing";
  ASSERT_EQ(cuStreamEndCapture(s1_, &graph), CUDA_SUCCESS);

  before = scuda_replies_awaited();
  for (CUstream s : {s1_, s2_}) {
    ASSERT_EQ(cuStreamIsCapturing(s, &status), CUDA_SUCCESS);
    EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
    ASSERT_EQ(cuStreamGetCaptureInfo(s, &status, &id, nullptr, nullptr, nullptr, nullptr),
              CUDA_SUCCESS);
    EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  }
  EXPECT_EQ(scuda_replies_awaited(), before) << "no capture is active: answered by the client";
  std::vector<float> back(kN, -1.0f);
  ASSERT_EQ(cuMemsetD32Async(a_, bits(4.0f), kN, s1_), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoHAsync(back.data(), a_, kBytes, s1_), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before) << "an async copy to the host waits for nothing";
  ASSERT_EQ(cuStreamSynchronize(s1_), CUDA_SUCCESS);
  EXPECT_EQ(back, std::vector<float>(kN, 4.0f));
  EXPECT_EQ(cuStreamEndCapture(s1_, &none), CUDA_ERROR_ILLEGAL_STATE);
  cuGraphDestroy(graph);
}

// While a capture is active, the stream that began it answers queries of
// its capture's status, id and graph after the server told them once; a
// query for dependencies still asks, and a new capture is asked again.
TEST_F(CaptureTest, ACapturesIdIsAskedOnceOnTheStreamThatBeganIt) {
  cuuint64_t ids[2] = {0, 0};
  for (cuuint64_t& first_id : ids) {
    ASSERT_EQ(cuStreamBeginCapture(s1_, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUgraph first_graph = nullptr;
    uint64_t before = scuda_replies_awaited();
    ASSERT_EQ(
        cuStreamGetCaptureInfo(s1_, &status, &first_id, &first_graph, nullptr, nullptr, nullptr),
        CUDA_SUCCESS);
    EXPECT_EQ(scuda_replies_awaited(), before + 1);
    before = scuda_replies_awaited();
    for (int i = 0; i < 5; ++i) {
      ASSERT_EQ(cuMemsetD32Async(a_, bits(1.0f), kN, s1_), CUDA_SUCCESS);
      cuuint64_t id = 0;
      CUgraph graph = nullptr;
      status = CU_STREAM_CAPTURE_STATUS_NONE;
      ASSERT_EQ(cuStreamGetCaptureInfo(s1_, &status, &id, &graph, nullptr, nullptr, nullptr),
                CUDA_SUCCESS);
      EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
      EXPECT_EQ(id, first_id);
      EXPECT_EQ(graph, first_graph);
    }
    EXPECT_EQ(scuda_replies_awaited(), before) << "the id was known";
    size_t count = 0;
    const CUgraphNode* deps = nullptr;
    ASSERT_EQ(cuStreamGetCaptureInfo(s1_, &status, nullptr, nullptr, &deps, nullptr, &count),
              CUDA_SUCCESS);
    EXPECT_EQ(scuda_replies_awaited(), before + 1) << "dependencies are the server's";
    EXPECT_EQ(count, 1u) << "the last memset";
    CUgraph graph = nullptr;
    ASSERT_EQ(cuStreamEndCapture(s1_, &graph), CUDA_SUCCESS);
    EXPECT_EQ(graph, first_graph);
    cuGraphDestroy(graph);
  }
  EXPECT_NE(ids[0], ids[1]) << "the second capture's id was asked";
}

// A stream's context and priority, and the device's priority range, are asked
// of the server once; the default stream's context is the current one.
TEST_F(CaptureTest, StreamContextAndPriorityAreAskedOnce) {
  CUstream urgent = nullptr;
  ASSERT_EQ(cuStreamCreateWithPriority(&urgent, CU_STREAM_NON_BLOCKING, -3), CUDA_SUCCESS);
  int least = 1, greatest = 1, priority = 1;
  CUcontext ctx = nullptr;
  const uint64_t first = scuda_replies_awaited();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(cuCtxGetStreamPriorityRange(&least, &greatest), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamGetPriority(urgent, &priority), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamGetCtx(urgent, &ctx), CUDA_SUCCESS);
  }
  EXPECT_EQ(scuda_replies_awaited(), first + 3);
  EXPECT_EQ(least, 0);
  EXPECT_EQ(greatest, -5);
  EXPECT_EQ(priority, -3);
  EXPECT_EQ(ctx, ctx_);
  ASSERT_EQ(cuStreamGetPriority(s1_, &priority), CUDA_SUCCESS);
  EXPECT_EQ(priority, 0) << "another stream has its own answer";
  ASSERT_EQ(cuStreamGetCtx(nullptr, &ctx), CUDA_SUCCESS);
  EXPECT_EQ(ctx, ctx_);
  EXPECT_EQ(cuStreamGetPriority(urgent, nullptr), CUDA_ERROR_INVALID_VALUE);
  cuStreamDestroy(urgent);
}

// More dependencies than the first request has room for: the client asks again.
TEST_F(CaptureTest, CaptureInfoCarriesManyDependencies) {
  constexpr int kStreams = 12;
  std::vector<CUstream> streams(kStreams);
  std::vector<CUevent> events(kStreams);
  ASSERT_EQ(cuStreamBeginCapture(s1_, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(fork_, s1_), CUDA_SUCCESS);
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_EQ(cuStreamCreate(&streams[i], CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(cuEventCreate(&events[i], CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamWaitEvent(streams[i], fork_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuMemsetD32Async(a_ + 4 * i, i, 1, streams[i]), CUDA_SUCCESS);
    ASSERT_EQ(cuEventRecord(events[i], streams[i]), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamWaitEvent(s1_, events[i], 0), CUDA_SUCCESS);
  }
  CUstreamCaptureStatus status;
  const CUgraphNode* deps = nullptr;
  size_t count = 0;
  ASSERT_EQ(cuStreamGetCaptureInfo(s1_, &status, nullptr, nullptr, &deps, nullptr, &count),
            CUDA_SUCCESS);
  ASSERT_EQ(count, size_t{kStreams});
  std::vector<CUgraphNode> got(deps, deps + count);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(s1_, &graph), CUDA_SUCCESS);
  std::vector<CUgraphNode> all(kStreams);
  size_t n = all.size();
  ASSERT_EQ(cuGraphGetNodes(graph, all.data(), &n), CUDA_SUCCESS);
  EXPECT_EQ(sorted(got), sorted(all));
  for (int i = 0; i < kStreams; ++i) {
    cuEventDestroy(events[i]);
    cuStreamDestroy(streams[i]);
  }
  cuGraphDestroy(graph);
}

// cuDNN captures a library kernel's launch, reads the node back and asks
// the name of the function the node names, which the program never looked
// up: the name comes with the node's parameters.
TEST_F(CaptureTest, CapturedLibraryKernelNodeNamesItsFunction) {
  CUlibrary lib = nullptr;
  CUkernel kernel = nullptr;
  ASSERT_EQ(cuLibraryLoadData(&lib, kModule, nullptr, nullptr, 0, nullptr, nullptr, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(cuLibraryGetKernel(&kernel, lib, "scale"), CUDA_SUCCESS);
  void* scale_args[] = {&c_, &factor_, &n_};
  ASSERT_EQ(cuStreamBeginCapture(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchKernel(reinterpret_cast<CUfunction>(kernel), 2, 1, 1, 128, 1, 1, 0, s1_,
                           scale_args, nullptr),
            CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(s1_, &graph), CUDA_SUCCESS);
  CUgraphNode node = nullptr;
  size_t count = 1;
  ASSERT_EQ(cuGraphGetNodes(graph, &node, &count), CUDA_SUCCESS);
  ASSERT_EQ(count, 1u);
  CUDA_KERNEL_NODE_PARAMS k{};
  ASSERT_EQ(cuGraphKernelNodeGetParams(node, &k), CUDA_SUCCESS);
  EXPECT_EQ(k.kern, kernel);
  ASSERT_NE(k.func, nullptr);
  EXPECT_NE(k.func, reinterpret_cast<CUfunction>(kernel));
  const char* name = nullptr;
  ASSERT_EQ(cuFuncGetName(&name, k.func), CUDA_SUCCESS);
  EXPECT_STREQ(name, "scale");
  cuGraphDestroy(graph);
  cuLibraryUnload(lib);
}

// Captured copies of client host memory replay at each launch, in order
// with the captured kernel, with the bytes the host holds then.
TEST_F(CaptureTest, CapturedCopiesOfClientHostMemoryReplayAtEachLaunch) {
  std::vector<float> in(kN, 0.0f), out(kN, 0.0f);
  void* scale_args[] = {&a_, &factor_, &n_};
  ASSERT_EQ(cuStreamBeginCapture(s1_, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoDAsync(a_, in.data(), kBytes, s1_), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchKernel(scale_, 2, 1, 1, 128, 1, 1, 0, s1_, scale_args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoHAsync(out.data(), a_, kBytes, s1_), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(s1_, &graph), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  for (float v : {3.0f, 4.0f}) {
    std::fill(in.begin(), in.end(), v);
    ASSERT_EQ(cuGraphLaunch(exec, s1_), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamSynchronize(s1_), CUDA_SUCCESS);
    for (int i = 0; i < kN; ++i) ASSERT_EQ(out[i], v * factor_) << i;
  }
  cuGraphExecDestroy(exec);
  cuGraphDestroy(graph);
}

// A copy larger than one chunk is captured whole through the mirror, and
// leaves no refusal behind for the next synchronization to report.
TEST_F(CaptureTest, CapturedCopiesLargerThanAChunkReplay) {
  constexpr size_t kBig = 20u << 20;
  std::vector<uint8_t> in(kBig), out(kBig, 0);
  CUdeviceptr big = 0;
  ASSERT_EQ(cuMemAlloc(&big, kBig), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoDAsync(big, in.data(), kBig, s1_), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoHAsync(out.data(), big, kBig, s1_), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(s1_, &graph), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  for (size_t i = 0; i < kBig; ++i) in[i] = static_cast<uint8_t>(i * 7);
  ASSERT_EQ(cuGraphLaunch(exec, s1_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(s1_), CUDA_SUCCESS);
  EXPECT_TRUE(out == in);
  cuGraphExecDestroy(exec);
  cuGraphDestroy(graph);
  cuMemFree(big);
}

// The DOT file is written where the program named it, on the client.
TEST_F(GraphTest, DebugDotPrintWritesTheClientsFile) {
  build_diamond();
  char path[] = "/tmp/scuda-dot-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_EQ(cuGraphDebugDotPrint(graph_, path, 0), CUDA_SUCCESS);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  unlink(path);
  EXPECT_EQ(text.rfind("digraph", 0), 0u) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 7) << text;  // 5 nodes, open, close
  EXPECT_EQ(cuGraphDebugDotPrint(graph_, "/nonexistent/dir/file.dot", 0),
            CUDA_ERROR_OPERATING_SYSTEM);
}

TEST_F(GraphTest, LegacyInstantiateAdapterWorks) {
  build_diamond();
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  using V1 = CUresult (*)(CUgraphExec*, CUgraph, CUgraphNode*, char*, size_t);
  auto instantiate = reinterpret_cast<V1>(dlsym(lib, "cuGraphInstantiate"));
  ASSERT_NE(instantiate, nullptr);
  CUgraphExec exec = nullptr;
  char log[16];
  ASSERT_EQ(instantiate(&exec, graph_, nullptr, log, sizeof log), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  expect_all(d_, 30.0f);
  cuGraphExecDestroy(exec);
  dlclose(lib);
}

}  // namespace
