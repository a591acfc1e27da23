// The driver's hidden compile-cache table (da9151d3), which NVRTC asks for
// to keep what it compiles between processes: the program's intermediate
// code (kind 2) and its cubin (kind 1), each keyed by the program's bitcode.
// With NVIDIA's driver NVRTC finds a program compiled before in the
// driver's cache and skips its optimizer and assembler; without the table
// it compiles everything every time. The client serves the table from its
// own cache folder (compile_cache_store.h); docs/export-tables.md gives the
// slots. CUDA_CACHE_DISABLE=1 makes every lookup miss and keeps nothing, and
// CUDA_CACHE_MAXSIZE bounds the folder, as they do for the driver's cache.
#pragma once

namespace scuda::client {

// The table's words, at one address for the life of the process.
const void* compile_cache_table();

}  // namespace scuda::client
