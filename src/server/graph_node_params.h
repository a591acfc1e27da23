// Graph node parameters as the client sends them (client/graphs/graph_node_params.h):
// decoded, their handles resolved, their pointers set to buffers owned here.
// Only node types whose every field can be checked are accepted: a host
// node's function pointer, or a copy naming host memory, would reach into
// the server's own address space.
#pragma once

#include <cuda.h>

#include <string>
#include <vector>

#include "protocol/codec.h"
#include "server/session.h"

namespace scuda::server {

struct NodeParams {
  NodeParams() = default;
  NodeParams(const NodeParams&) = delete;  // `p` points into the members

  CUgraphNodeParams p{};
  std::string args;
  size_t args_size = 0;
  void* extra[5] = {};
  std::vector<CUmemAccessDesc> access;
  std::vector<CUstreamBatchMemOpParams> mem_ops;  // a batch memory operation node's
  std::vector<uint64_t> proposed_bodies;          // a conditional node's, when adding
};

// Decodes; false when the request is malformed. Checks nothing else.
bool read_node_params(protocol::Reader& in, bool adding, NodeParams* n);
// Resolves the handles and checks the fields the driver would trust.
CUresult resolve_node_params(Session& s, NodeParams* n);

}  // namespace scuda::server
