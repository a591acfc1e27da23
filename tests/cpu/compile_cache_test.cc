// The compile-cache table NVRTC asks for (client/dark_api/compile_cache.h)
// and the files behind it (compile_cache_store.h).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "client/dark_api/compile_cache_store.h"
#include "client/dark_api/export_tables.h"

namespace scuda::client {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the test's temporary directory, removed at the end.
class Folder {
 public:
  Folder() {
    std::string templ = (fs::temp_directory_path() / "scuda-cc-XXXXXX").string();
    path_ = ::mkdtemp(templ.data());
  }
  ~Folder() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }
  // The regular files in it.
  size_t files() const {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(path_)) n += e.is_regular_file();
    return n;
  }

 private:
  std::string path_;
};

std::string blob(char fill, size_t size) { return std::string(size, fill); }

TEST(CompileCacheStore, KeptBlobIsFoundByKindAndKeyOnly) {
  Folder dir;
  CompileCacheStore store(dir.path(), 1 << 20);
  ASSERT_TRUE(store.keep(2, "bitcode", "ptx text"));
  EXPECT_EQ(store.find(2, "bitcode"), "ptx text");
  EXPECT_EQ(store.find(1, "bitcode"), std::nullopt);
  EXPECT_EQ(store.find(2, "bitcodf"), std::nullopt);
  // Another process's store over the same folder finds it too.
  CompileCacheStore other(dir.path(), 1 << 20);
  EXPECT_EQ(other.find(2, "bitcode"), "ptx text");
  EXPECT_EQ(dir.files(), 1u);
}

TEST(CompileCacheStore, TornOrAlteredFilesAreMisses) {
  Folder dir;
  CompileCacheStore store(dir.path(), 1 << 20);
  ASSERT_TRUE(store.keep(1, "torn", blob('a', 1000)));
  ASSERT_TRUE(store.keep(1, "altered", blob('b', 1000)));
  // The two files, told apart by their blobs' bytes.
  for (const auto& e : fs::directory_iterator(dir.path())) {
    std::string bytes(fs::file_size(e.path()), '\0');
    std::ifstream(e.path(), std::ios::binary).read(bytes.data(), bytes.size());
    if (bytes.back() == 'a') {
      fs::resize_file(e.path(), bytes.size() - 1);
    } else {
      bytes[bytes.size() - 500] = 'c';
      std::ofstream(e.path(), std::ios::binary).write(bytes.data(), bytes.size());
    }
  }
  EXPECT_EQ(store.find(1, "torn"), std::nullopt);
  EXPECT_EQ(store.find(1, "altered"), std::nullopt);
  // A miss is not a dead end: the entry can be kept again.
  ASSERT_TRUE(store.keep(1, "torn", blob('a', 1000)));
  EXPECT_EQ(store.find(1, "torn"), blob('a', 1000));
}

TEST(CompileCacheStore, ForeignFilesAreMissesAndNeverFollowed) {
  Folder dir;
  CompileCacheStore store(dir.path(), 1 << 20);
  ASSERT_TRUE(store.keep(1, "k", "v"));
  fs::path kept;
  for (const auto& e : fs::directory_iterator(dir.path())) kept = e.path();
  std::ofstream(kept, std::ios::binary)
      << "not a cache entry at all, but long enough to have a header "
         "of eighty bytes in front of what follows it";
  EXPECT_EQ(store.find(1, "k"), std::nullopt);
  fs::remove(kept);
  fs::create_symlink("/etc/hostname", kept);
  EXPECT_EQ(store.find(1, "k"), std::nullopt);
}

TEST(CompileCacheStore, LeastRecentlyUsedGoPastTheLimit) {
  Folder dir;
  // Four entries of 980 bytes (80 of header) fit in 4000; a fifth does not.
  CompileCacheStore store(dir.path(), 4000);
  for (char c : {'1', '2', '3', '4'}) ASSERT_TRUE(store.keep(1, std::string(1, c), blob(c, 900)));
  ASSERT_EQ(dir.files(), 4u);
  // Files' times are coarse; age them apart by hand, oldest first.
  const auto now = fs::file_time_type::clock::now();
  int age = 100;
  for (char c : {'1', '2', '3', '4'}) {
    for (const auto& e : fs::directory_iterator(dir.path())) {
      std::string last(1, '\0');
      std::ifstream f(e.path(), std::ios::binary);
      f.seekg(-1, std::ios::end);
      f.read(last.data(), 1);
      if (last[0] == c) fs::last_write_time(e.path(), now - std::chrono::seconds(age));
    }
    --age;
  }
  ASSERT_TRUE(store.find(1, "1"));  // used now: no longer the oldest
  ASSERT_TRUE(store.keep(1, "5", blob('5', 900)));
  EXPECT_TRUE(store.find(1, "1"));
  EXPECT_EQ(store.find(1, "2"), std::nullopt);
  EXPECT_EQ(store.find(1, "3"), std::nullopt);
  EXPECT_TRUE(store.find(1, "4"));
  EXPECT_TRUE(store.find(1, "5"));
  EXPECT_EQ(dir.files(), 3u);
}

TEST(CompileCacheStore, BlobsOverAQuarterOfTheLimitAreNotKept) {
  Folder dir;
  CompileCacheStore store(dir.path(), 4000);
  EXPECT_FALSE(store.keep(1, "big", blob('x', 1001)));
  EXPECT_TRUE(store.keep(1, "small", blob('x', 1000)));
  EXPECT_EQ(store.find(1, "big"), std::nullopt);
}

// ---- the table -----------------------------------------------------------------

using Open = CUresult (*)(void**, uint32_t, const void*, uint32_t);
using Close = CUresult (*)(void*);
using Find = CUresult (*)(void*, uint64_t, void**, uint32_t*);
using Keep = CUresult (*)(void*, uint64_t, const void*, uint32_t);
using Release = CUresult (*)(void*);
using Unknown = CUresult (*)();

template <class F>
F slot(size_t i) {
  const void* table = nullptr;
  EXPECT_EQ(get_local_export_table(&table, &export_table_id::kCompileCache), CUDA_SUCCESS);
  return reinterpret_cast<F>(const_cast<void*>(static_cast<const void* const*>(table)[i]));
}

// Keeps `value` under (kind, key), then finds it through a second entry, as
// NVRTC does in two processes; what slot 3 found, or `error` on a miss.
std::string keep_then_find(uint32_t kind, const std::string& key, const std::string& value) {
  void* entry = nullptr;
  if (slot<Open>(1)(&entry, kind, key.data(), key.size()) != CUDA_SUCCESS) return "open failed";
  void* data = nullptr;
  uint32_t size = 0;
  const CUresult first = slot<Find>(3)(entry, 0, &data, &size);
  const CUresult kept = slot<Keep>(4)(entry, 0, value.data(), value.size());
  slot<Close>(2)(entry);
  if (first != CUDA_ERROR_NOT_FOUND || kept != CUDA_SUCCESS) return "not a miss, then kept";
  if (slot<Open>(1)(&entry, kind, key.data(), key.size()) != CUDA_SUCCESS) return "open failed";
  const CUresult found = slot<Find>(3)(entry, 0, &data, &size);
  slot<Close>(2)(entry);
  if (found != CUDA_SUCCESS) return "error " + std::to_string(found);
  std::string seen(static_cast<const char*>(data), size);
  slot<Release>(6)(data);
  return seen;
}

TEST(CompileCacheTable, SizedAsTheDriversWithSlot5NotSupported) {
  const void* table = nullptr;
  ASSERT_EQ(get_local_export_table(&table, &export_table_id::kCompileCache), CUDA_SUCCESS);
  EXPECT_EQ(static_cast<const uintptr_t*>(table)[0], kCompileCacheWords * sizeof(void*));
  EXPECT_EQ(slot<Unknown>(5)(), CUDA_ERROR_NOT_SUPPORTED);
  void* entry = nullptr;
  EXPECT_EQ(slot<Open>(1)(nullptr, 1, "k", 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(slot<Open>(1)(&entry, 1, nullptr, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(slot<Close>(2)(nullptr), CUDA_ERROR_INVALID_VALUE);
}

// Each case runs in a process of its own (the cache's settings are read
// once), with a cache folder of its own; exits 0 when `check` holds.
template <class Check>
[[noreturn]] void in_a_process(const char* disable, Check check) {
  const int status = [&] {
    Folder dir;
    ::setenv("SCUDA_CACHE_DIR", dir.path().c_str(), 1);
    ::setenv("CUDA_CACHE_DISABLE", disable, 1);
    return check(dir.path() + "/compiled") ? 0 : 1;
  }();
  std::exit(status);
}

class CompileCacheTableInAProcess : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(CompileCacheTableInAProcess, KeepsBlobsInTheCacheFolder) {
  EXPECT_EXIT(in_a_process("0",
                           [](const std::string& kept) {
                             return keep_then_find(2, "bitcode", "ptx") == "ptx" &&
                                    keep_then_find(1, "bitcode", "cubin") == "cubin" &&
                                    fs::exists(kept);
                           }),
              ::testing::ExitedWithCode(0), "");
}

TEST_F(CompileCacheTableInAProcess, CudaCacheDisableKeepsNothing) {
  EXPECT_EXIT(in_a_process("1",
                           [](const std::string& kept) {
                             std::fprintf(stderr, "%s\n",
                                          keep_then_find(2, "bitcode", "ptx").c_str());
                             return !fs::exists(kept);
                           }),
              ::testing::ExitedWithCode(0), "error 500");
}

}  // namespace
}  // namespace scuda::client
