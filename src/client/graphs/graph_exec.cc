// Instantiation with parameters and executable-graph updates: their result
// structs name nodes, which travel as client ids; the server binds a node
// new to the session to the id proposed here.
#include <vector>

#include "client/runtime.h"
#include "custom.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

using protocol::Reader;
using protocol::Writer;

// The server replies the outputs even when the driver failed: they say why.
CUresult instantiate(CUgraphExec* exec, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS* params,
                     bool per_thread) {
  if (!exec || !params) return CUDA_ERROR_INVALID_VALUE;
  Writer w;
  w.u64(new_handle_id());
  w.u64(handle_id(graph));
  w.u64(params->flags);
  w.u64(handle_id(params->hUploadStream));
  w.u8(per_thread ? protocol::kCopyPerThread : 0);
  w.u64(new_handle_id());
  std::vector<uint8_t> reply;
  const CUresult rc = call(protocol::kOpGraphInstantiate, w, &reply);
  if (reply.empty()) return rc;
  Reader r(reply);
  const uint64_t exec_id = r.u64();
  params->result_out = static_cast<CUgraphInstantiateResult>(r.u32());
  params->hErrNode_out = handle_from_id<CUgraphNode>(r.u64());
  if (!r.done()) return bad_reply("cuGraphInstantiateWithParams");
  if (rc == CUDA_SUCCESS) *exec = handle_from_id<CUgraphExec>(exec_id);
  return rc;
}

CUresult exec_update(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo* info) {
  if (!info) return CUDA_ERROR_INVALID_VALUE;
  Writer w;
  w.u64(handle_id(exec));
  w.u64(handle_id(graph));
  w.u64(new_handle_id());
  w.u64(new_handle_id());
  std::vector<uint8_t> reply;
  const CUresult rc = call(protocol::kOpGraphExecUpdate, w, &reply);
  if (reply.empty()) return rc;
  Reader r(reply);
  info->result = static_cast<CUgraphExecUpdateResult>(r.u32());
  info->errorNode = handle_from_id<CUgraphNode>(r.u64());
  info->errorFromNode = handle_from_id<CUgraphNode>(r.u64());
  return r.done() ? rc : bad_reply("cuGraphExecUpdate");
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
