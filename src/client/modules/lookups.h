// Names of functions and kernels, as cuFuncGetName and cuKernelGetName
// answer them (lookups.cc).
#pragma once

#include <cstdint>
#include <string_view>

namespace scuda::client {

// Records `name` as the name of function `id`, which reached the program
// other than by a lookup (a graph's kernel node): cuFuncGetName answers it.
// An empty name records nothing.
void note_function_name(uint64_t id, std::string_view name);

}  // namespace scuda::client
