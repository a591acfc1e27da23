// Parser for the double's text "module image" format:
//   scuda-double-module
//   kernel <name> <param size> <param size> ...
//   global <name> <size>
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace scuda_double {

struct KernelDesc {
  std::string name;
  std::vector<size_t> sizes;
  std::vector<size_t> offsets;
  size_t packed_size = 0;  // end of the last parameter
  size_t alignment = 1;    // largest parameter alignment
};

struct GlobalDesc {
  std::string name;
  size_t size = 0;
};

struct ImageDesc {
  std::vector<KernelDesc> kernels;
  std::vector<GlobalDesc> globals;
};

// False when the image lacks the magic line or a line is malformed.
bool parse_image(const void* image, ImageDesc* out);

const KernelDesc* find_kernel(const ImageDesc& image, const std::string& name);

}  // namespace scuda_double
