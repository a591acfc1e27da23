// The changed-block pull's codec (protocol/changed_blocks.h): a request made
// from the client's copy, the server's reply keeping only the blocks whose
// device bytes differ, and the client's decoding of it, on buffers changed
// in chosen blocks; and untrusted requests and replies refused.
#include "protocol/changed_blocks.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace {

using scuda::protocol::ChangedPull;
using scuda::protocol::Reader;
using scuda::protocol::Writer;
namespace p = scuda::protocol;

constexpr uint32_t kBlock = 4096;

std::vector<uint8_t> random_bytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> out(n);
  for (auto& b : out) b = static_cast<uint8_t>(gen());
  return out;
}

// The server's reply to `request` for the device bytes `device`.
std::vector<uint8_t> reply_to(const std::vector<uint8_t>& request, std::vector<uint8_t> device) {
  Reader in(request);
  ChangedPull req;
  EXPECT_TRUE(p::read_changed_pull(in, 1u << 20, &req));
  std::string bitmap(p::bitmap_bytes(p::block_count(req.size, req.block)), '\0');
  const size_t kept =
      p::keep_changed(req, device.data(), reinterpret_cast<uint8_t*>(bitmap.data()));
  return p::encode(p::ChangedBlocks{bitmap, {reinterpret_cast<const char*>(device.data()), kept}})
      .data();
}

// A reply of `bitmap` and `blocks` as the server would frame them.
std::vector<uint8_t> reply_of(const std::string& bitmap, const std::string& blocks) {
  return p::encode(p::ChangedBlocks{bitmap, blocks}).data();
}

std::vector<uint8_t> request_for(const std::vector<uint8_t>& held, uint32_t block = kBlock) {
  Writer w;
  p::write_changed_pull(w, 0x7000000, held.data(), held.size(), block);
  return w.data();
}

// Runs the whole exchange; returns the bytes the reply carried.
size_t pull(std::vector<uint8_t>& held, const std::vector<uint8_t>& device) {
  const std::vector<uint8_t> reply = reply_to(request_for(held), device);
  Reader in(reply);
  size_t changed = 0;
  std::string why;
  EXPECT_TRUE(p::read_changed(in, held.data(), held.size(), kBlock, &changed, &why)) << why;
  return changed;
}

TEST(ChangedBlocks, AnUnchangedBufferMovesNoBytes) {
  std::vector<uint8_t> held = random_bytes(10 * kBlock + 123, 1);
  const std::vector<uint8_t> device = held;
  EXPECT_EQ(pull(held, device), 0u);
  EXPECT_EQ(held, device);
}

TEST(ChangedBlocks, OnlyTheChangedBlocksMoveAndLandInPlace) {
  const size_t size = 10 * kBlock + 123;  // the last block is short
  std::vector<uint8_t> held = random_bytes(size, 2);
  std::vector<uint8_t> device = held;
  device[3 * kBlock + 17] ^= 1;                                    // block 3
  device[size - 1] ^= 0x80;                                        // the short last block
  for (size_t i = 6 * kBlock; i < 8 * kBlock; ++i) device[i] = 0;  // blocks 6 and 7
  EXPECT_EQ(pull(held, device), 3 * kBlock + 123);
  EXPECT_EQ(held, device);
}

TEST(ChangedBlocks, AWhollyChangedBufferMovesEveryByte) {
  std::vector<uint8_t> held(64 * kBlock, 0);
  const std::vector<uint8_t> device = random_bytes(held.size(), 3);
  EXPECT_EQ(pull(held, device), held.size());
  EXPECT_EQ(held, device);
}

TEST(ChangedBlocks, RequestsThatDoNotDecodeExactlyAreRefused) {
  const std::vector<uint8_t> held = random_bytes(4 * kBlock, 4);
  ChangedPull req;
  {
    std::vector<uint8_t> r = request_for(held);
    Reader in(r);
    EXPECT_FALSE(p::read_changed_pull(in, 2 * kBlock, &req)) << "larger than allowed";
  }
  {
    std::vector<uint8_t> r = request_for(held);
    r.push_back(0);
    Reader in(r);
    EXPECT_FALSE(p::read_changed_pull(in, 1u << 20, &req)) << "a byte too many";
  }
  for (uint32_t block : {0u, 1024u, 3u * kBlock, 2u << 20}) {
    Writer w;
    w.u64(0x7000000);
    w.u64(held.size());
    w.u32(block);
    const size_t hashes = block ? p::block_count(held.size(), block) : 4;
    const std::vector<uint8_t> zeros(hashes * p::kBlockHashSize);
    w.blob(zeros.data(), zeros.size());
    Reader in(w.data());
    EXPECT_FALSE(p::read_changed_pull(in, 8u << 20, &req)) << "block " << block;
  }
  {
    Writer w;
    w.u64(0x7000000);
    w.u64(held.size());
    w.u32(kBlock);
    const std::vector<uint8_t> short_hashes(3 * p::kBlockHashSize);
    w.blob(short_hashes.data(), short_hashes.size());
    Reader in(w.data());
    EXPECT_FALSE(p::read_changed_pull(in, 1u << 20, &req)) << "a hash short";
  }
}

TEST(ChangedBlocks, RepliesThatDisagreeWithTheirBitmapAreRefused) {
  const size_t size = 4 * kBlock;
  std::vector<uint8_t> dst(size, 7);
  size_t changed = 0;
  std::string why;
  auto refused = [&](std::vector<uint8_t> reply) {
    Reader in(reply);
    return !p::read_changed(in, dst.data(), size, kBlock, &changed, &why);
  };
  EXPECT_TRUE(refused({}));                        // nothing at all
  EXPECT_TRUE(refused(reply_of("", "")));          // no bitmap
  EXPECT_TRUE(refused(reply_of("\x01\x00", "")));  // a bitmap too long
  EXPECT_TRUE(refused(reply_of("\x01", "")));      // a block announced, none sent
  EXPECT_TRUE(refused(reply_of("\x01", std::string(2 * kBlock, 1))));  // one too many
  EXPECT_TRUE(refused(reply_of(std::string(1, '\0'), "*")));           // bytes none announced
  std::vector<uint8_t> trailing = reply_of("\x01", std::string(kBlock, 1));
  trailing.push_back(0);
  EXPECT_TRUE(refused(trailing));  // a byte past the reply
  EXPECT_EQ(dst, std::vector<uint8_t>(size, 7)) << "a refused reply writes nothing";
  const std::vector<uint8_t> ok = reply_of("\x04", std::string(kBlock, 9));
  Reader in(ok);
  ASSERT_TRUE(p::read_changed(in, dst.data(), size, kBlock, &changed, &why)) << why;
  EXPECT_EQ(changed, kBlock);
  EXPECT_EQ(dst[2 * kBlock], 9);
  EXPECT_EQ(dst[0], 7);
}

}  // namespace
