// Graph node parameters for the wire (protocol::op::NodeParams,
// docs/protocol.md, "Graphs and stream capture"): the CUgraphNodeParams
// struct with its handles already client ids and every pointer zeroed, and
// the lists of what the pointers pointed to.
#pragma once

#include <cuda.h>

#include "protocol/codec.h"
#include "protocol/op_layouts.h"

namespace scuda::client {

// Fills `out` from `p`. Kernel arguments are packed in the kernel's layout
// into `packed`, which `out` views and must outlive; memcpy nodes naming
// host memory are sent naming its mirror; a conditional node gets proposed
// ids for its body graphs when `adding`. Returns CUDA_ERROR_NOT_SUPPORTED,
// with a log line, for what cannot be remoted.
CUresult take_node_params(const CUgraphNodeParams& p, bool adding, protocol::Writer* packed,
                          protocol::op::NodeParams* out);

// The same for the typed entry points' structs.
CUgraphNodeParams kernel_node(const CUDA_KERNEL_NODE_PARAMS& k);
CUgraphNodeParams memcpy_node(const CUDA_MEMCPY3D& copy, CUcontext ctx);
CUgraphNodeParams host_node(const CUDA_HOST_NODE_PARAMS& h);
CUgraphNodeParams batch_mem_op_node(const CUDA_BATCH_MEM_OP_NODE_PARAMS& b);

}  // namespace scuda::client
