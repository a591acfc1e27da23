// Files the program names in a driver call (cuGraphDebugDotPrint,
// cuLogsDumpToFile): the session produces their text, and they are written
// here, on the program's machine (program_files.cc).
#pragma once

#include <cuda.h>

#include <string_view>

namespace scuda::client {

// Replaces the file at `path` with `text`; on failure logs that `call`
// cannot write it and returns CUDA_ERROR_OPERATING_SYSTEM.
CUresult write_program_file(const char* path, std::string_view text, const char* call);

}  // namespace scuda::client
