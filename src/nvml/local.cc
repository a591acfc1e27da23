// The NVML entry points nvml.h's generated stubs do not cover: answered on
// the client (or, in pass-through mode, by the local NVML).
#include <nvml.h>

#include <cstring>

#include "nvml/runtime.h"

namespace {

// nvmlInternalGetExportTable's one known id, the table nvidia-smi asks for.
constexpr unsigned char kSmiTableId[16] = {0xc4, 0xfe, 0x3e, 0x6c, 0xc9, 0x8f, 0x6c, 0x4e,
                                           0xa3, 0x27, 0xee, 0x69, 0x6e, 0x12, 0xf7, 0xc4};
// All NULL: scuda serves none of the private entry points it holds.
constexpr const void* kEmptyTable[512] = {};

}  // namespace

extern "C" {

// Lets a search for NVIDIA's NVML tell this stand-in from it.
__attribute__((visibility("default"))) extern const char scuda_stand_in_marker[] = "scuda";

const char* DECLDIR nvmlErrorString(nvmlReturn_t result) {
  auto real = scuda::nvml::passthrough() ? scuda::nvml::local_nvml().nvmlErrorString : nullptr;
  if (real) return real(result);
  switch (result) {
#define SCUDA_NVML_ERROR(code, text) \
  case code:                         \
    return text;
#include "nvml_errors.inc"
#undef SCUDA_NVML_ERROR
  }
  return "Unknown Error";
}

// LUPINE's answer (docs/export-tables.md, "NVML's export table"): an empty table
// for the id nvidia-smi asks for, which nvidia-smi 535 is known to run with,
// rather than NVML_ERROR_NOT_SUPPORTED, whose effect on nvidia-smi no source
// records. Other ids get NVML_ERROR_INVALID_ARGUMENT, as in LUPINE.
nvmlReturn_t DECLDIR nvmlInternalGetExportTable(const void** table, const void* id) {
  SCUDA_NVML_PASSTHROUGH(nvmlInternalGetExportTable, table, id);
  if (!table) return NVML_ERROR_INVALID_ARGUMENT;
  const bool known = id && std::memcmp(id, kSmiTableId, sizeof kSmiTableId) == 0;
  *table = known ? kEmptyTable : nullptr;
  return known ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

}  // extern "C"
