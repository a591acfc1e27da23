// The file handling both content-addressed caches share (common/cache_files.h).
#include "common/cache_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

namespace {

class CacheFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/scuda-cache-files-XXXXXX";
    dir_ = mkdtemp(templ);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // An entry named by `digit` repeated, of `size` bytes, last used at `seconds`.
  std::string entry(char digit, size_t size, time_t seconds) {
    const std::string path = dir_ + "/" + std::string(64, digit);
    std::ofstream(path) << std::string(size, 'x');
    set_time(path, seconds);
    return path;
  }
  static void set_time(const std::string& path, time_t seconds) {
    timespec times[2] = {{seconds, 0}, {seconds, 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  }

  std::string dir_;
};

TEST_F(CacheFilesTest, PublishedFileHoldsEveryPieceAndNoTemporaryIsLeft) {
  const int fd = scuda::publish_file(dir_, "name", {"head-", "", "body"});
  ASSERT_GE(fd, 0);
  std::string back(9, '\0');
  EXPECT_TRUE(scuda::pread_exactly(fd, back.data(), back.size(), 0));
  EXPECT_EQ(back, "head-body");
  EXPECT_FALSE(scuda::pread_exactly(fd, back.data(), 1, 9));  // past the end
  close(fd);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir_))
    files += e.path().filename() == "name" ? 1 : 100;
  EXPECT_EQ(files, 1u);
}

TEST_F(CacheFilesTest, PublishIntoAMissingFolderFailsWithItsError) {
  errno = 0;
  EXPECT_EQ(scuda::publish_file(dir_ + "/missing", "name", {"x"}), -1);
  EXPECT_EQ(errno, ENOENT);
}

TEST_F(CacheFilesTest, TrimRemovesTheLeastRecentlyUsedButNeverTheKeptOne) {
  const std::string oldest = entry('a', 100, 1000);
  const std::string middle = entry('b', 100, 2000);
  const std::string newest = entry('c', 100, 3000);
  // Under the limit: nothing goes.
  EXPECT_EQ(scuda::trim_least_recent(dir_, 300, 0), 300u);
  EXPECT_TRUE(fs::exists(oldest));
  // Over it: the oldest go first, down to the target, and the kept one stays.
  EXPECT_EQ(scuda::trim_least_recent(dir_, 250, 100, oldest), 100u);
  EXPECT_TRUE(fs::exists(oldest));
  EXPECT_FALSE(fs::exists(middle));
  EXPECT_FALSE(fs::exists(newest));
}

TEST_F(CacheFilesTest, TrimClearsStaleTemporariesAndCountsOnlyEntries) {
  entry('d', 10, 1000);
  const std::string stale = dir_ + "/.tmp-1-0";
  const std::string fresh = dir_ + "/.tmp-2-0";
  const std::string other = dir_ + "/notes.txt";
  for (const std::string& path : {stale, fresh, other})
    std::ofstream(path) << std::string(500, 'y');
  set_time(stale, time(nullptr) - 2 * 3600);
  EXPECT_EQ(scuda::trim_least_recent(dir_, 1000, 0), 10u);
  EXPECT_FALSE(fs::exists(stale));  // a writer that died left it
  EXPECT_TRUE(fs::exists(fresh));   // a writer may be writing it now
  EXPECT_TRUE(fs::exists(other));   // not the cache's
}

TEST_F(CacheFilesTest, EntryNamesAreSixtyFourLowercaseHexDigits) {
  const uint8_t bytes[] = {0x00, 0x9f, 0xa0, 0xff};
  EXPECT_EQ(scuda::to_hex(bytes), "009fa0ff");
  EXPECT_TRUE(scuda::is_entry_name(std::string(64, 'f')));
  EXPECT_FALSE(scuda::is_entry_name(std::string(64, 'F')));
  EXPECT_FALSE(scuda::is_entry_name(std::string(63, 'f')));
  EXPECT_FALSE(scuda::is_entry_name(std::string(63, 'f') + "g"));
}

TEST_F(CacheFilesTest, PrivateFolderIsMadeWithItsParents) {
  const std::string nested = dir_ + "/a/b/c";
  ASSERT_TRUE(scuda::make_private_dir(nested));
  struct stat st {};
  ASSERT_EQ(stat(nested.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  std::ofstream(dir_ + "/file") << "x";
  EXPECT_FALSE(scuda::make_private_dir(dir_ + "/file"));
}

}  // namespace
