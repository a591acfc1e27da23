// Graph building: nodes with dependencies, their queries and parameters.
#include "graph.h"

#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

#include "allocations.h"
#include "functions.h"
#include "packing.h"
#include "state.h"

using namespace scuda_double;

namespace {

uintptr_t key(const void* handle) { return reinterpret_cast<uintptr_t>(handle); }

CUresult kernel_work(const CUDA_KERNEL_NODE_PARAMS_v3& k, Work* work) {
  work->func = k.func ? k.func : reinterpret_cast<CUfunction>(k.kern);
  const KernelDesc* kernel = resolve_function(work->func);
  if (kernel == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  work->launch = {kernel->name,
                  {k.gridDimX, k.gridDimY, k.gridDimZ},
                  {k.blockDimX, k.blockDimY, k.blockDimZ},
                  k.sharedMemBytes,
                  {}};
  return pack_params(*kernel, k.kernelParams, k.extra, &work->launch.params);
}

// One-dimensional device-to-device copies only.
CUresult memcpy_work(const CUDA_MEMCPY3D& c, Work* work) {
  if (c.srcMemoryType != CU_MEMORYTYPE_DEVICE || c.dstMemoryType != CU_MEMORYTYPE_DEVICE ||
      c.Height > 1 || c.Depth > 1)
    return CUDA_ERROR_NOT_SUPPORTED;
  work->src = c.srcDevice + c.srcXInBytes;
  work->dst = c.dstDevice + c.dstXInBytes;
  work->bytes = c.WidthInBytes;
  return CUDA_SUCCESS;
}

CUresult event_work(CUevent event, Work* work) {
  work->event = event;
  return state().events.find(event) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

std::vector<uintptr_t> nodes_of(uintptr_t graph) {
  std::vector<uintptr_t> out;
  for (const auto& [id, node] : graphs().nodes.items())
    if (node->graph == graph) out.push_back(id);
  return out;
}

bool node_in(uintptr_t graph, CUgraphNode node) {
  const Node* n = graphs().nodes.find(node);
  return n != nullptr && n->graph == graph;
}

CUresult add_checked(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, size_t count,
                     const Work& work) {
  if (out == nullptr || (count && deps == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  std::vector<uintptr_t> ids;
  for (size_t i = 0; i < count; ++i) ids.push_back(key(deps[i]));
  uintptr_t node = 0;
  CUresult rc = add_node(key(graph), ids, work, &node);
  if (rc == CUDA_SUCCESS) *out = as_handle<CUgraphNode>(node);
  return rc;
}

// Fills `out` (room for *count) and sets *count to how many there are.
CUresult list(const std::vector<uintptr_t>& ids, CUgraphNode* out, size_t* count) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (out != nullptr) {
    for (size_t i = 0; i < *count; ++i)
      out[i] = i < ids.size() ? as_handle<CUgraphNode>(ids[i]) : nullptr;
  }
  *count = ids.size();
  return CUDA_SUCCESS;
}

}  // namespace

Graphs& scuda_double::graphs() {
  static Graphs* g = new Graphs;  // never freed: used until exit
  return *g;
}

CUresult scuda_double::work_from_params(const CUgraphNodeParams& p, Work* work) {
  work->type = p.type;
  switch (p.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return kernel_work(p.kernel, work);
    case CU_GRAPH_NODE_TYPE_MEMSET:
      work->memset = {p.memset.dst,         p.memset.pitch, p.memset.value,
                      p.memset.elementSize, p.memset.width, p.memset.height};
      return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_MEMCPY: return memcpy_work(p.memcpy.copyParams, work);
    case CU_GRAPH_NODE_TYPE_GRAPH:
      work->child = key(p.graph.graph);
      return graphs().graphs.find(p.graph.graph) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: return event_work(p.eventRecord.event, work);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: return event_work(p.eventWait.event, work);
    case CU_GRAPH_NODE_TYPE_HOST:
      work->host_fn = p.host.fn;
      work->host_data = p.host.userData;
      return p.host.fn ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: return mem_ops_work(p.memOp, work);
    case CU_GRAPH_NODE_TYPE_EMPTY: return CUDA_SUCCESS;
    default: return CUDA_ERROR_NOT_SUPPORTED;
  }
}

// Memory for the node is allocated as it is added, as the driver fixes the
// address then; nothing happens when the graph runs.
CUresult scuda_double::alloc_work(CUDA_MEM_ALLOC_NODE_PARAMS_v2* p, uintptr_t ctx, Work* work) {
  if (p->bytesize == 0 || (p->accessDescCount && !p->accessDescs)) return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr dptr = 0;
  if (CUresult rc = allocate(p->bytesize, ctx, 0, &dptr); rc != CUDA_SUCCESS) return rc;
  p->dptr = dptr;
  work->type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  std::memcpy(&work->alloc, p, sizeof work->alloc);
  work->alloc.accessDescs = nullptr;
  work->access.assign(p->accessDescs, p->accessDescs + p->accessDescCount);
  return CUDA_SUCCESS;
}

CUresult scuda_double::add_node(uintptr_t graph, const std::vector<uintptr_t>& deps,
                                const Work& work, uintptr_t* node) {
  if (graphs().graphs.find(graph) == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (uintptr_t d : deps)
    if (!node_in(graph, as_handle<CUgraphNode>(d))) return CUDA_ERROR_INVALID_VALUE;
  auto n = std::make_unique<Node>();
  n->graph = graph;
  n->work = work;
  n->deps = deps;
  *node = graphs().nodes.add(std::move(n));
  return CUDA_SUCCESS;
}

// Kahn's algorithm; ties go to the earlier node, so the order is stable.
std::vector<uintptr_t> scuda_double::topological_order(uintptr_t graph) {
  std::vector<uintptr_t> pending = nodes_of(graph), order;
  while (!pending.empty()) {
    auto ready = std::find_if(pending.begin(), pending.end(), [&](uintptr_t id) {
      const Node* n = graphs().nodes.find(id);
      return std::all_of(n->deps.begin(), n->deps.end(), [&](uintptr_t d) {
        return std::find(order.begin(), order.end(), d) != order.end();
      });
    });
    if (ready == pending.end()) break;  // a cycle: its nodes never run
    order.push_back(*ready);
    pending.erase(ready);
  }
  return order;
}

CUresult scuda_double::run_graph(uintptr_t graph) {
  for (uintptr_t id : topological_order(graph))
    if (CUresult rc = run_work(graphs().nodes.find(id)->work); rc != CUDA_SUCCESS) return rc;
  return CUDA_SUCCESS;
}

CUresult scuda_double::run_work(const Work& work) {
  switch (work.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return run_kernel(work);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      const CUDA_MEMSET_NODE_PARAMS& m = work.memset;
      return fill(m.dst, m.height > 1 ? m.pitch : m.width * m.elementSize, m.value, m.elementSize,
                  m.width, m.height);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY: return copy_device(work.dst, work.src, work.bytes);
    case CU_GRAPH_NODE_TYPE_GRAPH: return run_graph(work.child);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      if (Event* e = state().events.find(work.event)) e->recorded = true;
      return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_HOST: work.host_fn(work.host_data); return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: return run_mem_ops(work.mem_ops);
    default: return CUDA_SUCCESS;
  }
}

extern "C" {

// One line per node: "n<handle> [type=<node type>]", in launch order.
CUresult cuGraphDebugDotPrint(CUgraph hGraph, const char* path, unsigned int) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (graphs().graphs.find(hGraph) == nullptr || path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::FILE* file = std::fopen(path, "w");
  if (file == nullptr) return CUDA_ERROR_OPERATING_SYSTEM;
  std::fputs("digraph scuda_double {\n", file);
  for (uintptr_t id : topological_order(key(hGraph)))
    std::fprintf(file, "n%lx [type=%d]\n", static_cast<unsigned long>(id),
                 static_cast<int>(graphs().nodes.find(id)->work.type));
  std::fputs("}\n", file);
  std::fclose(file);
  return CUDA_SUCCESS;
}

CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (phGraph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  *phGraph = as_handle<CUgraph>(graphs().graphs.add(std::make_unique<Graph>()));
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  Graph* g = graphs().graphs.find(hGraph);
  if (g == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& [object, refs] : g->user_refs) release_user_object(object, refs);
  graphs().graphs.erase(hGraph);
  graphs().nodes.erase_if([&](const Node& n) { return n.graph == key(hGraph); });
  return CUDA_SUCCESS;
}

CUresult cuGraphAddNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph,
                           const CUgraphNode* dependencies, const CUgraphEdgeData*,
                           size_t numDependencies, CUgraphNodeParams* nodeParams) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Work work;
  if (nodeParams->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
    if (CUresult rc = alloc_work(&nodeParams->alloc, call.ctx_id, &work); rc != CUDA_SUCCESS)
      return rc;
  } else if (CUresult rc = work_from_params(*nodeParams, &work); rc != CUDA_SUCCESS) {
    return rc;
  }
  return add_checked(phGraphNode, hGraph, dependencies, numDependencies, work);
}

// The parameters a memory allocation node was added with, its access
// descriptors pointing at the node's own copy.
CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS* params_out) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  Node* n = graphs().nodes.find(hNode);
  if (n == nullptr || params_out == nullptr || n->work.type != CU_GRAPH_NODE_TYPE_MEM_ALLOC)
    return CUDA_ERROR_INVALID_VALUE;
  *params_out = n->work.alloc;
  params_out->accessDescs = n->work.access.data();
  return CUDA_SUCCESS;
}

CUresult cuGraphAddEmptyNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                             const CUgraphNode* dependencies, size_t numDependencies) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  return add_checked(phGraphNode, hGraph, dependencies, numDependencies, Work{});
}

CUresult cuGraphAddMemsetNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                              const CUgraphNode* dependencies, size_t numDependencies,
                              const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (memsetParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Work work;
  work.type = CU_GRAPH_NODE_TYPE_MEMSET;
  work.memset = *memsetParams;
  return add_checked(phGraphNode, hGraph, dependencies, numDependencies, work);
}

CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                   const CUgraphEdgeData*, size_t numDependencies) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (numDependencies && (from == nullptr || to == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < numDependencies; ++i)
    if (!node_in(key(hGraph), from[i]) || !node_in(key(hGraph), to[i]))
      return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < numDependencies; ++i)
    graphs().nodes.find(to[i])->deps.push_back(key(from[i]));
  return CUDA_SUCCESS;
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (graphs().graphs.find(hGraph) == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return list(nodes_of(key(hGraph)), nodes, numNodes);
}

CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode* rootNodes, size_t* numRootNodes) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (graphs().graphs.find(hGraph) == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::vector<uintptr_t> roots = nodes_of(key(hGraph));
  std::erase_if(roots, [](uintptr_t id) { return !graphs().nodes.find(id)->deps.empty(); });
  return list(roots, rootNodes, numRootNodes);
}

CUresult cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode* dependencies,
                                       CUgraphEdgeData* edgeData, size_t* numDependencies) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  const Node* n = graphs().nodes.find(hNode);
  if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (edgeData != nullptr && numDependencies != nullptr)
    std::fill_n(edgeData, std::min(*numDependencies, n->deps.size()), CUgraphEdgeData{});
  return list(n->deps, dependencies, numDependencies);
}

CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  const Node* n = graphs().nodes.find(hNode);
  if (n == nullptr || type == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *type = n->work.type;
  return CUDA_SUCCESS;
}

// The arguments come back as an `extra` buffer the node owns. A node that
// launches a library kernel names, as the real driver's does, the kernel and
// its function in the context: a handle the program never looked up.
CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  Node* n = graphs().nodes.find(hNode);
  if (n == nullptr || nodeParams == nullptr || n->work.type != CU_GRAPH_NODE_TYPE_KERNEL)
    return CUDA_ERROR_INVALID_VALUE;
  const LaunchRecord& r = n->work.launch;
  n->args_size = r.params.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<uint8_t*>(r.params.data()),
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &n->args_size, CU_LAUNCH_PARAM_END};
  std::copy(std::begin(extra), std::end(extra), n->extra);
  *nodeParams = {n->work.func, r.grid[0], r.grid[1], r.grid[2], r.block[0], r.block[1],
                 r.block[2],   r.shmem,   nullptr,   n->extra,  nullptr,    nullptr};
  if (const Kernel* k = state().kernels.find(n->work.func)) {
    nodeParams->func = as_handle<CUfunction>(k->function);
    nodeParams->kern = reinterpret_cast<CUkernel>(n->work.func);
  }
  return CUDA_SUCCESS;
}

CUresult cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS* nodeParams) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  const Node* n = graphs().nodes.find(hNode);
  if (n == nullptr || nodeParams == nullptr || n->work.type != CU_GRAPH_NODE_TYPE_HOST)
    return CUDA_ERROR_INVALID_VALUE;
  nodeParams->fn = n->work.host_fn;
  nodeParams->userData = n->work.host_data;
  return CUDA_SUCCESS;
}

// Kernel node attributes are kept as set; an event attribute must name a
// live event, as the driver checks.
CUresult cuGraphKernelNodeSetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr,
                                       const CUkernelNodeAttrValue* value) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  Node* n = graphs().nodes.find(hNode);
  if (n == nullptr || value == nullptr || n->work.type != CU_GRAPH_NODE_TYPE_KERNEL)
    return CUDA_ERROR_INVALID_VALUE;
  if (attr == CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT &&
      state().events.find(value->launchCompletionEvent.event) == nullptr)
    return CUDA_ERROR_INVALID_HANDLE;
  n->attributes[attr] = *value;
  return CUDA_SUCCESS;
}

CUresult cuGraphKernelNodeGetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr,
                                       CUkernelNodeAttrValue* value) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  Node* n = graphs().nodes.find(hNode);
  if (n == nullptr || value == nullptr || n->work.type != CU_GRAPH_NODE_TYPE_KERNEL)
    return CUDA_ERROR_INVALID_VALUE;
  auto it = n->attributes.find(attr);
  *value = it == n->attributes.end() ? CUlaunchAttributeValue{} : it->second;
  return CUDA_SUCCESS;
}

CUresult cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams* nodeParams) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  Node* n = graphs().nodes.find(hNode);
  if (n == nullptr || nodeParams == nullptr || nodeParams->type != n->work.type)
    return CUDA_ERROR_INVALID_VALUE;
  Work work;
  if (CUresult rc = work_from_params(*nodeParams, &work); rc != CUDA_SUCCESS) return rc;
  n->work = work;
  return CUDA_SUCCESS;
}

}  // extern "C"
