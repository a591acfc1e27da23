// The UUIDs of the driver's undocumented function tables (cuGetExportTable)
// that scuda serves or calls: the client serves them to cudart and the
// libraries (client/dark_api/export_tables.h), and the session calls the driver's
// cudart table where a documented call would do more than asked
// (server/session/context_ops.cc).
#pragma once

#include <cuda.h>

namespace scuda {

// Parses "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" into bytes in written order
// (no GUID-style swapping: ZLUDA and LUPINE agree on this).
constexpr CUuuid uuid_from_string(const char (&s)[37]) {
  auto nibble = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  CUuuid id{};
  int i = 0;
  for (int n = 0; n < 36; ++n) {
    if (s[n] == '-') continue;
    id.bytes[i / 2] = static_cast<char>(id.bytes[i / 2] | nibble(s[n]) << (i % 2 ? 0 : 4));
    ++i;
  }
  return id;
}

namespace export_table_id {
// Names from ZLUDA where it has one.
inline constexpr CUuuid kCudartInterface = uuid_from_string("6bd5fb6c-5bf4-e74a-8987-d93912fd9df9");
inline constexpr CUuuid kToolsTls = uuid_from_string("42d85a81-23f6-cb47-8298-f6e78a3aecdc");
inline constexpr CUuuid kToolsRuntimeCallbackHooks =
    uuid_from_string("a094798c-2e74-2e74-93f2-0800200c0a66");
inline constexpr CUuuid kContextLocalStorage =
    uuid_from_string("c693336e-1121-df11-a8c3-68f355d89593");
inline constexpr CUuuid kContextChecks = uuid_from_string("263e8860-7cd2-6143-92f6-bbd5006dfa7e");
inline constexpr CUuuid kIntegrityCheck = uuid_from_string("d4082055-bde6-704b-8d34-ba123c66e1f2");
inline constexpr CUuuid kCublasPrivate = uuid_from_string("21318c60-9714-3248-8ca6-41ff7324c8f2");
inline constexpr CUuuid kTable1734dc26 = uuid_from_string("1734dc26-800d-4745-8726-c0f1e7dd8bca");
inline constexpr CUuuid kTable6e163fbe = uuid_from_string("6e163fbe-b958-444d-835c-e182aff1991e");
// Asked for by NVRTC: the driver's cache of compiled programs.
inline constexpr CUuuid kCompileCache = uuid_from_string("da9151d3-3ae6-cc41-a5c0-4f26d533e328");
// Requested by cudart 13 / nvidia-smi; not served (CUDA_ERROR_NOT_FOUND).
inline constexpr CUuuid kProbeF8cff951 = uuid_from_string("f8cff951-2146-8b4e-b9e2-fb469e7c0dd9");
inline constexpr CUuuid kUnknown69a28e9f = uuid_from_string("69a28e9f-2449-8b47-b030-c5da330ea4e9");
}  // namespace export_table_id

}  // namespace scuda
