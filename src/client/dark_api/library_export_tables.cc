#include "client/dark_api/library_export_tables.h"

#include <cstdint>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/dark_api/export_table_slots.h"
#include "client/dark_api/export_tables.h"
#include "client/modules/module_functions.h"
#include "client/runtime.h"

namespace scuda::client {
namespace {

using export_slots::fn;
using export_slots::Table;
using export_slots::unknown_slots;

// ---- 21318c60, asked for by cuBLAS -----------------------------------------
// Size word + 95 slots (SveSop's relay at SDK 13.3). Slots 4, 39 and 51 answer
// as LUPINE's do (present since its #116); every other slot is its own
// function, so the log names the slot cuBLAS reached.

CUresult CUDAAPI cublas_slot4(uint64_t a0, uint64_t* out) {
  if (exiting()) return CUDA_ERROR_DEINITIALIZED;
  spdlog::trace("export table 21318c60 slot 4 ({:#x})", a0);
  if (out == nullptr) return CUDA_ERROR_UNKNOWN;
  *out = a0 != 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cublas_slot39(uint64_t a0, uint64_t a1, uint64_t* out) {
  if (exiting()) return CUDA_ERROR_DEINITIALIZED;
  spdlog::trace("export table 21318c60 slot 39 ({:#x}, {:#x})", a0, a1);
  if (a1 == 0 || out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *out = 0;
  return CUDA_SUCCESS;
}

alignas(16) uint8_t cublas_slot51_object[512];

CUresult CUDAAPI cublas_slot51(uint64_t a0, uint64_t a1, void** out) {
  if (exiting()) return CUDA_ERROR_DEINITIALIZED;
  spdlog::trace("export table 21318c60 slot 51 ({:#x}, {:#x})", a0, a1);
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (a1 == ~uint64_t{0}) return CUDA_ERROR_INVALID_HANDLE;
  *out = cublas_slot51_object;
  return CUDA_SUCCESS;
}

const Table<kCublasPrivateWords>& cublas_words() {
  static const Table<kCublasPrivateWords> t = [] {
    auto w = unknown_slots<0x21318c60, kCublasPrivateWords>(
        std::make_index_sequence<kCublasPrivateWords>());
    w[4] = fn(&cublas_slot4);
    w[39] = fn(&cublas_slot39);
    w[51] = fn(&cublas_slot51);
    return w;
  }();
  return t;
}

// ---- 1734dc26, asked for by cuBLASLt's half-precision GEMMs -------------------
// NVIDIA's 580 driver serves size + 16 slots; cuBLASLt calls slot 4 (two
// outputs, the table itself, 7) and slot 13 on what slot 4 gave. Nothing
// describes them, and answering CUDA_ERROR_NOT_FOUND for the table makes
// cuBLASLt crash, so every slot says "not supported" and the caller sees an
// error it checks (docs/export-tables.md, "cuBLASLt table").

const Table<kTable1734dc26Words>& cublaslt_words() {
  static const Table<kTable1734dc26Words> t = unknown_slots<0x1734dc26, kTable1734dc26Words>(
      std::make_index_sequence<kTable1734dc26Words>());
  return t;
}

// ---- 6e163fbe, asked for by cuFFT ---------------------------------------------
// NVIDIA's 580 driver serves size + 98 slots. cuFFT asks for the table as it
// creates a plan, and fails with CUFFT_INTERNAL_ERROR when it is missing.
// Slot 7 is how it finds its kernels after loading a module: (context,
// module, visitor, opaque) calls visitor(opaque, function, name, 0, 0,
// module) for each of the module's functions, and cuFFT launches the
// functions it was given; the driver answers 1 for a module of one
// function (as SCUDA_SPY_EXPORT_TABLES=1 shows), which this slot takes for
// the number visited. Every other slot says "not supported".

using FunctionVisitor = uint64_t (*)(void* opaque, CUfunction fn, const char* name, uint64_t,
                                     uint64_t, CUmodule mod);

uint64_t CUDAAPI table_6e163fbe_slot7(CUcontext ctx, CUmodule mod, FunctionVisitor visit,
                                      void* opaque) {
  if (exiting()) return CUDA_ERROR_DEINITIALIZED;
  spdlog::trace("export table 6e163fbe slot 7 ({}, {})", static_cast<void*>(ctx),
                static_cast<void*>(mod));
  std::vector<CUfunction> functions;
  if (!visit || module_functions(mod, &functions) != CUDA_SUCCESS) return 0;
  for (CUfunction fn : functions) {
    const char* name = nullptr;
    cuFuncGetName(&name, fn);
    visit(opaque, fn, name, 0, 0, mod);
  }
  return functions.size();
}

const Table<kTable6e163fbeWords>& cufft_words() {
  static const Table<kTable6e163fbeWords> t = [] {
    auto w = unknown_slots<0x6e163fbe, kTable6e163fbeWords>(
        std::make_index_sequence<kTable6e163fbeWords>());
    w[7] = fn(&table_6e163fbe_slot7);
    return w;
  }();
  return t;
}

}  // namespace

const void* cublas_private_table() { return cublas_words().data(); }
const void* cublaslt_table_1734dc26() { return cublaslt_words().data(); }
const void* cufft_table_6e163fbe() { return cufft_words().data(); }

}  // namespace scuda::client
