// cuGetExportTable: the driver's undocumented function tables, keyed by
// UUID, that cudart, cuBLAS and others ask for. Outside pass-through mode the
// client serves its own static tables; docs/export-tables.md describes
// every table, its layout and the reason for each slot's answer.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>

#include "common/export_table_ids.h"

namespace scuda::client {

using scuda::uuid_from_string;
namespace export_table_id = scuda::export_table_id;

// Words in each served table, size word (where there is one) included.
inline constexpr size_t kCudartInterfaceWords = 13;
inline constexpr size_t kToolsTlsWords = 4;
inline constexpr size_t kToolsRuntimeCallbackHooksWords = 7;
inline constexpr size_t kContextLocalStorageWords = 4;  // 3 slots + NULL, no size word
inline constexpr size_t kContextChecksWords = 17;
inline constexpr size_t kIntegrityCheckWords = 3;
inline constexpr size_t kCublasPrivateWords = 96;
inline constexpr size_t kTable1734dc26Words = 17;
inline constexpr size_t kTable6e163fbeWords = 99;
inline constexpr size_t kCompileCacheWords = 7;

// "xxxxxxxx-xxxx-…", bytes in written order (docs/export-tables.md, "UUIDs").
std::string uuid_text(const CUuuid& id);

// The table this client serves for `id`, at one address for the life of the
// process; nullptr for any other id.
const void* export_table_for(const CUuuid& id);

// cuGetExportTable outside pass-through mode: the table from
// export_table_for, or CUDA_ERROR_NOT_FOUND (logged once per id) with
// *table set to NULL; CUDA_ERROR_INVALID_VALUE for NULL arguments.
CUresult get_local_export_table(const void** table, const CUuuid* id);

}  // namespace scuda::client
