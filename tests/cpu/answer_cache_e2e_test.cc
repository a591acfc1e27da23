// Answers kept across runs (client/modules/answer_cache.h), end to end: client
// processes of their own (module_load_tool answers) against a real server,
// sharing a cache directory. What a run waited for is its count of replies
// awaited after each step: lookups, launches, occupancy questions.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "server_process.h"

namespace fs = std::filesystem;

namespace {

// A double module image (tests/double/module_image.h) with kernel k(u64, i32).
constexpr const char* kImage = "scuda-double-module\nkernel k 8 4\n";

class AnswerCacheE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/scuda-answers-XXXXXX";
    root_ = mkdtemp(templ);
    answers_ = root_ + "/answers";
    image_ = root_ + "/image";
    std::ofstream(image_) << kImage;
    server_ = std::make_unique<scuda::test::ServerProcess>(std::vector<std::string>{});
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(root_);
  }

  // One run's replies awaited after its lookups, launches, occupancy
  // questions and attribute queries around a set (cumulative), with its
  // output checked.
  std::vector<int> run(const std::string& setting = "on") {
    auto o =
        scuda::test::run_program({MODULE_LOAD_TOOL, "answers", image_},
                                 {"SCUDA_SERVER=" + server_->address(),
                                  "SCUDA_CACHE_DIR=" + answers_, "SCUDA_ANSWER_CACHE=" + setting});
    // A set attribute is not what a later run finds before its own set.
    for (const char* line : {"launches: CUDA_SUCCESS CUDA_SUCCESS\n",
                             "occupancy: 8 4, clusters 32\n", "dynamic shared: 49152 then 65536\n"})
      EXPECT_NE(o.out.find(line), std::string::npos) << o.out << o.err;
    EXPECT_NE(o.out.find("synchronize: CUDA_SUCCESS"), std::string::npos) << o.out << o.err;
    std::vector<int> awaited;
    const std::regex line("awaited: (\\d+)");
    for (std::sregex_iterator it(o.out.begin(), o.out.end(), line), end; it != end; ++it)
      awaited.push_back(std::stoi((*it)[1]));
    EXPECT_EQ(awaited.size(), 4u) << o.out;
    return awaited;
  }

  std::vector<fs::path> files() const {
    std::vector<fs::path> out;
    if (fs::exists(answers_))
      for (const auto& e : fs::directory_iterator(answers_))
        if (e.path().filename().string().starts_with("answers-")) out.push_back(e.path());
    return out;
  }

  std::string root_, answers_, image_;
  std::unique_ptr<scuda::test::ServerProcess> server_;
};

// A second run waits for nothing: its module load goes by hash (the server
// kept the image, kept_images.h), and even the attribute asked after a set
// is known, for the same set.
TEST_F(AnswerCacheE2E, ASecondRunWaitsForNothing) {
  const std::vector<int> first = run();
  EXPECT_EQ(files().size(), 1u);
  const std::vector<int> second = run();
  EXPECT_EQ(second, (std::vector<int>{0, 0, 0, 0}));
  EXPECT_GT(first.back(), second.back() + 2);
}

// A lookup's reply read only after a set describes the kernel before it
// (the server answers in order): it is kept as such, so the next run's
// launch after the same set waits for nothing.
TEST_F(AnswerCacheE2E, ALookupAnsweredBeforeASetIsKept) {
  auto set_first = [&] {
    auto o = scuda::test::run_program({MODULE_LOAD_TOOL, "set-first", image_},
                                      {"SCUDA_SERVER=" + server_->address(),
                                       "SCUDA_CACHE_DIR=" + answers_, "SCUDA_ANSWER_CACHE=on"});
    EXPECT_NE(o.out.find("launch: CUDA_SUCCESS\n"), std::string::npos) << o.out << o.err;
    EXPECT_NE(o.out.find("synchronize: CUDA_SUCCESS"), std::string::npos) << o.out << o.err;
    return o.out.substr(o.out.find("awaited"));
  };
  EXPECT_EQ(set_first().rfind("awaited: 1\n", 0), 0u);
  EXPECT_EQ(set_first().rfind("awaited: 0\n", 0), 0u);
}

TEST_F(AnswerCacheE2E, OffKeepsNothing) {
  const std::vector<int> first = run("off");
  EXPECT_TRUE(files().empty());
  EXPECT_EQ(run("off"), first);
}

// A file that is not one (or torn) is started afresh: its answers are asked
// again, then kept again.
TEST_F(AnswerCacheE2E, AGarbledFileIsAskedAgainAndMended) {
  const std::vector<int> first = run();
  ASSERT_EQ(files().size(), 1u);
  const fs::path file = files()[0];
  const std::string kept = [&] {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  std::ofstream(file, std::ios::binary | std::ios::trunc) << "not answers at all";
  // All but the module load, whose image the server kept, are asked again.
  std::vector<int> asked_again = first;
  for (int& awaited : asked_again) --awaited;
  EXPECT_EQ(run(), asked_again);
  // Torn in the middle of its last record.
  std::ofstream(file, std::ios::binary | std::ios::trunc) << kept.substr(0, kept.size() - 3);
  EXPECT_LT(run().back(), first.back());
  EXPECT_EQ(run(), (std::vector<int>{0, 0, 0, 0}));
}

}  // namespace
