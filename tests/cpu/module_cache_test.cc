// The server's module cache on its own: a directory shared by instances that
// stand for session processes.
#include "server/kernels/module_cache.h"

#include "common/cache_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using scuda::make_private_dir;
using scuda::protocol::ImageHash;
using scuda::server::ModuleCache;

namespace {

ImageHash hash_of(const std::string& s) { return scuda::protocol::image_hash(s.data(), s.size()); }

class ModuleCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/scuda-cache-unit-XXXXXX";
    root_ = mkdtemp(templ);
    dir_ = root_ + "/a/b";  // made on the first store
  }
  void TearDown() override { fs::remove_all(root_); }

  ModuleCache cache(uint64_t max_bytes = 1 << 20) { return ModuleCache({dir_, max_bytes}); }
  std::string path(const std::string& image) {
    return dir_ + "/" + scuda::server::hash_hex(hash_of(image));
  }
  // Sets a file's mtime to `seconds` after the epoch.
  void age(const std::string& image, time_t seconds) {
    timespec times[2] = {{seconds, 0}, {seconds, 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, path(image).c_str(), times, 0), 0);
  }

  std::string root_, dir_;
};

TEST_F(ModuleCacheTest, AnotherSessionFindsAStoredImage) {
  const std::string image = "image one";
  ASSERT_TRUE(cache().store(hash_of(image), image));
  ModuleCache other({dir_, 1 << 20});
  std::string found;
  EXPECT_FALSE(other.holds(hash_of(image)));
  ASSERT_TRUE(other.find(hash_of(image), image.size(), &found));
  EXPECT_EQ(found, image);
  EXPECT_TRUE(other.holds(hash_of(image)));
  EXPECT_EQ(fs::status(dir_).permissions() & fs::perms::all, fs::perms::owner_all);
}

// What a Hello asks a session to keep: a file of the named size, held open
// so that another session's eviction cannot take it away.
TEST_F(ModuleCacheTest, KeepHoldsAFileOfTheNamedSizeAgainstEviction) {
  const std::string image = "image one";
  ASSERT_TRUE(cache().store(hash_of(image), image));
  ModuleCache session({dir_, 1 << 20});
  EXPECT_FALSE(session.keep(hash_of(image), image.size() + 1));
  EXPECT_FALSE(session.keep(hash_of("no such image"), 13));
  ASSERT_TRUE(session.keep(hash_of(image), image.size()));
  EXPECT_TRUE(session.holds(hash_of(image)));
  fs::remove(path(image));
  std::string found;
  ASSERT_TRUE(session.find(hash_of(image), image.size(), &found));
  EXPECT_EQ(found, image);
}

TEST_F(ModuleCacheTest, UnknownHashesAndWrongSizesMiss) {
  const std::string image = "image one";
  ModuleCache c = cache();
  std::string found;
  EXPECT_FALSE(c.find(hash_of(image), image.size(), &found));
  ASSERT_TRUE(c.store(hash_of(image), image));
  EXPECT_FALSE(cache().find(hash_of(image), image.size() + 1, &found));
  EXPECT_TRUE(fs::exists(path(image)));  // a wrong size is the client's mistake
}

TEST_F(ModuleCacheTest, ACorruptOrShortFileIsAMissAndIsRemoved) {
  const std::string image = "image one";
  ASSERT_TRUE(cache().store(hash_of(image), image));
  std::ofstream(path(image), std::ios::binary | std::ios::in) << "IMAGE";
  std::string found;
  EXPECT_FALSE(cache().find(hash_of(image), image.size(), &found));
  EXPECT_FALSE(fs::exists(path(image)));
  ASSERT_TRUE(cache().store(hash_of(image), image));
  fs::resize_file(path(image), 3);
  EXPECT_FALSE(cache().find(hash_of(image), image.size(), &found));
}

// A file shorter than a trailer (cut short) and a client's size that, with
// the trailer's added, wraps around to the file's: a miss, not a read.
TEST_F(ModuleCacheTest, ASizeThatWrapsAroundMisses) {
  const std::string image = "image one";
  ASSERT_TRUE(cache().store(hash_of(image), image));
  fs::resize_file(path(image), 3);
  const uint64_t wraps = uint64_t{3} - 24;  // modulo 2^64
  std::string found;
  EXPECT_FALSE(cache().find(hash_of(image), wraps, &found));
  EXPECT_FALSE(cache().keep(hash_of(image), wraps));
  EXPECT_TRUE(fs::exists(path(image)));
}

// A file of another layout (the image alone, as earlier servers wrote it)
// has the wrong size: a miss, which the client's whole image then replaces.
TEST_F(ModuleCacheTest, AnImageWithoutItsChecksumIsAMissAndIsReplaced) {
  const std::string image = "image one";
  ASSERT_TRUE(make_private_dir(dir_));
  std::ofstream(path(image), std::ios::binary) << image;
  std::string found;
  EXPECT_FALSE(cache().find(hash_of(image), image.size(), &found));
  EXPECT_FALSE(cache().keep(hash_of(image), image.size()));
  ASSERT_TRUE(cache().store(hash_of(image), image));
  ASSERT_TRUE(cache().find(hash_of(image), image.size(), &found));
  EXPECT_EQ(found, image);
  EXPECT_GT(fs::file_size(path(image)), image.size());
}

// The trailer finds damage anywhere in the image, not only at its start.
TEST_F(ModuleCacheTest, AFlippedByteInsideTheImageIsFound) {
  const std::string image(4096, 'i');
  ASSERT_TRUE(cache().store(hash_of(image), image));
  {
    std::fstream f(path(image), std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(2048);
    f.put('j');
  }
  std::string found;
  EXPECT_FALSE(cache().find(hash_of(image), image.size(), &found));
  EXPECT_FALSE(fs::exists(path(image)));
}

TEST_F(ModuleCacheTest, EvictsTheLeastRecentlyUsed) {
  const std::string a(100, 'a'), b(100, 'b'), c(100, 'c');
  ASSERT_TRUE(cache(250).store(hash_of(a), a));
  ASSERT_TRUE(cache(250).store(hash_of(b), b));
  age(a, 1000);
  age(b, 2000);
  std::string found;
  ASSERT_TRUE(cache(250).find(hash_of(a), a.size(), &found));  // a is now the newest
  ASSERT_TRUE(cache(250).store(hash_of(c), c));
  EXPECT_TRUE(fs::exists(path(a)));
  EXPECT_FALSE(fs::exists(path(b)));
  EXPECT_TRUE(fs::exists(path(c)));
}

TEST_F(ModuleCacheTest, AHeldImageOutlivesItsEviction) {
  const std::string a(100, 'a'), b(100, 'b');
  ModuleCache session = cache(150);
  ASSERT_TRUE(session.store(hash_of(a), a));
  ASSERT_TRUE(cache(150).store(hash_of(b), b));
  EXPECT_FALSE(fs::exists(path(a)));
  std::string found;
  ASSERT_TRUE(session.find(hash_of(a), a.size(), &found));
  EXPECT_EQ(found, a);
}

TEST_F(ModuleCacheTest, ImagesLargerThanTheBoundAreNotStored) {
  const std::string big(300, 'x');
  ModuleCache c = cache(200);
  EXPECT_FALSE(c.store(hash_of(big), big));
  EXPECT_FALSE(c.holds(hash_of(big)));
  EXPECT_FALSE(fs::exists(path(big)));
}

TEST_F(ModuleCacheTest, WithoutADirectoryNothingIsKept) {
  ModuleCache c({"", 1 << 20});
  const std::string image = "image one";
  std::string found;
  EXPECT_FALSE(c.enabled());
  EXPECT_FALSE(c.store(hash_of(image), image));
  EXPECT_FALSE(c.find(hash_of(image), image.size(), &found));
}

TEST_F(ModuleCacheTest, OtherFilesInTheDirectoryAreLeftAlone) {
  const std::string a(100, 'a');
  ASSERT_TRUE(cache(150).store(hash_of(a), a));
  std::ofstream(dir_ + "/notes.txt") << std::string(1000, 'n');
  const std::string b(100, 'b');
  ASSERT_TRUE(cache(150).store(hash_of(b), b));
  EXPECT_TRUE(fs::exists(dir_ + "/notes.txt"));
  EXPECT_FALSE(fs::exists(path(a)));
}

}  // namespace
