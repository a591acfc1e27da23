// Graphs, their nodes, and stream capture. (op_layouts.h says how these are
// used.)
#pragma once

#include <cuda.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "protocol/layout.h"
#include "protocol/op_layouts/kernels.h"
#include "protocol/ops.h"

namespace scuda::protocol::op {

// A graph node, by the client's id.
struct NodeRequest {
  uint64_t node = 0;
  auto fields() { return std::tie(node); }
};

// A kernel node's launch attribute: set when the request carries a value
// (event handles inside as client ids), else read; a read's reply carries
// the value, a set's none.
struct GraphKernelNodeAttribute {
  static constexpr Op kOp = kOpGraphKernelNodeAttribute;
  struct Request {
    uint64_t node = 0;
    uint32_t attribute = 0;  // CUkernelNodeAttrID
    std::optional<CUlaunchAttributeValue> value;
    auto fields() { return std::tie(node, attribute, value); }
  };
  struct Reply {
    std::optional<CUlaunchAttributeValue> value;
    auto fields() { return std::tie(value); }
  };
};

// A graph node's parameters (add-node and both set-params): the driver's
// struct with its handles as the client's ids and its pointers zeroed, then
// what those pointers pointed to. Each list is empty unless the node's type
// has it, and then holds as many items as the struct's count says.
struct NodeParams {
  CUgraphNodeParams params{};
  std::string_view args;                          // a kernel's, packed by its layout
  std::vector<CUmemAccessDesc> access;            // an allocation's access descriptors
  std::vector<CUstreamBatchMemOpParams> mem_ops;  // a batch memory operation's
  std::vector<uint64_t> bodies;                   // a conditional's proposed body graphs, adding
  auto fields() { return std::tie(params, args, access, mem_ops, bodies); }
};

// A node added to `graph` after `deps` (with their edge data, as many, when
// present), bound to the id proposed; the reply names a conditional node's
// body graphs (the ids proposed) and an allocation node's address.
struct GraphAddNode {
  static constexpr Op kOp = kOpGraphAddNode;
  struct Request {
    uint64_t graph = 0;
    uint64_t proposed = 0;
    std::optional<std::vector<uint64_t>> deps;
    std::optional<std::vector<CUgraphEdgeData>> edges;
    NodeParams node;
    auto fields() { return std::tie(graph, proposed, deps, edges, node); }
  };
  struct Reply {
    uint64_t node = 0;
    std::vector<uint64_t> bodies;
    uint64_t address = 0;
    auto fields() { return std::tie(node, bodies, address); }
  };
};

// New parameters for a node of a graph.
struct GraphNodeSetParams {
  static constexpr Op kOp = kOpGraphNodeSetParams;
  struct Request {
    uint64_t node = 0;
    NodeParams params;
    auto fields() { return std::tie(node, params); }
  };
  using Reply = Empty;
};

// New parameters for a node's copy in an executable graph.
struct GraphExecNodeSetParams {
  static constexpr Op kOp = kOpGraphExecNodeSetParams;
  struct Request {
    uint64_t exec = 0;
    uint64_t node = 0;
    NodeParams params;
    auto fields() { return std::tie(exec, node, params); }
  };
  using Reply = Empty;
};

// A kernel node's parameters, handles as the client's ids (a function new
// to the session takes the id proposed) and pointers zeroed; its arguments
// packed by the kernel's layout (always present: an unknown one has no
// slots); and the function's name ("" when the driver has none), which the
// client may never have looked up.
struct GraphKernelNodeGetParams {
  static constexpr Op kOp = kOpGraphKernelNodeGetParams;
  struct Request {
    uint64_t node = 0;
    uint64_t proposed = 0;
    auto fields() { return std::tie(node, proposed); }
  };
  struct Reply {
    CUDA_KERNEL_NODE_PARAMS params{};
    std::string args;
    ParamSlots layout;
    std::string name;
    auto fields() { return std::tie(params, args, layout, name); }
  };
};

// A node's parameters by value, pointers zeroed, and the array they point
// to, which the client keeps for the pointer it returns.
template <class Params, class Item>
struct ParamsWithArray {
  Params params{};
  std::vector<Item> items;
  auto fields() { return std::tie(params, items); }
};

// A memory allocation node's parameters and access descriptors.
struct GraphMemAllocNodeGetParams {
  static constexpr Op kOp = kOpGraphMemAllocNodeGetParams;
  using Request = NodeRequest;
  using Reply = ParamsWithArray<CUDA_MEM_ALLOC_NODE_PARAMS, CUmemAccessDesc>;
};

// A batch memory operation node's parameters (its context as the client's
// id) and operations.
struct GraphBatchMemOpNodeGetParams {
  static constexpr Op kOp = kOpGraphBatchMemOpNodeGetParams;
  using Request = NodeRequest;
  using Reply = ParamsWithArray<CUDA_BATCH_MEM_OP_NODE_PARAMS, CUstreamBatchMemOpParams>;
};

// A graph's DOT text, as cuGraphDebugDotPrint writes it with `flags`; the
// client writes the file.
struct GraphDot {
  static constexpr Op kOp = kOpGraphDot;
  struct Request {
    uint64_t graph = 0;
    uint32_t flags = 0;
    auto fields() { return std::tie(graph, flags); }
  };
  struct Reply {
    std::string text;
    auto fields() { return std::tie(text); }
  };
};

// Instantiates `graph` with cuGraphInstantiateWithParams's flags and upload
// stream (`mode`: kCopyPerThread for the per-thread default stream); the
// executable graph and a node new to the session take the ids proposed. The
// reply comes also when the driver failed: its result and error node say why.
struct GraphInstantiate {
  static constexpr Op kOp = kOpGraphInstantiate;
  struct Request {
    uint64_t proposed = 0;
    uint64_t graph = 0;
    uint64_t flags = 0;
    uint64_t upload_stream = 0;
    uint8_t mode = 0;
    uint64_t proposed_node = 0;
    auto fields() { return std::tie(proposed, graph, flags, upload_stream, mode, proposed_node); }
  };
  struct Reply {
    uint64_t exec = 0;    // 0 when the driver failed
    uint32_t result = 0;  // CUgraphInstantiateResult
    uint64_t error_node = 0;
    auto fields() { return std::tie(exec, result, error_node); }
  };
};

// A stream's capture: its status, id and graph, and its dependency nodes
// when they fit the ids proposed for them (else only their count, and the
// client asks again with room for them). Graph and nodes new to the
// session take the ids proposed.
struct StreamCaptureInfo {
  static constexpr Op kOp = kOpStreamCaptureInfo;
  struct Request {
    uint64_t stream = 0;
    uint8_t mode = 0;  // kCopyPerThread: the per-thread default stream
    uint64_t proposed_graph = 0;
    std::vector<uint64_t> proposed_nodes;  // the room for dependencies
    auto fields() { return std::tie(stream, mode, proposed_graph, proposed_nodes); }
  };
  struct Reply {
    uint32_t status = 0;  // CUstreamCaptureStatus
    uint64_t id = 0;
    uint64_t graph = 0;
    uint64_t count = 0;           // the dependencies, also when they did not fit
    std::vector<uint64_t> nodes;  // empty when they did not fit
    std::optional<std::vector<CUgraphEdgeData>> edges;  // one per node, when the driver has them
    auto fields() { return std::tie(status, id, graph, count, nodes, edges); }
  };
};

// Updates executable graph `exec` from `graph`; nodes new to the session take
// the ids proposed. The reply comes also when the driver failed: the update's
// result and the nodes it names say why.
struct GraphExecUpdate {
  static constexpr Op kOp = kOpGraphExecUpdate;
  struct Request {
    uint64_t exec = 0;
    uint64_t graph = 0;
    uint64_t proposed_node = 0;
    uint64_t proposed_from_node = 0;
    auto fields() { return std::tie(exec, graph, proposed_node, proposed_from_node); }
  };
  struct Reply {
    uint32_t result = 0;  // CUgraphExecUpdateResult
    uint64_t error_node = 0;
    uint64_t error_from_node = 0;
    auto fields() { return std::tie(result, error_node, error_from_node); }
  };
};

}  // namespace scuda::protocol::op
