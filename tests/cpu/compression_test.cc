// lz4 and the rule that says when it pays (common/compression.h), and the
// pieces of a compressed device-to-host reply (protocol/compressed_pieces.h).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/compression.h"
#include "protocol/compressed_pieces.h"

namespace scuda {
namespace {

constexpr double kGbit = 1e9 / 8;  // bytes per second

std::vector<uint8_t> random_bytes(size_t size) {
  std::mt19937_64 rng(42);
  std::vector<uint8_t> v(size);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::vector<uint8_t> floats(size_t size) {
  std::vector<uint8_t> v(size);
  for (size_t i = 0; i + sizeof(float) <= size; i += sizeof(float)) {
    const float f = static_cast<float>(i / sizeof(float) % 16) * 0.5f;
    std::memcpy(&v[i], &f, sizeof f);
  }
  return v;
}

TEST(Compression, PaysOnlyOnLinksSlowerThanLz4AndDataThatShrinks) {
  EXPECT_FALSE(compression::pays(0, 0.01)) << "an unmeasured link";
  EXPECT_FALSE(compression::pays(20 * kGbit, 0.0)) << "loopback: tens of Gbit/s";
  EXPECT_FALSE(compression::pays(10 * kGbit, 0.5));
  EXPECT_TRUE(compression::pays(1 * kGbit, 0.1));
  EXPECT_TRUE(compression::pays(1 * kGbit, 0.5));
  EXPECT_FALSE(compression::pays(1 * kGbit, 0.95)) << "too little saved to bother";
  EXPECT_TRUE(compression::pays(0.1 * kGbit, compression::kMaxRatio));
  EXPECT_FALSE(compression::pays(0.1 * kGbit, 1.0));
}

// A link measured slow once compresses, but every kProbeEvery-th chunk big
// enough to measure it goes raw; one fast raw measurement ends compression.
TEST(Compression, ALinkMeasuredSlowOnceIsProbedAgain) {
  using compression::LinkRate;
  LinkRate rate;
  EXPECT_FALSE(rate.compress(LinkRate::kSmallestSample, 0));  // not measured yet
  rate.observe(LinkRate::kSmallestSample, 0.01);              // 100 MB/s: a cold start
  int raw = 0;
  for (unsigned i = 0; i < 4 * LinkRate::kProbeEvery; ++i)
    raw += rate.compress(LinkRate::kSmallestSample, 0) ? 0 : 1;
  EXPECT_EQ(raw, 4);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(rate.compress(LinkRate::kSmallestSample - 1, 0));
  rate.observe(LinkRate::kSmallestSample, 0.0001);  // 10 GB/s, the probe's
  EXPECT_GT(rate.get(), 1e9);
  EXPECT_FALSE(rate.compress(LinkRate::kSmallestSample, 0));
}

TEST(Compression, ModesParse) {
  compression::Mode m = compression::Mode::kAuto;
  EXPECT_TRUE(compression::parse_mode("off", &m));
  EXPECT_EQ(m, compression::Mode::kOff);
  EXPECT_TRUE(compression::parse_mode("on", &m));
  EXPECT_EQ(m, compression::Mode::kOn);
  EXPECT_TRUE(compression::parse_mode("auto", &m));
  EXPECT_EQ(m, compression::Mode::kAuto);
  EXPECT_FALSE(compression::parse_mode("yes", &m));
}

TEST(Compression, SamplesTellPatternsFromNoise) {
  EXPECT_LT(compression::sample_ratio(floats(1 << 20).data(), 1 << 20), 0.1);
  EXPECT_EQ(compression::sample_ratio(random_bytes(1 << 20).data(), 1 << 20), 1.0);
  EXPECT_EQ(compression::sample_ratio(nullptr, 0), 1.0);
}

TEST(Compression, BlocksRoundTripAndNoiseDoesNotShrink) {
  const std::vector<uint8_t> data = floats(100000);
  std::vector<uint8_t> block(compression::bound(data.size()));
  const size_t n = compression::compress(data.data(), data.size(), block.data());
  ASSERT_GT(n, 0u);
  ASSERT_LT(n, data.size() / 10);
  std::vector<uint8_t> out(data.size());
  ASSERT_TRUE(compression::decompress(block.data(), n, out.data(), out.size()));
  EXPECT_EQ(out, data);
  const std::vector<uint8_t> noise = random_bytes(100000);
  EXPECT_EQ(compression::compress(noise.data(), noise.size(), block.data()), 0u);
}

TEST(Compression, UntrustedBlocksAreRefused) {
  const std::vector<uint8_t> data(5000, 7);
  std::vector<uint8_t> block(compression::bound(data.size()));
  const size_t n = compression::compress(data.data(), data.size(), block.data());
  std::vector<uint8_t> out(2 * data.size());
  EXPECT_FALSE(compression::decompress(block.data(), n, out.data(), data.size() + 1));
  EXPECT_FALSE(compression::decompress(block.data(), n, out.data(), data.size() - 1));
  EXPECT_FALSE(compression::decompress(block.data(), n - 1, out.data(), data.size()));
  const std::vector<uint8_t> garbage(64, 0xff);
  EXPECT_FALSE(compression::decompress(garbage.data(), garbage.size(), out.data(), data.size()));
  EXPECT_FALSE(compression::decompress(block.data(), 0, out.data(), data.size()));
}

// Pieces as a server writes them: compressed when they shrink, else raw.
std::vector<uint8_t> write_pieces(const std::vector<uint8_t>& data, size_t piece,
                                  size_t* compressed) {
  std::vector<uint8_t> scratch(protocol::PieceWriter::room(data.size(), piece));
  protocol::PieceWriter w(scratch.data());
  for (size_t at = 0; at < data.size(); at += piece)
    w.add(data.data() + at, static_cast<uint32_t>(std::min(piece, data.size() - at)));
  std::vector<uint8_t> wire;
  for (const iovec& part : w.parts()) {
    const auto* p = static_cast<const uint8_t*>(part.iov_base);
    wire.insert(wire.end(), p, p + part.iov_len);
  }
  EXPECT_EQ(wire.size(), w.size());
  *compressed = w.compressed();
  return wire;
}

TEST(CompressedPieces, PatternsShrinkNoiseGoesRawAndBothReadBack) {
  std::vector<uint8_t> data = floats(300000);
  const std::vector<uint8_t> noise = random_bytes(100000);
  std::copy(noise.begin(), noise.end(), data.begin() + 100000);  // the second piece
  size_t compressed = 0;
  const std::vector<uint8_t> wire = write_pieces(data, 100000, &compressed);
  EXPECT_EQ(compressed, 2u);
  EXPECT_LT(wire.size(), 120000u);
  std::vector<uint8_t> out(data.size());
  protocol::Reader r(wire);
  std::string why;
  ASSERT_TRUE(protocol::read_pieces(r, out.data(), out.size(), &why)) << why;
  EXPECT_EQ(out, data);
}

TEST(CompressedPieces, PiecesThatDoNotFillTheCopyExactlyAreRefused) {
  const std::vector<uint8_t> data = floats(50000);
  size_t compressed = 0;
  const std::vector<uint8_t> wire = write_pieces(data, 20000, &compressed);
  std::vector<uint8_t> out(2 * data.size());
  auto refusal = [&](const std::vector<uint8_t>& bytes, size_t size) {
    protocol::Reader r(bytes);
    std::string why;
    EXPECT_FALSE(protocol::read_pieces(r, out.data(), size, &why));
    return why;
  };
  EXPECT_NE(refusal(wire, data.size() - 1).find("overruns"), std::string::npos);
  EXPECT_NE(refusal(wire, data.size() + 1).find("carry 50000 bytes of 50001"), std::string::npos);
  EXPECT_NE(refusal({wire.begin(), wire.end() - 1}, data.size()).find("cut short"),
            std::string::npos);
  std::vector<uint8_t> bad_block = wire;
  bad_block[sizeof(protocol::PieceHead)] ^= 0xff;
  bad_block[sizeof(protocol::PieceHead) + 1] ^= 0xff;
  EXPECT_NE(refusal(bad_block, data.size()).find("does not decode"), std::string::npos);
  std::vector<uint8_t> wrong_raw = wire;
  wrong_raw[0] += 1;
  EXPECT_FALSE(refusal(wrong_raw, data.size()).empty());
  const std::vector<uint8_t> empty_piece(sizeof(protocol::PieceHead), 0);
  EXPECT_NE(refusal(empty_piece, data.size()).find("overruns"), std::string::npos);
}

}  // namespace
}  // namespace scuda
