// A GPU's UUID as NVIDIA's tools and CUDA_VISIBLE_DEVICES write it.
#pragma once

#include <cuda.h>

#include <cstdio>
#include <string>

namespace scuda {

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lower-case hexadecimal.
inline std::string gpu_uuid_text(const CUuuid& id) {
  const auto* b = reinterpret_cast<const unsigned char*>(id.bytes);
  char text[41];
  std::snprintf(text, sizeof text,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return text;
}

}  // namespace scuda
