#include "common/compression.h"

#include <lz4.h>

#include <algorithm>

namespace scuda::compression {

bool parse_mode(std::string_view text, Mode* mode) {
  if (text == "off") *mode = Mode::kOff;
  else if (text == "auto") *mode = Mode::kAuto;
  else if (text == "on") *mode = Mode::kOn;
  else return false;
  return true;
}

// Sizes here are at most a chunk, far below lz4's limit (LZ4_MAX_INPUT_SIZE).
size_t bound(size_t raw) { return static_cast<size_t>(LZ4_compressBound(static_cast<int>(raw))); }

size_t compress(const void* src, size_t size, void* dst) {
  const int n = LZ4_compress_default(static_cast<const char*>(src), static_cast<char*>(dst),
                                     static_cast<int>(size), static_cast<int>(bound(size)));
  return n > 0 && static_cast<size_t>(n) < size ? static_cast<size_t>(n) : 0;
}

bool decompress(const void* block, size_t block_size, void* dst, size_t raw) {
  if (raw > static_cast<size_t>(LZ4_MAX_INPUT_SIZE) || block_size > bound(raw)) return false;
  const int n = LZ4_decompress_safe(static_cast<const char*>(block), static_cast<char*>(dst),
                                    static_cast<int>(block_size), static_cast<int>(raw));
  return n >= 0 && static_cast<size_t>(n) == raw;
}

double sample_ratio(const void* data, size_t size) {
  const size_t n = std::min(size, kSampleSize);
  if (n == 0) return 1;
  const auto out = std::make_unique_for_overwrite<uint8_t[]>(bound(n));
  const size_t block = compress(data, n, out.get());
  return block ? static_cast<double>(block) / static_cast<double>(n) : 1;
}

bool pays(double link_rate, double ratio) {
  return link_rate > 0 && ratio <= kMaxRatio && (1 - ratio) * kLz4BytesPerSecond > link_rate;
}

void LinkRate::observe(size_t bytes, double seconds) {
  if (bytes < kSmallestSample || seconds <= 0) return;
  const double sample = static_cast<double>(bytes) / seconds;
  const double weight = sample > rate_ ? 0.5 : 0.125;
  rate_ = rate_ > 0 ? rate_ + weight * (sample - rate_) : sample;
}

bool LinkRate::compress(size_t size, double ratio) {
  if (!pays(rate_, ratio)) return false;
  return size < kSmallestSample || ++chosen_ % kProbeEvery != 0;
}

uint8_t* Scratch::get(size_t size) {
  if (size > size_) {
    data_ = std::make_unique_for_overwrite<uint8_t[]>(size);
    size_ = size;
  }
  return data_.get();
}

}  // namespace scuda::compression
