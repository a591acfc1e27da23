// Contexts and what a context answers. (op_layouts.h says how these are used.)
#pragma once

#include <cuda.h>

#include <cstdint>
#include <tuple>
#include <vector>

#include "protocol/layout.h"
#include "protocol/ops.h"

namespace scuda::protocol::op {

// A context on `device` with cuCtxCreate's flags and, when the program gave
// parameters (`has_params`), their execution affinities; bound to the
// client's id.
struct CtxCreate {
  static constexpr Op kOp = kOpCtxCreate;
  struct Affinity {
    uint32_t type = 0;  // CUexecAffinityType
    uint32_t sm_count = 0;
  };
  struct Request {
    uint64_t proposed = 0;
    uint32_t flags = 0;
    int32_t device = 0;
    uint8_t has_params = 0;
    std::vector<Affinity> affinity;  // at most kMaxCtxAffinityParams
    auto fields() { return std::tie(proposed, flags, device, has_params, affinity); }
  };
  struct Reply {
    uint64_t context = 0;
    auto fields() { return std::tie(context); }
  };
};

// One-way: the context the next requests run in.
struct CtxSetCurrent {
  static constexpr Op kOp = kOpCtxSetCurrent;
  struct Request {
    uint64_t context = 0;
    auto fields() { return std::tie(context); }
  };
  using Reply = Empty;
};

// A device's primary context, bound to the client's id, without retaining it.
struct PrimaryContext {
  static constexpr Op kOp = kOpPrimaryContext;
  struct Request {
    int32_t device = 0;
    uint64_t proposed = 0;
    auto fields() { return std::tie(device, proposed); }
  };
  struct Reply {
    uint64_t context = 0;
    auto fields() { return std::tie(context); }
  };
};

}  // namespace scuda::protocol::op
