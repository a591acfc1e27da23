// Instantiation with parameters and executable-graph updates: their result
// structs name nodes, which travel as client ids; the server binds a node
// new to the session to the id proposed here.
#include <optional>

#include "client/op_calls.h"
#include "custom.h"
#include "protocol/op_layouts.h"

namespace scuda::client {

namespace {

namespace op = protocol::op;

// The server replies the outputs also when the driver failed: they say why.
CUresult instantiate(CUgraphExec* exec, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS* params,
                     bool per_thread) {
  if (!exec || !params) return CUDA_ERROR_INVALID_VALUE;
  const op::GraphInstantiate::Request request{
      new_handle_id(),
      handle_id(graph),
      params->flags,
      handle_id(params->hUploadStream),
      static_cast<uint8_t>(per_thread ? protocol::kCopyPerThread : 0),
      new_handle_id()};
  std::optional<op::GraphInstantiate::Reply> reply;
  const CUresult rc = ask_reporting<op::GraphInstantiate>(request, &reply);
  if (!reply) return rc;
  params->result_out = static_cast<CUgraphInstantiateResult>(reply->result);
  params->hErrNode_out = handle_from_id<CUgraphNode>(reply->error_node);
  if (rc == CUDA_SUCCESS) *exec = handle_from_id<CUgraphExec>(reply->exec);
  return rc;
}

CUresult exec_update(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo* info) {
  if (!info) return CUDA_ERROR_INVALID_VALUE;
  const op::GraphExecUpdate::Request request{handle_id(exec), handle_id(graph), new_handle_id(),
                                             new_handle_id()};
  std::optional<op::GraphExecUpdate::Reply> reply;
  const CUresult rc = ask_reporting<op::GraphExecUpdate>(request, &reply);
  if (!reply) return rc;
  info->result = static_cast<CUgraphExecUpdateResult>(reply->result);
  info->errorNode = handle_from_id<CUgraphNode>(reply->error_node);
  info->errorFromNode = handle_from_id<CUgraphNode>(reply->error_from_node);
  return rc;
}

}  // namespace

}  // namespace scuda::client

CUresult scuda::client::custom::cuGraphExecUpdate_v2(CUgraphExec exec, CUgraph graph,
                                                     CUgraphExecUpdateResultInfo* info) {
  return scuda::client::exec_update(exec, graph, info);
}

// The entry points and their per-thread twins are generated (codegen,
// `twins`); these are their bodies.
namespace scuda::client::custom {

CUresult cuGraphInstantiateWithParams(CUgraphExec* exec, CUgraph graph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS* params, DefaultStream d) {
  return scuda::client::instantiate(exec, graph, params, per_thread(d));
}

}  // namespace scuda::client::custom
