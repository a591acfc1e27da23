#include "client/export_tables.h"

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

#include "client/context.h"
#include "client/context_storage.h"
#include "client/export_table_spy.h"
#include "client/integrity_check.h"
#include "client/module_functions.h"
#include "client/runtime.h"

namespace scuda::client {
namespace {

template <size_t N>
using Table = std::array<const void*, N>;

template <class F>
const void* fn(F* f) {
  return reinterpret_cast<const void*>(f);
}

const void* size_word(size_t words) {
  return reinterpret_cast<const void*>(words * sizeof(void*));
}

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

CUresult CUDAAPI cudart_module_from_wrapper_ext(CUmodule* module, const void* wrapper,
                                                void* p3, void* p4, uint32_t p5) {
  if (!plain_load(p3, p4, p5)) return CUDA_ERROR_NOT_SUPPORTED;
  return load_from_wrapper(module, wrapper);
}

// Called as cudart destroys a module (Cricket); nothing to do.
void CUDAAPI cudart_module_unloading(uintptr_t) {}

CUresult CUDAAPI cudart_module_from_fatbin(const void* fatbin_header, CUmodule* module,
                                           void* p3, void* p4, uint32_t p5) {
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
      size_word(kToolsRuntimeCallbackHooksWords), fn(&returns_zero), fn(&hooks_buffer1),
      fn(&returns_zero), fn(&returns_zero), fn(&returns_zero), fn(&hooks_buffer2)};
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
  spdlog::debug("CONTEXT_CHECKS slot 1 called for context {}: not supported", static_cast<void*>(ctx));
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
    if (rc == CUDA_SUCCESS) rc = cuDeviceGetAttribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev);
    if (rc == CUDA_SUCCESS) rc = cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev);
    if (rc == CUDA_SUCCESS) rc = cuDeviceGetAttribute(&device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev);
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

// A slot nobody has described: each is its own function, so the log names
// the table (by its id's first word) and the slot a caller reached.
template <uint32_t TableId, size_t Slot>
CUresult CUDAAPI unknown_slot() {
  if (exiting()) return CUDA_ERROR_DEINITIALIZED;
  static std::atomic<bool> logged{false};
  if (!logged.exchange(true)) {
    spdlog::warn("export table {:08x} slot {} called: not supported", TableId, Slot);
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

template <uint32_t TableId, size_t N, size_t... Slot>
Table<N> unknown_slots(std::index_sequence<Slot...>) {
  Table<N> w = {fn(&unknown_slot<TableId, Slot>)...};
  w[0] = size_word(N);
  return w;
}

const Table<kCublasPrivateWords>& cublas_private_table() {
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

const Table<kTable1734dc26Words>& table_1734dc26() {
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

const Table<kTable6e163fbeWords>& table_6e163fbe() {
  static const Table<kTable6e163fbeWords> t = [] {
    auto w = unknown_slots<0x6e163fbe, kTable6e163fbeWords>(
        std::make_index_sequence<kTable6e163fbeWords>());
    w[7] = fn(&table_6e163fbe_slot7);
    return w;
  }();
  return t;
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
  static std::mutex mutex;
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
  if (same_id(id, ids::kCublasPrivate)) return cublas_private_table().data();
  if (same_id(id, ids::kTable1734dc26)) return table_1734dc26().data();
  if (same_id(id, ids::kTable6e163fbe)) return table_6e163fbe().data();
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
    spdlog::trace("cuGetExportTable({}) = {}, first word {:#x}", scuda::client::uuid_text(*pExportTableId),
                  static_cast<int>(rc), words ? words[0] : 0);
  }
  return rc;
}
