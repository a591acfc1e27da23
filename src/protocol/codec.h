// Little-endian, bounds-checked encoding of message payloads.
//
// A Reader never reads past its buffer: the first read that would overrun
// marks it failed, returns zeroes from then on, and the caller checks done()
// (or ok()) before acting on anything it decoded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace scuda::protocol {

class Writer {
 public:
  template <class T>
  void put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes(&value, sizeof value);
  }
  void u8(uint8_t v) { put(v); }
  void u32(uint32_t v) { put(v); }
  void u64(uint64_t v) { put(v); }
  void bytes(const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    buf_.insert(buf_.end(), p, p + size);
  }
  // A length (u64) followed by the bytes.
  void blob(const void* data, size_t size) {
    u64(size);
    bytes(data, size);
  }
  void str(std::string_view s) { blob(s.data(), s.size()); }

  const std::vector<uint8_t>& data() const { return buf_; }
  std::vector<uint8_t>& data() { return buf_; }
  size_t size() const { return buf_.size(); }
  void clear() { buf_.clear(); }

 private:
  std::vector<uint8_t> buf_;
};

class Reader {
 public:
  Reader() = default;
  Reader(const void* data, size_t size) : p_(static_cast<const uint8_t*>(data)), left_(size) {}
  explicit Reader(const std::vector<uint8_t>& v) : Reader(v.data(), v.size()) {}

  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T value{};
    if (const uint8_t* p = take(sizeof(T))) std::memcpy(&value, p, sizeof(T));
    return value;
  }
  uint8_t u8() { return get<uint8_t>(); }
  uint32_t u32() { return get<uint32_t>(); }
  uint64_t u64() { return get<uint64_t>(); }
  bool boolean() { return u8() != 0; }

  // Returns a pointer to `size` bytes inside the buffer, or nullptr (and
  // marks the reader failed) when fewer remain.
  const uint8_t* take(size_t size) {
    if (!ok_ || size > left_) {
      ok_ = false;
      return nullptr;
    }
    const uint8_t* p = p_;
    p_ += size;
    left_ -= size;
    return p;
  }
  // Reads a length-prefixed blob; on failure returns an empty view.
  std::string_view blob() {
    uint64_t n = u64();
    const uint8_t* p = take(n);
    return p ? std::string_view(reinterpret_cast<const char*>(p), n) : std::string_view();
  }
  std::string str() { return std::string(blob()); }

  bool ok() const { return ok_; }
  size_t remaining() const { return left_; }
  // True when every read succeeded and the whole buffer was consumed.
  bool done() const { return ok_ && left_ == 0; }
  void fail() { ok_ = false; }

 private:
  const uint8_t* p_ = nullptr;
  size_t left_ = 0;
  bool ok_ = true;
};

}  // namespace scuda::protocol
