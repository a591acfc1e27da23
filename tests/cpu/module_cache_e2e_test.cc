// The module cache end to end: client processes (module_load_tool) against a
// real server with a cache directory of its own. What a client sent is read
// from its count of the bytes it sent (sent_bytes.h).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "protocol/ops.h"
#include "server/kernels/module_cache.h"
#include "server_process.h"

namespace fs = std::filesystem;

namespace {

constexpr long long kImageBytes = 2 << 20;

// A double module image of about kImageBytes, with kernel "k"; distinct per tag.
std::string image(const std::string& tag) {
  return "scuda-double-module\nkernel k 8 4\nkernel " + tag + " 4\n" +
         std::string(kImageBytes, ' ') + "\n";
}

long long sent(const std::string& out) {
  const size_t at = out.find("sent: ");
  return at == std::string::npos ? -1 : std::stoll(out.substr(at + 6));
}

// The calls counted in the SCUDA_STATS row `row` of a client's stderr; -1
// when the row is missing.
int stats_calls(const std::string& err, const std::string& row) {
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with(row + "  ")) return std::stoi(line.substr(row.size()));
  return -1;
}

class ModuleCacheE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/scuda-module-cache-XXXXXX";
    root_ = mkdtemp(templ);
    cache_ = root_ + "/cache";
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(root_);
  }

  void start(std::vector<std::string> args) {
    server_ = std::make_unique<scuda::test::ServerProcess>(std::move(args));
  }
  std::string write(const std::string& name, const std::string& bytes) {
    const std::string path = root_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  scuda::test::Output tool(std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.begin(), MODULE_LOAD_TOOL);
    env.push_back("SCUDA_SERVER=" + server_->address());
    return scuda::test::run_program(args, env);
  }
  std::string cached_path(const std::string& bytes) {
    // The client sends the image with its terminating NUL.
    const auto hash = scuda::protocol::image_hash(bytes.c_str(), bytes.size() + 1);
    return cache_ + "/" + scuda::server::hash_hex(hash);
  }
  uint64_t cache_bytes() {
    uint64_t total = 0;
    for (const auto& e : fs::directory_iterator(cache_)) total += e.file_size();
    return total;
  }

  std::string root_, cache_;
  std::unique_ptr<scuda::test::ServerProcess> server_;
};

TEST_F(ModuleCacheE2E, ASecondProcessSendsOnlyTheHash) {
  start({"--module-cache", cache_});
  const std::string a = image("a");
  const std::string file = write("a", a);
  auto first = tool({"load", file});
  EXPECT_NE(first.out.find("load: CUDA_SUCCESS\nfunction: CUDA_SUCCESS"), std::string::npos)
      << first.out << first.err;
  EXPECT_GE(sent(first.out), kImageBytes);
  EXPECT_TRUE(fs::exists(cached_path(a)));

  auto second = tool({"load", file, file});
  EXPECT_NE(second.out.find("load: CUDA_SUCCESS\nfunction: CUDA_SUCCESS\n"
                            "load: CUDA_SUCCESS\nfunction: CUDA_SUCCESS"),
            std::string::npos)
      << second.out << second.err;
  EXPECT_GE(sent(second.out), 0);
  EXPECT_LT(sent(second.out), 64 << 10);
}

// A large image's SHA-256 is computed once per user: a later process finds
// it by the image's checksum (client/modules/image_names.h) and still loads
// it by hash alone; another image of the same size is hashed.
TEST_F(ModuleCacheE2E, ALaterProcessNamesAnImageWithoutHashingItAgain) {
  start({"--module-cache", cache_});
  const std::string a = write("a", image("a")), b = write("b", image("b"));
  const std::vector<std::string> env = {"SCUDA_CACHE_DIR=" + root_ + "/client",
                                        "SCUDA_ANSWER_CACHE=on", "SCUDA_STATS=1"};
  auto first = tool({"load", a}, env);
  EXPECT_NE(first.out.find("load: CUDA_SUCCESS\nfunction: CUDA_SUCCESS"), std::string::npos)
      << first.out << first.err;
  EXPECT_EQ(stats_calls(first.err, "image: sha-256"), 1) << first.err;
  EXPECT_EQ(stats_calls(first.err, "image: checksum"), 1) << first.err;
  auto second = tool({"load", a, b}, env);
  EXPECT_NE(second.out.find("load: CUDA_SUCCESS\nfunction: CUDA_SUCCESS\n"
                            "load: CUDA_SUCCESS\nfunction: CUDA_SUCCESS"),
            std::string::npos)
      << second.out << second.err;
  EXPECT_EQ(stats_calls(second.err, "image: sha-256"), 1) << second.err;  // b's
  EXPECT_EQ(stats_calls(second.err, "image: checksum"), 2) << second.err;
  EXPECT_TRUE(fs::exists(cached_path(image("b"))));  // named by its own hash
  auto third = tool({"load", b}, env);
  EXPECT_EQ(stats_calls(third.err, "image: sha-256"), -1) << third.err;
  EXPECT_LT(sent(third.out), 64 << 10);
}

TEST_F(ModuleCacheE2E, EvictionKeepsTheBoundAndTheRecentlyUsed) {
  start({"--module-cache", cache_, "--module-cache-size", std::to_string(5 << 20)});
  const std::string a = image("a"), b = image("b"), c = image("c");
  const std::string fa = write("a", a), fb = write("b", b), fc = write("c", c);
  for (const std::string& f : {fa, fb, fa, fc}) {
    auto r = tool({"load", f});
    ASSERT_NE(r.out.find("function: CUDA_SUCCESS"), std::string::npos) << r.out << r.err;
  }
  EXPECT_LE(cache_bytes(), uint64_t{5} << 20);
  EXPECT_TRUE(fs::exists(cached_path(a)));
  EXPECT_FALSE(fs::exists(cached_path(b)));
  EXPECT_TRUE(fs::exists(cached_path(c)));
}

TEST_F(ModuleCacheE2E, ACorruptFileIsIgnoredAndReplaced) {
  start({"--module-cache", cache_});
  const std::string a = image("a");
  const std::string file = write("a", a);
  tool({"load", file});
  const std::string cached = cached_path(a);
  ASSERT_TRUE(fs::exists(cached));
  std::ofstream(cached, std::ios::binary | std::ios::in) << "garbage";  // same size
  auto r = tool({"load", file});
  EXPECT_NE(r.out.find("function: CUDA_SUCCESS"), std::string::npos) << r.out << r.err;
  EXPECT_GE(sent(r.out), kImageBytes);
  std::ifstream in(cached, std::ios::binary);
  const std::string stored((std::istreambuf_iterator<char>(in)), {});
  // The image, then its checksum (module_cache.h).
  EXPECT_EQ(stored.substr(0, a.size() + 1), a + '\0');
  EXPECT_GT(stored.size(), a.size() + 1);
}

TEST_F(ModuleCacheE2E, BadImagesStillReportInvalidImage) {
  start({"--module-cache", cache_});
  const std::string small = write("small", "not a module");
  const std::string big = write("big", std::string(kImageBytes, 'x'));
  for (int run = 0; run < 2; ++run) {
    auto r = tool({"load", small, big});
    EXPECT_EQ(r.out.find("load: CUDA_ERROR_INVALID_IMAGE\nload: CUDA_ERROR_INVALID_IMAGE\n"), 0u)
        << r.out << r.err;
  }
  EXPECT_TRUE(!fs::exists(cache_) || fs::is_empty(cache_));
}

TEST_F(ModuleCacheE2E, AFailedOneWayLoadFailsTheModulesUsers) {
  start({"--module-cache", cache_});
  const std::string file = write("small", "scuda-double-module\nkernel k 8\n");
  auto r = tool({"detached", file});
  EXPECT_EQ(r.out,
            "load: CUDA_SUCCESS\none-way load: CUDA_SUCCESS\n"
            "function: CUDA_ERROR_INVALID_CONTEXT\nsynchronize: CUDA_ERROR_INVALID_CONTEXT\n")
      << r.err;
}

// cudart's loads: large images go by their hash without waiting, and the
// first lookup reads every probe's reply at once, sending the images the
// server lacked: loads cost one wait however many there are, and only
// their hashes once the server has them.
TEST_F(ModuleCacheE2E, LibraryLoadsWaitOnceForAllTheirProbes) {
  start({"--module-cache", cache_});
  const std::string a = write("a", image("a")), b = write("b", image("b")),
                    c = write("c", image("c"));
  const std::string expected =
      "load: CUDA_SUCCESS\nload: CUDA_SUCCESS\nload: CUDA_SUCCESS\nawaited: 0\n"
      "kernel: CUDA_SUCCESS\nkernel: CUDA_SUCCESS\nkernel: CUDA_SUCCESS\nawaited: 1\n"
      "attribute: CUDA_SUCCESS\nattribute: CUDA_SUCCESS\nattribute: CUDA_SUCCESS\nawaited: 4\n";
  auto cold = tool({"library", a, b, c});
  EXPECT_EQ(cold.out.find(expected), 0u) << cold.out << cold.err;
  EXPECT_GE(sent(cold.out), 3 * kImageBytes);
  auto warm = tool({"library", a, b, c});
  EXPECT_EQ(warm.out.find(expected), 0u) << warm.out << warm.err;
  EXPECT_GE(sent(warm.out), 0);
  EXPECT_LT(sent(warm.out), 64 << 10);
}

// With the client's caches on, a later process names in its Hello the
// images the server held before; those the session keeps load by hash
// without a probe, and with the answers kept too nothing waits. An image
// gone from the server's cache is probed and sent again, then kept again.
TEST_F(ModuleCacheE2E, ImagesTheServerKeptLoadWithoutProbes) {
  start({"--module-cache", cache_});
  const std::string bytes_a = image("a"), bytes_b = image("b"), bytes_c = image("c");
  const std::string a = write("a", bytes_a), b = write("b", bytes_b), c = write("c", bytes_c);
  // A session stores the images it was sent after its client is gone.
  auto wait_stored = [&] {
    for (int i = 0; i < 500; ++i) {
      if (fs::exists(cached_path(bytes_a)) && fs::exists(cached_path(bytes_b)) &&
          fs::exists(cached_path(bytes_c)))
        return;
      usleep(10'000);
    }
  };
  const std::vector<std::string> env = {"SCUDA_ANSWER_CACHE=on",
                                        "SCUDA_CACHE_DIR=" + root_ + "/client"};
  const std::string loads = "load: CUDA_SUCCESS\nload: CUDA_SUCCESS\nload: CUDA_SUCCESS\n";
  const std::string kernels = "kernel: CUDA_SUCCESS\nkernel: CUDA_SUCCESS\nkernel: CUDA_SUCCESS\n";
  const std::string attributes =
      "attribute: CUDA_SUCCESS\nattribute: CUDA_SUCCESS\nattribute: CUDA_SUCCESS\n";
  const std::string nothing_waits =
      loads + "awaited: 0\n" + kernels + "awaited: 0\n" + attributes + "awaited: 0\n";
  auto cold = tool({"library", a, b, c}, env);
  EXPECT_EQ(cold.out.find(loads + "awaited: 0\n" + kernels + "awaited: 1\n"), 0u)
      << cold.out << cold.err;
  wait_stored();
  auto warm = tool({"library", a, b, c}, env);
  EXPECT_EQ(warm.out.find(nothing_waits), 0u) << warm.out << warm.err;
  EXPECT_LT(sent(warm.out), 64 << 10);

  ASSERT_TRUE(fs::remove(cached_path(bytes_a)));
  auto gone = tool({"library", a, b, c}, env);
  EXPECT_EQ(gone.out.find(loads + "awaited: 0\n" + kernels + "awaited: 1\n"), 0u)
      << gone.out << gone.err;
  EXPECT_GE(sent(gone.out), kImageBytes);
  wait_stored();
  auto again = tool({"library", a, b, c}, env);
  EXPECT_EQ(again.out.find(nothing_waits), 0u) << again.out << again.err;

  // A new server (another port) on the same host and cache.
  const std::string before = server_->address();
  start({"--module-cache", cache_});
  ASSERT_NE(server_->address(), before);
  auto restarted = tool({"library", a, b, c}, env);
  EXPECT_EQ(restarted.out.find(nothing_waits), 0u) << restarted.out << restarted.err;
}

// The load does not wait, so a library the driver rejects fails its uses.
TEST_F(ModuleCacheE2E, ARejectedLibraryFailsItsKernels) {
  start({"--module-cache", cache_});
  const std::string big = write("big", std::string(kImageBytes, 'x'));
  auto r = tool({"library", big});
  EXPECT_EQ(r.out.find("load: CUDA_SUCCESS\nawaited: 0\nkernel: CUDA_SUCCESS\nawaited: 1\n"
                       "attribute: CUDA_ERROR_INVALID_IMAGE\n"),
            0u)
      << r.out << r.err;
  EXPECT_TRUE(!fs::exists(cache_) || fs::is_empty(cache_));
}

TEST_F(ModuleCacheE2E, NoModuleCacheKeepsNothing) {
  setenv("XDG_CACHE_HOME", cache_.c_str(), 1);
  start({"--no-module-cache"});
  unsetenv("XDG_CACHE_HOME");
  const std::string file = write("a", image("a"));
  for (int run = 0; run < 2; ++run) {
    auto r = tool({"load", file, file});
    EXPECT_NE(r.out.find("function: CUDA_SUCCESS"), std::string::npos) << r.out << r.err;
    EXPECT_GE(sent(r.out), 2 * kImageBytes);
  }
  EXPECT_FALSE(fs::exists(cache_));
}

}  // namespace
