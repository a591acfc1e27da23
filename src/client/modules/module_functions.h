// A module's functions or a library's kernels, all of them: what
// cuModuleEnumerateFunctions, cuLibraryEnumerateKernels and cuFFT's
// export-table slot hand out (module_functions.cc).
#pragma once

#include <cuda.h>

#include <vector>

namespace scuda::client {

// The functions of `mod`, each looked up by its name as cuModuleGetFunction
// would (so each has an id and a description): the session names them.
CUresult module_functions(CUmodule mod, std::vector<CUfunction>* out);

// The kernels of `library`, each looked up by name as cuLibraryGetKernel
// would.
CUresult library_kernels(CUlibrary library, std::vector<CUkernel>* out);

}  // namespace scuda::client
