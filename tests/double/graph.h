// Graphs, their nodes and executable graphs. Node handles count up, so a
// graph's nodes in handle order are in creation order. Callers hold the
// state lock.
#pragma once

#include <cuda.h>

#include <map>
#include <vector>

#include "registry.h"
#include "work.h"

namespace scuda_double {

struct Node {
  uintptr_t graph = 0;
  Work work;
  std::vector<uintptr_t> deps;
  // What cuGraphKernelNodeGetParams returns points here.
  size_t args_size = 0;
  void* extra[5] = {};
  // Kernel nodes: the attributes set on the node, by id; the rest read as 0.
  std::map<int, CUlaunchAttributeValue> attributes;
};

struct Graph {
  std::map<uintptr_t, unsigned> user_refs;  // user object -> references the graph holds
};

// A user object (user_objects.cc): its destructor runs when the last
// reference goes.
struct UserObject {
  void* ptr = nullptr;
  CUhostFn destroy = nullptr;
  unsigned refs = 0;
};

struct Exec {
  uintptr_t graph = 0;
  std::vector<uintptr_t> nodes;  // topological order
  std::vector<Work> work;        // each node's, as instantiated or set since
};

struct Graphs {
  Registry<Graph> graphs{0x80000000};
  Registry<Node> nodes{0x90000000};
  Registry<Exec> execs{0xa0000000};
  Registry<UserObject> user_objects{0xb0000000};
};

// Drops `count` references of user object `object`, running its destructor
// when none are left; false for an unknown object or too many.
bool release_user_object(uintptr_t object, unsigned count);

Graphs& graphs();

CUresult work_from_params(const CUgraphNodeParams& p, Work* work);
// A memory allocation node's work: allocates, and writes the address to p.
CUresult alloc_work(CUDA_MEM_ALLOC_NODE_PARAMS_v2* p, uintptr_t ctx, Work* work);
// Adds a node; `deps` must be nodes of `graph`.
CUresult add_node(uintptr_t graph, const std::vector<uintptr_t>& deps, const Work& work,
                  uintptr_t* node);
// The graph's nodes, each after its dependencies.
std::vector<uintptr_t> topological_order(uintptr_t graph);
CUresult run_graph(uintptr_t graph);

}  // namespace scuda_double
