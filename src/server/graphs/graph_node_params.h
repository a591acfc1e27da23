// Graph node parameters as the client sends them (client/graphs/graph_node_params.h):
// decoded, their handles resolved, their pointers set to buffers owned here.
// Only node types whose every field can be checked are accepted: a host
// node's function pointer, or a copy naming host memory, would reach into
// the server's own address space.
#pragma once

#include <cuda.h>

#include "protocol/op_layouts.h"
#include "server/session/session.h"

namespace scuda::server {

// A node's parameters ready for the driver: the request's struct, its
// pointers set to the request's lists, which must outlive it.
struct NodeParams {
  NodeParams() = default;
  NodeParams(const NodeParams&) = delete;  // `p` points into the members

  CUgraphNodeParams p{};
  size_t args_size = 0;
  void* extra[5] = {};
};

// Points n->p at `wire`'s lists; false (a malformed request) when a list's
// count is not the struct's or a list comes with a node type that has none.
// Checks nothing else.
bool take_node_params(const protocol::op::NodeParams& wire, bool adding, NodeParams* n);
// Resolves the handles and checks the fields the driver would trust.
CUresult resolve_node_params(Session& s, NodeParams* n);

}  // namespace scuda::server
