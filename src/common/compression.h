// lz4 for bulk copies, and the rule that says when it pays
// (docs/protocol.md, "Compression").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace scuda::compression {

// SCUDA_COMPRESS: never, when it pays, or whenever data shrinks.
enum class Mode { kOff, kAuto, kOn };
// "off", "auto" or "on"; false for anything else.
bool parse_mode(std::string_view text, Mode* mode);

// The most room an lz4 block of `raw` bytes can take.
size_t bound(size_t raw);
// Compresses `size` bytes into `dst` (room for bound(size)); returns the
// block's size, or 0 when the block would not be smaller than the data.
size_t compress(const void* src, size_t size, void* dst);
// Decodes an untrusted block into `raw` bytes at `dst`; false unless it is a
// valid block of exactly that many bytes.
bool decompress(const void* block, size_t block_size, void* dst, size_t raw);

// Data is sent compressed only when it shrinks at least this much.
constexpr double kMaxRatio = 0.9;
// A chunk is judged by compressing this much of its start.
constexpr size_t kSampleSize = 64u << 10;
// What the first kSampleSize bytes of `data` compress to, as a fraction of
// their size (1 when they do not shrink).
double sample_ratio(const void* data, size_t size);

// lz4's cost, compressing on one side and decompressing on the other, in
// bytes per second of one core each, taken together: a cautious figure
// (compression runs at 0.5-4 GB/s depending on the data, decompression faster).
constexpr double kLz4BytesPerSecond = 1e9;

// Whether data that compresses to `ratio` of its size crosses a link of
// `link_rate` bytes per second (0: not measured yet) sooner compressed,
// counting lz4's time as added to the wire's: the bytes saved must take
// longer to send than lz4 takes to compress and decompress them all.
bool pays(double link_rate, double ratio);

// A link's bulk rate one way, as auto mode estimates it, and its choice for
// each chunk. Compressed frames are too small to measure the link, so while
// it compresses, every kProbeEvery-th chunk that could measure it crosses
// raw: a rate once measured low (a cold connection, a busy moment) cannot
// keep compression on, and with it the lanes off, for good. Used under the
// connection's lock.
class LinkRate {
 public:
  // Chunks lighter than this say little about the rate: buffers absorb them.
  static constexpr size_t kSmallestSample = 1u << 20;
  static constexpr unsigned kProbeEvery = 16;

  // A chunk of `bytes` crossed raw in `seconds`. The estimate rises fast
  // and falls slowly, so that a slow chunk or two does not start
  // compressing on a fast link.
  void observe(size_t bytes, double seconds);
  // Whether a chunk of `size` bytes, expected to shrink to `ratio`, should
  // cross compressed: pays() at the estimate, unless this chunk is a probe.
  bool compress(size_t size, double ratio);
  // Bytes per second; 0 until a chunk has been measured.
  double get() const { return rate_; }

 private:
  double rate_ = 0;
  unsigned chosen_ = 0;  // chunks compression was chosen for, which could measure
};

// A buffer that grows to the largest size asked of it, never zero-filled.
class Scratch {
 public:
  uint8_t* get(size_t size);

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t size_ = 0;
};

}  // namespace scuda::compression
