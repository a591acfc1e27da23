// Finds NVIDIA's own copy of a library (the driver, NVML) even where a scuda
// stand-in shares its name.
#pragma once

#include <span>
#include <string>

namespace scuda {

// dlopens `path`, or when it is empty the first of `candidates` that loads and
// is not a scuda stand-in. Returns the handle and sets *opened to the path, or
// returns nullptr and sets *tried to what was tried and why each failed.
void* open_real_library(const std::string& path, std::span<const char* const> candidates,
                        std::string* opened, std::string* tried);

}  // namespace scuda
