// Module and library images, and the JIT linker. (op_layouts.h says how these
// are used.)
#pragma once

#include <cuda.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "protocol/layout.h"
#include "protocol/ops.h"

namespace scuda::protocol::op {

// JIT options as they cross: the driver's keys, and one number each (a log
// size, a count; options that name client memory never cross).
struct JitOptions {
  std::vector<uint32_t> keys;    // CUjit_option, at most kMaxJitOptions
  std::vector<uint64_t> values;  // one per key
  auto fields() { return std::tie(keys, values); }
};

// One input of a link: its bytes are read in place.
struct LinkInput {
  uint32_t type = 0;  // CUjitInputType
  std::string name;
  std::string_view data;
  JitOptions options;
  auto fields() { return std::tie(type, name, data, options); }
};

// A whole JIT link in one request (at most kMaxLinkInputs inputs): the
// session links with its driver and replies the image and the logs, also
// when the link failed (then `result` says why and the image is empty).
struct Link {
  static constexpr Op kOp = kOpLink;
  struct Request {
    JitOptions options;
    std::vector<LinkInput> inputs;
    auto fields() { return std::tie(options, inputs); }
  };
  struct Reply {
    uint32_t result = 0;  // CUresult of the link
    std::string image;
    std::string info_log;
    std::string error_log;
    uint32_t wall_ms = 0;  // CU_JIT_WALL_TIME, when asked
    auto fields() { return std::tie(result, image, info_log, error_log, wall_ms); }
  };
};

// An image to load as a module or library, named by its SHA-256: sent
// with it, or without it, when the server's cache should hold it (else the
// load fails with kImageNotHeld and the client sends the image).
struct ImageLoad {
  uint64_t proposed = 0;
  ImageHash hash{};
  uint64_t size = 0;
  std::optional<std::string_view> image;
  auto fields() { return std::tie(proposed, hash, size, image); }
};

// The loaded object's id, and whether the server's cache holds the image
// now (so that later loads send its hash alone).
struct ImageLoaded {
  uint64_t id = 0;
  uint8_t cached = 0;
  auto fields() { return std::tie(id, cached); }
};

struct ModuleLoad {
  static constexpr Op kOp = kOpModuleLoad;
  using Request = ImageLoad;
  using Reply = ImageLoaded;
};

struct LibraryLoad {
  static constexpr Op kOp = kOpLibraryLoad;
  using Request = ImageLoad;
  using Reply = ImageLoaded;
};

}  // namespace scuda::protocol::op
