// Executable graphs: a snapshot of the graph's work in topological order,
// launched by running it; node parameters and whole updates change the
// snapshot only.
#include <cuda.h>

#include <memory>

#include "graph.h"
#include "state.h"

using namespace scuda_double;

namespace {

CUresult instantiate(CUgraphExec* out, CUgraph graph) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const uintptr_t id = reinterpret_cast<uintptr_t>(graph);
  if (graphs().graphs.find(graph) == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto exec = std::make_unique<Exec>();
  exec->graph = id;
  exec->nodes = topological_order(id);
  for (uintptr_t node : exec->nodes) exec->work.push_back(graphs().nodes.find(node)->work);
  *out = as_handle<CUgraphExec>(graphs().execs.add(std::move(exec)));
  return CUDA_SUCCESS;
}

// Where `node` (a node of the graph) sits in the executable graph; -1 if absent.
long position(const Exec& exec, CUgraphNode node) {
  for (size_t i = 0; i < exec.nodes.size(); ++i)
    if (exec.nodes[i] == reinterpret_cast<uintptr_t>(node)) return static_cast<long>(i);
  return -1;
}

// Pairs the graph's nodes with the executable's in order; types must match.
CUresult update(Exec* exec, CUgraph graph, CUgraphExecUpdateResultInfo* info) {
  const std::vector<uintptr_t> order = topological_order(reinterpret_cast<uintptr_t>(graph));
  *info = {CU_GRAPH_EXEC_UPDATE_SUCCESS, nullptr, nullptr};
  if (order.size() != exec->nodes.size()) {
    info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  }
  for (size_t i = 0; i < order.size(); ++i) {
    if (graphs().nodes.find(order[i])->work.type != exec->work[i].type) {
      info->result = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
      info->errorNode = as_handle<CUgraphNode>(order[i]);
      return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    }
  }
  for (size_t i = 0; i < order.size(); ++i) exec->work[i] = graphs().nodes.find(order[i])->work;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  return instantiate(phGraphExec, hGraph);
}

CUresult cuGraphInstantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUresult rc = instantiate(phGraphExec, hGraph);
  params->result_out =
      rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
  params->hErrNode_out = nullptr;
  return rc;
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  Call call = begin_on_stream(hStream);
  if (call.status != CUDA_SUCCESS) return call.status;
  const Exec* exec = graphs().execs.find(hGraphExec);
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const Work& work : exec->work) {
    const CUresult rc = run_work(work);
    if (rc == CUDA_ERROR_ILLEGAL_ADDRESS) call.ctx->sticky = rc;
    if (rc != CUDA_SUCCESS) return rc;
  }
  return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  return graphs().execs.erase(hGraphExec) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                  CUgraphNodeParams* nodeParams) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  Exec* exec = graphs().execs.find(hGraphExec);
  if (exec == nullptr || nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const long at = position(*exec, hNode);
  if (at < 0 || exec->work[at].type != nodeParams->type) return CUDA_ERROR_INVALID_VALUE;
  Work work;
  if (CUresult rc = work_from_params(*nodeParams, &work); rc != CUDA_SUCCESS) return rc;
  exec->work[at] = work;
  return CUDA_SUCCESS;
}

CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                              CUgraphExecUpdateResultInfo* resultInfo) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  Exec* exec = graphs().execs.find(hGraphExec);
  if (exec == nullptr || resultInfo == nullptr || graphs().graphs.find(hGraph) == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  return update(exec, hGraph, resultInfo);
}

}  // extern "C"
