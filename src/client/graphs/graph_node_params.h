// Graph node parameters on the wire (docs/protocol.md, "Graph nodes"): the
// CUgraphNodeParams struct as bytes, with its handles already client ids and
// every pointer zeroed, followed by what the pointers pointed to.
#pragma once

#include <cuda.h>

#include <vector>

#include "protocol/codec.h"

namespace scuda::client {

// Writes `p` for a request. Kernel arguments are packed in the kernel's
// layout; memcpy nodes must name device memory only; a conditional node gets
// `bodies` proposed ids for its body graphs when `adding`. Returns
// CUDA_ERROR_NOT_SUPPORTED, with a log line, for what cannot be remoted.
CUresult write_node_params(protocol::Writer& w, const CUgraphNodeParams& p, bool adding,
                           std::vector<uint64_t>* bodies);

// The same for the typed entry points' structs.
CUgraphNodeParams kernel_node(const CUDA_KERNEL_NODE_PARAMS& k);
CUgraphNodeParams memcpy_node(const CUDA_MEMCPY3D& copy, CUcontext ctx);
CUgraphNodeParams host_node(const CUDA_HOST_NODE_PARAMS& h);
CUgraphNodeParams batch_mem_op_node(const CUDA_BATCH_MEM_OP_NODE_PARAMS& b);

}  // namespace scuda::client
