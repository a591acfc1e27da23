#include "client/dark_api/export_tables.h"

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "client/contexts/context.h"
#include "client/dark_api/compile_cache.h"
#include "client/dark_api/context_storage.h"
#include "client/dark_api/export_table_slots.h"
#include "client/dark_api/export_table_spy.h"
#include "client/dark_api/integrity_check.h"
#include "client/dark_api/library_export_tables.h"
#include "client/runtime.h"
#include "common/lock_order.h"

namespace scuda::client {
namespace {

using export_slots::fn;
using export_slots::size_word;
using export_slots::Table;

// For slots whose callers ignore the result (TOOLS_TLS, the hook table) or
// read 0 (CONTEXT_CHECKS slot 3). Pointer-wide so the whole register is 0
// whatever the caller expects; extra arguments are harmless in the C ABI.
uintptr_t CUDAAPI returns_zero() { return 0; }

// ---- CUDART_INTERFACE (6bd5fb6c) ----------------------------------------

// cudart's __fatBinC_Wrapper_t (as ZLUDA declares it).
struct FatbincWrapper {
  uint32_t magic;
  uint32_t version;  // 1: a file name follows; 2: an array of pre-link fatbins
  const void* fatbin;
  const void* filename_or_fatbins;
};
constexpr uint32_t kFatbincMagic = 0x466243B1;

// Loads only the fatbin the wrapper points to; v2's pre-link fatbins are not
// sent (as in LUPINE).
CUresult load_from_wrapper(CUmodule* module, const void* wrapper) {
  if (module == nullptr || wrapper == nullptr) return CUDA_ERROR_INVALID_VALUE;
  FatbincWrapper w;
  std::memcpy(&w, wrapper, sizeof w);
  if (w.magic != kFatbincMagic || w.fatbin == nullptr) return CUDA_ERROR_INVALID_IMAGE;
  return cuModuleLoadData(module, w.fatbin);
}

bool plain_load(const void* p3, const void* p4, uint32_t p5) {
  return p3 == nullptr && p4 == nullptr && p5 == 0;
}

CUresult CUDAAPI cudart_module_from_wrapper(CUmodule* module, const void* wrapper) {
  return load_from_wrapper(module, wrapper);
}

// Unlike cuDevicePrimaryCtxRetain, leaves the context's state alone (ZLUDA
// test cudart_interface_fn2_creates_inactive_primary_ctx, run on NVIDIA's driver).
CUresult CUDAAPI cudart_primary_context(CUcontext* pctx, CUdevice dev) {
  if (exiting()) return CUDA_ERROR_DEINITIALIZED;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx = primary_context(dev);
  if (ctx == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  *pctx = ctx;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cudart_module_from_wrapper_ext(CUmodule* module, const void* wrapper, void* p3,
                                                void* p4, uint32_t p5) {
  if (!plain_load(p3, p4, p5)) return CUDA_ERROR_NOT_SUPPORTED;
  return load_from_wrapper(module, wrapper);
}

// Called as cudart destroys a module (Cricket); nothing to do.
void CUDAAPI cudart_module_unloading(uintptr_t) {}

CUresult CUDAAPI cudart_module_from_fatbin(const void* fatbin_header, CUmodule* module, void* p3,
                                           void* p4, uint32_t p5) {
  if (!plain_load(p3, p4, p5)) return CUDA_ERROR_NOT_SUPPORTED;
  if (module == nullptr || fatbin_header == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return cuModuleLoadData(module, fatbin_header);
}

// Loads the PTX compiler, libnvvm and tileir in NVIDIA's driver (ZLUDA); the
// server's driver does that on its side.
CUresult CUDAAPI cudart_load_compilers() { return CUDA_SUCCESS; }

const Table<kCudartInterfaceWords>& cudart_interface_table() {
  static const Table<kCudartInterfaceWords> t = [] {
    Table<kCudartInterfaceWords> w{};
    w[0] = size_word(w.size());
    w[1] = fn(&cudart_module_from_wrapper);
    w[2] = fn(&cudart_primary_context);
    w[6] = fn(&cudart_module_from_wrapper_ext);
    w[7] = fn(&cudart_module_unloading);
    w[8] = fn(&cudart_module_from_fatbin);
    w[12] = fn(&cudart_load_compilers);
    return w;
  }();
  return t;
}

// ---- TOOLS_TLS (42d85a81), TOOLS_RUNTIME_CALLBACK_HOOKS (a094798c) ------

// LUPINE's zero-returning slots rather than ZLUDA's NULLs: cudart runs with
// either, and a function cannot crash a caller that skips the NULL check.
const Table<kToolsTlsWords>& tools_tls_table() {
  static const Table<kToolsTlsWords> t = {size_word(kToolsTlsWords), fn(&returns_zero),
                                          fn(&returns_zero), fn(&returns_zero)};
  return t;
}

// The unit of the reported size is unknown; ZLUDA (#386) reports element
// counts over 32-bit arrays, the largest buffers any source hands out.
uint32_t hook_buffer1[1024];
uint32_t hook_buffer2[14];

template <size_t N>
void hand_out(uint32_t (&buffer)[N], void** ptr, size_t* size) {
  if (ptr != nullptr) *ptr = buffer;
  if (size != nullptr) *size = N;
}

void CUDAAPI hooks_buffer1(void** ptr, size_t* size) { hand_out(hook_buffer1, ptr, size); }
void CUDAAPI hooks_buffer2(void** ptr, size_t* size) { hand_out(hook_buffer2, ptr, size); }

const Table<kToolsRuntimeCallbackHooksWords>& callback_hooks_table() {
  static const Table<kToolsRuntimeCallbackHooksWords> t = {
      size_word(kToolsRuntimeCallbackHooksWords),
      fn(&returns_zero),
      fn(&hooks_buffer1),
      fn(&returns_zero),
      fn(&returns_zero),
      fn(&returns_zero),
      fn(&hooks_buffer2)};
  return t;
}

// ---- CONTEXT_LOCAL_STORAGE (c693336e): no size word ---------------------

const Table<kContextLocalStorageWords>& context_storage_table() {
  static const Table<kContextLocalStorageWords> t = {
      fn(&context_storage_put), fn(&context_storage_delete), fn(&context_storage_get), nullptr};
  return t;
}

// ---- CONTEXT_CHECKS (263e8860) --------------------------------------------
// LUPINE's 17-word layout from its PR #197 "Fix cuBLAS initialization" (the
// 13.x driver's table has 14-16 functions, SveSop). Every context here is a
// plain one, never "wrapped" (ZLUDA v3).

CUresult CUDAAPI context_check1(CUcontext ctx, uint32_t*, void**) {
  if (exiting()) return CUDA_ERROR_DEINITIALIZED;
  spdlog::debug("CONTEXT_CHECKS slot 1 called for context {}: not supported",
                static_cast<void*>(ctx));
  return CUDA_ERROR_NOT_SUPPORTED;
}

// out2 is left untouched, as ZLUDA v3 and LUPINE do for unwrapped contexts.
CUresult CUDAAPI context_check2(CUcontext ctx, uint32_t* wrapped, void**) {
  if (exiting()) return CUDA_ERROR_DEINITIALIZED;
  spdlog::trace("CONTEXT_CHECKS slot 2 called for context {}", static_cast<void*>(ctx));
  if (wrapped == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *wrapped = 0;
  return CUDA_SUCCESS;
}

const Table<kContextChecksWords>& context_checks_table() {
  static const Table<kContextChecksWords> t = [] {
    Table<kContextChecksWords> w{};
    w[0] = size_word(w.size());
    w[1] = fn(&context_check1);
    w[2] = fn(&context_check2);
    w[3] = fn(&returns_zero);
    return w;
  }();
  return t;
}

// ---- INTEGRITY_CHECK (d4082055) -------------------------------------------

CUresult CUDAAPI integrity_check_slot(uint32_t version, uint64_t unix_seconds, uint8_t* out);

const Table<kIntegrityCheckWords>& integrity_check_table() {
  static const Table<kIntegrityCheckWords> t = {size_word(kIntegrityCheckWords),
                                                fn(&integrity_check_slot), nullptr};
  return t;
}

// Devices as this stand-in reports them, because cudart hashes the same
// queries on its side. CUdevice is the ordinal, as in NVIDIA's driver.
CUresult integrity_devices(std::vector<IntegrityDevice>* devices) {
  int count = 0;
  if (CUresult rc = cuDeviceGetCount(&count); rc != CUDA_SUCCESS) return rc;
  for (CUdevice dev = 0; dev < count; ++dev) {
    IntegrityDevice d{};
    int domain = 0, bus = 0, device = 0;
    CUresult rc = cuDeviceGetUuid_v2(&d.uuid, dev);
    if (rc == CUDA_SUCCESS)
      rc = cuDeviceGetAttribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev);
    if (rc == CUDA_SUCCESS) rc = cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev);
    if (rc == CUDA_SUCCESS)
      rc = cuDeviceGetAttribute(&device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev);
    if (rc != CUDA_SUCCESS) return rc;
    d.pci_domain = domain;
    d.pci_bus = bus;
    d.pci_device = device;
    devices->push_back(d);
  }
  return CUDA_SUCCESS;
}

// The hashed addresses and ids must be this process's own: the answer cannot
// be forwarded to the server (docs/export-tables.md, "Integrity check").
CUresult CUDAAPI integrity_check_slot(uint32_t version, uint64_t unix_seconds, uint8_t* out) {
  if (exiting()) return CUDA_ERROR_DEINITIALIZED;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  spdlog::debug("INTEGRITY_CHECK asked by cudart {} ({})", version,
                integrity_check_hashes_inputs(version) ? "hashed" : "fixed answer");
  IntegrityInputs in{};
  in.version = version;
  in.unix_seconds = unix_seconds;
  if (integrity_check_hashes_inputs(version)) {
    int driver_version = 0;
    if (CUresult rc = cuDriverGetVersion(&driver_version); rc != CUDA_SUCCESS) return rc;
    if (CUresult rc = integrity_devices(&in.devices); rc != CUDA_SUCCESS) return rc;
    in.driver_version = static_cast<uint32_t>(driver_version);
    in.pid = static_cast<uint32_t>(getpid());
    in.tid = static_cast<uint32_t>(pthread_self());  // as ZLUDA and LUPINE
    in.cudart_table = cudart_interface_table().data();
    in.integrity_table = integrity_check_table().data();
    in.check_fn = integrity_check_table()[1];
  }
  const Digest16 digest = integrity_check_hash(in);
  std::memcpy(out, digest.data(), digest.size());
  return CUDA_SUCCESS;
}

// ---- lookup ------------------------------------------------------------------

bool same_id(const CUuuid& a, const CUuuid& b) {
  return std::memcmp(a.bytes, b.bytes, sizeof a.bytes) == 0;
}

}  // namespace

std::string uuid_text(const CUuuid& id) {
  std::string s;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += fmt::format("{:02x}", static_cast<unsigned char>(id.bytes[i]));
  }
  return s;
}

namespace {

void warn_once_not_served(const CUuuid& id) {
  static RankedMutex mutex{LockRank::kLeaf, "warn_once_not_served"};
  static auto* seen = new std::set<std::string>;  // never destroyed: may log during exit
  const std::string text = uuid_text(id);
  std::lock_guard lock(mutex);
  if (seen->insert(text).second) {
    spdlog::debug("cuGetExportTable: no table for {}; answering CUDA_ERROR_NOT_FOUND", text);
  }
}

}  // namespace

const void* export_table_for(const CUuuid& id) {
  namespace ids = export_table_id;
  if (same_id(id, ids::kCudartInterface)) return cudart_interface_table().data();
  if (same_id(id, ids::kToolsTls)) return tools_tls_table().data();
  if (same_id(id, ids::kToolsRuntimeCallbackHooks)) return callback_hooks_table().data();
  if (same_id(id, ids::kContextLocalStorage)) return context_storage_table().data();
  if (same_id(id, ids::kContextChecks)) return context_checks_table().data();
  if (same_id(id, ids::kIntegrityCheck)) return integrity_check_table().data();
  if (same_id(id, ids::kCublasPrivate)) return cublas_private_table();
  if (same_id(id, ids::kTable1734dc26)) return cublaslt_table_1734dc26();
  if (same_id(id, ids::kTable6e163fbe)) return cufft_table_6e163fbe();
  if (same_id(id, ids::kCompileCache)) return compile_cache_table();
  return nullptr;
}

// Not served: f8cff951, 69a28e9f and every other id. No source records what
// NVIDIA's Linux driver answers for an id it lacks (ZLUDA and LUPINE say
// INVALID_VALUE). NOT_FOUND tells a probing caller "this driver has no such
// table", which is true here, and keeps it off the path that would call into
// a table of failing stubs (docs/export-tables.md, "Ids not served").
CUresult get_local_export_table(const void** table, const CUuuid* id) {
  if (table == nullptr || id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *table = export_table_for(*id);
  if (*table != nullptr) return CUDA_SUCCESS;
  warn_once_not_served(*id);
  return CUDA_ERROR_NOT_FOUND;
}

}  // namespace scuda::client

extern "C" CUresult CUDAAPI cuGetExportTable(const void** ppExportTable,
                                             const CUuuid* pExportTableId) {
  if (scuda::client::exiting()) return CUDA_ERROR_DEINITIALIZED;
  if (ppExportTable == nullptr || pExportTableId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc;
  if (scuda::client::passthrough()) {
    auto real = scuda::client::local_driver().cuGetExportTable;
    rc = real ? real(ppExportTable, pExportTableId) : CUDA_ERROR_NOT_SUPPORTED;
    if (rc == CUDA_SUCCESS && scuda::client::spying_on_export_tables()) {
      *ppExportTable = scuda::client::spy_export_table(*pExportTableId, *ppExportTable);
    }
  } else {
    rc = scuda::client::get_local_export_table(ppExportTable, pExportTableId);
  }
  if (spdlog::should_log(spdlog::level::trace)) {
    const auto* words = static_cast<const uint64_t*>(rc == CUDA_SUCCESS ? *ppExportTable : nullptr);
    spdlog::trace("cuGetExportTable({}) = {}, first word {:#x}",
                  scuda::client::uuid_text(*pExportTableId), static_cast<int>(rc),
                  words ? words[0] : 0);
  }
  return rc;
}
