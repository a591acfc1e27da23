// Launches and what the client learns of functions and kernels before it
// launches them. (op_layouts.h says how these are used.)
#pragma once

#include <cuda.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "protocol/layout.h"
#include "protocol/ops.h"

namespace scuda::protocol::op {

// A launch configuration: the function, the grid and block, the dynamic
// shared memory, the stream, `mode` (kCopyPerThread for the per-thread
// default stream) and the launch attributes (at most kMaxLaunchAttributes;
// event handles inside are client ids).
struct LaunchConfig {
  uint64_t function = 0;
  std::array<uint32_t, 6> dims{};  // grid x, y, z, block x, y, z
  uint32_t shared_memory = 0;
  uint64_t stream = 0;
  uint8_t mode = 0;
  std::vector<CUlaunchAttribute> attributes;
  auto fields() { return std::tie(function, dims, shared_memory, stream, mode, attributes); }
};

// One-way: a launch. The arguments, packed in the kernel's layout, follow the
// configuration as one blob, written and read apart so that neither end
// copies them into a struct.
struct Launch {
  static constexpr Op kOp = kOpLaunch;
  using Request = LaunchConfig;
  using Reply = Empty;
};

// cuOccupancyMaxActiveClusters (`which` 0) or
// cuOccupancyMaxPotentialClusterSize (1) of a launch configuration.
struct OccupancyClusters {
  static constexpr Op kOp = kOpOccupancyClusters;
  struct Request {
    uint8_t which = 0;
    LaunchConfig config;
    auto fields() { return std::tie(which, config); }
  };
  struct Reply {
    int32_t value = 0;
    auto fields() { return std::tie(value); }
  };
};

// A kernel's parameters, each one's offset and size in order; none when the
// driver cannot tell (a kernel looked up before any context).
using ParamSlots = std::optional<std::vector<ParamSlot>>;

struct AttributeValue {
  int32_t attribute = 0;  // CUfunction_attribute
  int32_t value = 0;
};

// What the client packs a function's or kernel's launch arguments by and
// answers its attribute queries from: its parameters, and every attribute
// the driver answers for `device` (-1: a function's own, or a kernel's with
// no current context, which has none).
struct FunctionDescription {
  ParamSlots params;
  int32_t device = -1;
  std::vector<AttributeValue> attributes;
  auto fields() { return std::tie(params, device, attributes); }
};

// A function or kernel by name in module or library `owner`, bound to the
// client's id (which the client may have handed out before it reads the
// reply).
struct NameLookup {
  uint64_t proposed = 0;
  uint64_t owner = 0;
  std::string name;
  auto fields() { return std::tie(proposed, owner, name); }
};

struct ModuleGetFunction {
  static constexpr Op kOp = kOpModuleGetFunction;
  using Request = NameLookup;
  using Reply = FunctionDescription;
};

struct LibraryGetKernel {
  static constexpr Op kOp = kOpLibraryGetKernel;
  using Request = NameLookup;
  using Reply = FunctionDescription;
};

// A kernel's function in the current context, bound as a library kernel is.
struct KernelGetFunction {
  static constexpr Op kOp = kOpKernelGetFunction;
  struct Request {
    uint64_t proposed = 0;
    uint64_t kernel = 0;
    auto fields() { return std::tie(proposed, kernel); }
  };
  using Reply = FunctionDescription;
};

// A function's or kernel's description again, with a kernel's attributes
// for `device` (-1: the current context's), when its lookup's lacked what
// the client needs.
struct FunctionInfo {
  static constexpr Op kOp = kOpFunctionInfo;
  struct Request {
    uint64_t id = 0;
    int32_t device = -1;
    auto fields() { return std::tie(id, device); }
  };
  using Reply = FunctionDescription;
};

// The names of a module's functions (`library` 0) or a library's kernels,
// in the driver's order.
struct FunctionNames {
  static constexpr Op kOp = kOpFunctionNames;
  struct Request {
    uint8_t library = 0;
    uint64_t id = 0;
    auto fields() { return std::tie(library, id); }
  };
  struct Reply {
    std::vector<std::string> names;  // at most kMaxModuleFunctions
    auto fields() { return std::tie(names); }
  };
};

}  // namespace scuda::protocol::op
