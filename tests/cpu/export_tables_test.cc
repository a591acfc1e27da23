#include "client/dark_api/export_tables.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/dark_api/context_storage.h"
#include "client/dark_api/export_table_spy.h"

namespace scuda::client {
namespace {

namespace ids = export_table_id;

const void* const* words_of(const CUuuid& id) {
  return static_cast<const void* const*>(export_table_for(id));
}

uintptr_t word(const CUuuid& id, size_t i) { return reinterpret_cast<uintptr_t>(words_of(id)[i]); }

template <class F>
F* slot(const CUuuid& id, size_t i) {
  return reinterpret_cast<F*>(const_cast<void*>(words_of(id)[i]));
}

// Captures spdlog's default logger for the life of the object.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    sink_ = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256);
    auto logger = std::make_shared<spdlog::logger>("capture", sink_);
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  size_t count_containing(const std::string& text) const {
    size_t n = 0;
    for (const auto& line : sink_->last_formatted()) n += line.find(text) != std::string::npos;
    return n;
  }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

// ---- lookup -------------------------------------------------------------------

TEST(ExportTables, UuidsAreParsedInMemoryOrder) {
  const unsigned char expected[16] = {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
                                      0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9};
  EXPECT_EQ(std::memcmp(ids::kCudartInterface.bytes, expected, 16), 0);
}

TEST(ExportTables, ServedTablesHaveStableDistinctAddresses) {
  const CUuuid served[] = {
      ids::kCudartInterface,     ids::kToolsTls,      ids::kToolsRuntimeCallbackHooks,
      ids::kContextLocalStorage, ids::kContextChecks, ids::kIntegrityCheck,
      ids::kCublasPrivate,       ids::kTable1734dc26, ids::kTable6e163fbe,
      ids::kCompileCache};
  std::vector<const void*> seen;
  for (const CUuuid& id : served) {
    const void* first = nullptr;
    const void* second = nullptr;
    ASSERT_EQ(get_local_export_table(&first, &id), CUDA_SUCCESS);
    ASSERT_EQ(get_local_export_table(&second, &id), CUDA_SUCCESS);
    EXPECT_NE(first, nullptr);
    EXPECT_EQ(first, second);
    EXPECT_EQ(first, export_table_for(id));
    for (const void* other : seen) EXPECT_NE(first, other);
    seen.push_back(first);
  }
}

TEST(ExportTables, SizeWordsCountEveryWord) {
  EXPECT_EQ(word(ids::kCudartInterface, 0), 13u * 8);
  EXPECT_EQ(word(ids::kToolsTls, 0), 4u * 8);
  EXPECT_EQ(word(ids::kToolsRuntimeCallbackHooks, 0), 7u * 8);
  EXPECT_EQ(word(ids::kContextChecks, 0), 17u * 8);
  EXPECT_EQ(word(ids::kIntegrityCheck, 0), 3u * 8);
  EXPECT_EQ(word(ids::kCublasPrivate, 0), 96u * 8);
}

TEST(ExportTables, ContextLocalStorageTableHasNoSizeWord) {
  EXPECT_EQ(words_of(ids::kContextLocalStorage)[0],
            reinterpret_cast<const void*>(&context_storage_put));
  EXPECT_EQ(words_of(ids::kContextLocalStorage)[1],
            reinterpret_cast<const void*>(&context_storage_delete));
  EXPECT_EQ(words_of(ids::kContextLocalStorage)[2],
            reinterpret_cast<const void*>(&context_storage_get));
  EXPECT_EQ(words_of(ids::kContextLocalStorage)[3], nullptr);
}

// Logging is once per process, so only a test's first run (of several under
// --gtest_repeat) sees the message.
size_t first_run_only(int& runs) { return runs++ == 0 ? 1 : 0; }

TEST(ExportTables, UnservedIdsAreNotFoundAndLoggedOnce) {
  static int runs = 0;
  const size_t expected_logs = first_run_only(runs);
  LogCapture log;
  const CUuuid made_up = uuid_from_string("01234567-89ab-cdef-0123-456789abcdef");
  for (const CUuuid& id : {ids::kProbeF8cff951, ids::kUnknown69a28e9f, made_up}) {
    for (int i = 0; i < 3; ++i) {
      const void* table = &table;
      EXPECT_EQ(get_local_export_table(&table, &id), CUDA_ERROR_NOT_FOUND);
      EXPECT_EQ(table, nullptr);
    }
  }
  EXPECT_EQ(log.count_containing("01234567-89ab-cdef-0123-456789abcdef"), expected_logs);
  EXPECT_EQ(log.count_containing("f8cff951-2146-8b4e-b9e2-fb469e7c0dd9"), expected_logs);
  EXPECT_EQ(log.count_containing("69a28e9f-2449-8b47-b030-c5da330ea4e9"), expected_logs);
}

TEST(ExportTables, NullArgumentsAreInvalidValue) {
  const void* table = nullptr;
  EXPECT_EQ(get_local_export_table(nullptr, &ids::kToolsTls), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(get_local_export_table(&table, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGetExportTable(nullptr, &ids::kToolsTls), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGetExportTable(&table, nullptr), CUDA_ERROR_INVALID_VALUE);
}

// ---- CUDART_INTERFACE -------------------------------------------------------------

TEST(CudartInterface, ServesSlots1_2_6_7_8_12Only) {
  for (size_t i : {1, 2, 6, 7, 8, 12}) EXPECT_NE(word(ids::kCudartInterface, i), 0u) << i;
  for (size_t i : {3, 4, 5, 9, 10, 11}) EXPECT_EQ(word(ids::kCudartInterface, i), 0u) << i;
}

TEST(CudartInterface, ModuleSlotsRejectExtraArguments) {
  using Ext = CUresult(CUmodule*, const void*, void*, void*, uint32_t);
  using Header = CUresult(const void*, CUmodule*, void*, void*, uint32_t);
  auto* slot6 = slot<Ext>(ids::kCudartInterface, 6);
  auto* slot8 = slot<Header>(ids::kCudartInterface, 8);
  CUmodule module = nullptr;
  int dummy = 0;
  EXPECT_EQ(slot6(&module, &dummy, &dummy, nullptr, 0), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(slot6(&module, &dummy, nullptr, &dummy, 0), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(slot6(&module, &dummy, nullptr, nullptr, 1), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(slot8(&dummy, &module, &dummy, nullptr, 0), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(slot8(&dummy, &module, nullptr, nullptr, 2), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(slot8(nullptr, &module, nullptr, nullptr, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST(CudartInterface, WrapperWithoutMagicIsInvalidImage) {
  using Load = CUresult(CUmodule*, const void*);
  struct {
    uint32_t magic, version;
    const void* fatbin;
    const void* rest;
  } wrapper = {0x12345678, 1, &wrapper, nullptr};
  CUmodule module = nullptr;
  EXPECT_EQ(slot<Load>(ids::kCudartInterface, 1)(&module, &wrapper), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_EQ(slot<Load>(ids::kCudartInterface, 1)(nullptr, &wrapper), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(slot<Load>(ids::kCudartInterface, 1)(&module, nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST(CudartInterface, Slot7IsANoOpAndSlot12Succeeds) {
  slot<void(uintptr_t)>(ids::kCudartInterface, 7)(0x1234);
  EXPECT_EQ(slot<CUresult()>(ids::kCudartInterface, 12)(), CUDA_SUCCESS);
  EXPECT_EQ(slot<CUresult(CUcontext*, CUdevice)>(ids::kCudartInterface, 2)(nullptr, 0),
            CUDA_ERROR_INVALID_VALUE);
}

// ---- the other small tables -------------------------------------------------------

TEST(ToolsRuntimeCallbackHooks, Slots2And6HandOutStaticBuffers) {
  using Buffer = void(void**, size_t*);
  void* first = nullptr;
  void* again = nullptr;
  size_t size = 0;
  slot<Buffer>(ids::kToolsRuntimeCallbackHooks, 2)(&first, &size);
  EXPECT_NE(first, nullptr);
  EXPECT_EQ(size, 1024u);
  slot<Buffer>(ids::kToolsRuntimeCallbackHooks, 2)(&again, &size);
  EXPECT_EQ(first, again);
  slot<Buffer>(ids::kToolsRuntimeCallbackHooks, 6)(&again, &size);
  EXPECT_NE(first, again);
  EXPECT_EQ(size, 14u);
}

TEST(ContextChecks, ContextsAreNeverWrapped) {
  using Check = CUresult(CUcontext, uint32_t*, void**);
  uint32_t wrapped = 7;
  void* inner = &wrapped;
  CUcontext ctx = reinterpret_cast<CUcontext>(uintptr_t{0x1000});
  EXPECT_EQ(slot<Check>(ids::kContextChecks, 2)(ctx, &wrapped, &inner), CUDA_SUCCESS);
  EXPECT_EQ(wrapped, 0u);
  EXPECT_EQ(inner, &wrapped);  // left untouched
  EXPECT_EQ(slot<Check>(ids::kContextChecks, 1)(ctx, &wrapped, &inner), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(slot<uintptr_t()>(ids::kContextChecks, 3)(), 0u);
  for (size_t i = 4; i < kContextChecksWords; ++i) EXPECT_EQ(word(ids::kContextChecks, i), 0u);
}

TEST(IntegrityCheckTable, FixedVersionsNeedNoDriver) {
  using Check = CUresult(uint32_t, uint64_t, uint8_t*);
  auto* check = slot<Check>(ids::kIntegrityCheck, 1);
  uint8_t out[16] = {};
  ASSERT_EQ(check(13000, 1700000000, out), CUDA_SUCCESS);
  EXPECT_EQ(out[0], 0x5c);
  EXPECT_EQ(out[7], 0x33);
  ASSERT_EQ(check(12091, 1700000000, out), CUDA_SUCCESS);
  EXPECT_EQ(out[7], 0x18);
  EXPECT_EQ(check(13000, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(word(ids::kIntegrityCheck, 2), 0u);
}

// ---- 21318c60 (cuBLAS) ---------------------------------------------------------------

TEST(CublasPrivateTable, Slot4ReportsWhetherArgumentIsNonZero) {
  using Fn = CUresult(uint64_t, uint64_t*);
  auto* fn = slot<Fn>(ids::kCublasPrivate, 4);
  uint64_t out = 9;
  EXPECT_EQ(fn(5, &out), CUDA_SUCCESS);
  EXPECT_EQ(out, 1u);
  EXPECT_EQ(fn(0, &out), CUDA_SUCCESS);
  EXPECT_EQ(out, 0u);
  EXPECT_EQ(fn(1, nullptr), CUDA_ERROR_UNKNOWN);
}

TEST(CublasPrivateTable, Slot39WritesZero) {
  using Fn = CUresult(uint64_t, uint64_t, uint64_t*);
  auto* fn = slot<Fn>(ids::kCublasPrivate, 39);
  uint64_t out = 9;
  EXPECT_EQ(fn(0, 1, &out), CUDA_SUCCESS);
  EXPECT_EQ(out, 0u);
  EXPECT_EQ(fn(0, 0, &out), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fn(0, 1, nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST(CublasPrivateTable, Slot51HandsOutAZeroedObject) {
  using Fn = CUresult(uint64_t, uint64_t, void**);
  auto* fn = slot<Fn>(ids::kCublasPrivate, 51);
  void* out = nullptr;
  void* again = nullptr;
  ASSERT_EQ(fn(0, 0, &out), CUDA_SUCCESS);
  ASSERT_NE(out, nullptr);
  const auto* bytes = static_cast<const uint8_t*>(out);
  for (int i = 0; i < 512; ++i) ASSERT_EQ(bytes[i], 0) << i;
  EXPECT_EQ(fn(3, 7, &again), CUDA_SUCCESS);
  EXPECT_EQ(out, again);
  EXPECT_EQ(fn(0, ~uint64_t{0}, &out), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(fn(0, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST(CublasPrivateTable, OtherSlotsAreDistinctNotSupportedStubsThatLogOnce) {
  static int runs = 0;
  const size_t expected_logs = first_run_only(runs);
  LogCapture log;
  std::vector<uintptr_t> seen;
  for (size_t i = 1; i < kCublasPrivateWords; ++i) {
    ASSERT_NE(word(ids::kCublasPrivate, i), 0u) << i;
    for (uintptr_t other : seen) ASSERT_NE(word(ids::kCublasPrivate, i), other) << i;
    seen.push_back(word(ids::kCublasPrivate, i));
    if (i == 4 || i == 39 || i == 51) continue;
    EXPECT_EQ(slot<CUresult()>(ids::kCublasPrivate, i)(), CUDA_ERROR_NOT_SUPPORTED) << i;
  }
  EXPECT_EQ(slot<CUresult()>(ids::kCublasPrivate, 17)(), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(log.count_containing("slot 17 "), expected_logs);
  EXPECT_EQ(log.count_containing("slot 95 "), expected_logs);
  EXPECT_EQ(log.count_containing("slot 4 "), 0u);
}

TEST(Table1734dc26, SizedAsTheDriversWithEverySlotNotSupported) {
  static int runs = 0;
  const size_t expected_logs = first_run_only(runs);
  EXPECT_EQ(word(ids::kTable1734dc26, 0), kTable1734dc26Words * 8);
  LogCapture log;
  for (size_t i = 1; i < kTable1734dc26Words; ++i) {
    EXPECT_EQ(slot<CUresult()>(ids::kTable1734dc26, i)(), CUDA_ERROR_NOT_SUPPORTED) << i;
  }
  EXPECT_EQ(log.count_containing("export table 1734dc26 slot 4 "), expected_logs);
}

// cuFFT's table: the size NVIDIA's 580 driver gives it; slot 7 visits a
// module's functions (driver_e2e_test), none when they cannot be had.
TEST(Table6e163fbe, SizedAsTheDriversWithSlot7VisitingFunctions) {
  EXPECT_EQ(word(ids::kTable6e163fbe, 0), kTable6e163fbeWords * 8);
  using Visitor = uint64_t (*)(void*, CUfunction, const char*, uint64_t, uint64_t, CUmodule);
  Visitor never = [](void*, CUfunction, const char*, uint64_t, uint64_t, CUmodule) -> uint64_t {
    ADD_FAILURE() << "visited";
    return 0;
  };
  EXPECT_EQ((slot<uint64_t(CUcontext, CUmodule, Visitor, void*)>(ids::kTable6e163fbe, 7)(
                nullptr, nullptr, never, nullptr)),
            0u);
  for (size_t i : {size_t{1}, size_t{6}, size_t{8}, kTable6e163fbeWords - 1})
    EXPECT_EQ(slot<CUresult()>(ids::kTable6e163fbe, i)(), CUDA_ERROR_NOT_SUPPORTED) << i;
}

// ---- context-local storage ------------------------------------------------------------

CUcontext fake_ctx(uintptr_t v) { return reinterpret_cast<CUcontext>(v); }
void* fake_ptr(uintptr_t v) { return reinterpret_cast<void*>(v); }

struct DestructorCall {
  CUcontext ctx;
  void* key;
  void* value;
};
std::vector<DestructorCall> destructor_calls;

void CUDAAPI record_destructor(CUcontext ctx, void* key, void* value) {
  destructor_calls.push_back({ctx, key, value});
}

TEST(ContextStorage, PutGetDelete) {
  const CUcontext ctx = fake_ctx(0xc7c0);
  void* value = nullptr;
  EXPECT_EQ(context_storage_get(&value, ctx, fake_ptr(1)), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(context_storage_put(ctx, fake_ptr(1), fake_ptr(0xa), nullptr), CUDA_SUCCESS);
  EXPECT_EQ(context_storage_get(&value, ctx, fake_ptr(1)), CUDA_SUCCESS);
  EXPECT_EQ(value, fake_ptr(0xa));
  EXPECT_EQ(context_storage_put(ctx, fake_ptr(1), fake_ptr(0xb), nullptr), CUDA_SUCCESS);
  EXPECT_EQ(context_storage_get(&value, ctx, fake_ptr(1)), CUDA_SUCCESS);
  EXPECT_EQ(value, fake_ptr(0xb));
  EXPECT_EQ(context_storage_delete(ctx, fake_ptr(1)), CUDA_SUCCESS);
  EXPECT_EQ(context_storage_get(&value, ctx, fake_ptr(1)), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(context_storage_delete(ctx, fake_ptr(1)), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(context_storage_get(nullptr, ctx, fake_ptr(1)), CUDA_ERROR_INVALID_VALUE);
}

TEST(ContextStorage, EntriesAreKeyedByContextAndKey) {
  const CUcontext a = fake_ctx(0xa000);
  const CUcontext b = fake_ctx(0xb000);
  void* value = nullptr;
  ASSERT_EQ(context_storage_put(a, fake_ptr(1), fake_ptr(0xa1), nullptr), CUDA_SUCCESS);
  ASSERT_EQ(context_storage_put(b, fake_ptr(1), fake_ptr(0xb1), nullptr), CUDA_SUCCESS);
  ASSERT_EQ(context_storage_put(a, fake_ptr(2), fake_ptr(0xa2), nullptr), CUDA_SUCCESS);
  EXPECT_EQ(context_storage_get(&value, a, fake_ptr(1)), CUDA_SUCCESS);
  EXPECT_EQ(value, fake_ptr(0xa1));
  EXPECT_EQ(context_storage_get(&value, b, fake_ptr(1)), CUDA_SUCCESS);
  EXPECT_EQ(value, fake_ptr(0xb1));
  EXPECT_EQ(context_storage_get(&value, b, fake_ptr(2)), CUDA_ERROR_INVALID_HANDLE);
  run_context_storage_destructors(a);
  run_context_storage_destructors(b);
}

TEST(ContextStorage, DestructorsRunForOneContextOnlyAndDropItsEntries) {
  destructor_calls.clear();
  const CUcontext a = fake_ctx(0xd000);
  const CUcontext b = fake_ctx(0xe000);
  ASSERT_EQ(context_storage_put(a, fake_ptr(1), fake_ptr(0x11), &record_destructor), CUDA_SUCCESS);
  ASSERT_EQ(context_storage_put(a, fake_ptr(2), fake_ptr(0x12), nullptr), CUDA_SUCCESS);
  ASSERT_EQ(context_storage_put(a, fake_ptr(3), fake_ptr(0x13), &record_destructor), CUDA_SUCCESS);
  ASSERT_EQ(context_storage_put(b, fake_ptr(1), fake_ptr(0x21), &record_destructor), CUDA_SUCCESS);
  ASSERT_EQ(context_storage_put(a, fake_ptr(4), fake_ptr(0x14), &record_destructor), CUDA_SUCCESS);
  ASSERT_EQ(context_storage_delete(a, fake_ptr(4)), CUDA_SUCCESS);
  EXPECT_TRUE(destructor_calls.empty());  // delete does not run it

  run_context_storage_destructors(a);
  ASSERT_EQ(destructor_calls.size(), 2u);
  EXPECT_EQ(destructor_calls[0].ctx, a);
  EXPECT_EQ(destructor_calls[0].key, fake_ptr(1));
  EXPECT_EQ(destructor_calls[0].value, fake_ptr(0x11));
  EXPECT_EQ(destructor_calls[1].key, fake_ptr(3));
  EXPECT_EQ(destructor_calls[1].value, fake_ptr(0x13));

  void* value = nullptr;
  for (uintptr_t key : {1, 2, 3}) {
    EXPECT_EQ(context_storage_get(&value, a, fake_ptr(key)), CUDA_ERROR_INVALID_HANDLE);
  }
  EXPECT_EQ(context_storage_get(&value, b, fake_ptr(1)), CUDA_SUCCESS);
  run_context_storage_destructors(a);
  EXPECT_EQ(destructor_calls.size(), 2u);
  run_context_storage_destructors(b);
  EXPECT_EQ(destructor_calls.size(), 3u);
}

void CUDAAPI reentrant_destructor(CUcontext ctx, void* key, void*) {
  context_storage_put(ctx, fake_ptr(reinterpret_cast<uintptr_t>(key) + 100), nullptr, nullptr);
}

TEST(ContextStorage, DestructorMayCallBackIn) {
  const CUcontext ctx = fake_ctx(0xf000);
  ASSERT_EQ(context_storage_put(ctx, fake_ptr(1), nullptr, &reentrant_destructor), CUDA_SUCCESS);
  run_context_storage_destructors(ctx);
  void* value = fake_ptr(1);
  EXPECT_EQ(context_storage_get(&value, ctx, fake_ptr(101)), CUDA_SUCCESS);
  run_context_storage_destructors(ctx);
}

TEST(ContextStorage, ConcurrentPutsAndGets) {
  const CUcontext ctx = fake_ctx(0x10000);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (uintptr_t t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (uintptr_t i = 0; i < 2000; ++i) {
        void* key = fake_ptr(t * 100000 + i + 1);
        void* value = nullptr;
        if (context_storage_put(ctx, key, fake_ptr(i + 7), nullptr) != CUDA_SUCCESS ||
            context_storage_get(&value, ctx, key) != CUDA_SUCCESS || value != fake_ptr(i + 7) ||
            context_storage_delete(ctx, key) != CUDA_SUCCESS) {
          failures++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ContextStorage, ReachableThroughTheExportTable) {
  using Put = CUresult(CUcontext, void*, void*, ContextStorageDestructor);
  using Get = CUresult(void**, CUcontext, void*);
  const CUcontext ctx = fake_ctx(0x20000);
  void* value = nullptr;
  ASSERT_EQ(slot<Put>(ids::kContextLocalStorage, 0)(ctx, fake_ptr(5), fake_ptr(6), nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(slot<Get>(ids::kContextLocalStorage, 2)(&value, ctx, fake_ptr(5)), CUDA_SUCCESS);
  EXPECT_EQ(value, fake_ptr(6));
  run_context_storage_destructors(ctx);
}

// ---- export table spy (pass-through diagnostics) ---------------------------

uint64_t fake_slot1(uint64_t a, uint64_t b, uint64_t* out) {
  *out = a + b;
  return 7;
}

// Calls a spy's slot as its callers do: through the type they know, which
// is not the type of the spy's catch-all function (UBSan's function check
// would flag what is the spy's design).
SCUDA_NO_FUNCTION_CHECK uint64_t call_slot(const void* slot, uint64_t a, uint64_t b,
                                           uint64_t* out) {
  return reinterpret_cast<decltype(&fake_slot1)>(const_cast<void*>(slot))(a, b, out);
}

TEST(ExportTableSpy, CopiesCallThroughToTheRealSlots) {
  const void* real[] = {reinterpret_cast<const void*>(3 * sizeof(void*)),
                        reinterpret_cast<const void*>(&fake_slot1), nullptr};
  const CUuuid id = uuid_from_string("00000001-0000-0000-0000-000000000000");
  const auto* copy = static_cast<const void* const*>(spy_export_table(id, real));
  ASSERT_NE(copy, static_cast<const void* const*>(real));
  EXPECT_EQ(copy[0], real[0]);
  EXPECT_NE(copy[1], real[1]);
  EXPECT_EQ(copy[2], nullptr);
  uint64_t out = 0;
  EXPECT_EQ(call_slot(copy[1], 40, 2, &out), 7u);
  EXPECT_EQ(out, 42u);
  EXPECT_EQ(spy_export_table(id, real), copy);  // one copy per table
}

TEST(ExportTableSpy, LeavesHashedTablesAlone) {
  const void* real[] = {reinterpret_cast<const void*>(2 * sizeof(void*)),
                        reinterpret_cast<const void*>(&fake_slot1)};
  EXPECT_EQ(spy_export_table(export_table_id::kIntegrityCheck, real), real);
  EXPECT_EQ(spy_export_table(export_table_id::kCudartInterface, real), real);
}

}  // namespace
}  // namespace scuda::client
