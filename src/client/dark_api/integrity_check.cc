#include "client/dark_api/integrity_check.h"

#include <cstring>

namespace scuda::client {
namespace {

// RFC 1319 section 3.2: the permutation of 0..255 built from the digits of pi.
// clang-format off
constexpr uint8_t kPiSubst[256] = {
    41, 46, 67, 201, 162, 216, 124, 1, 61, 54, 84, 161, 236, 240, 6, 19,
    98, 167, 5, 243, 192, 199, 115, 140, 152, 147, 43, 217, 188, 76, 130, 202,
    30, 155, 87, 60, 253, 212, 224, 22, 103, 66, 111, 24, 138, 23, 229, 18,
    190, 78, 196, 214, 218, 158, 222, 73, 160, 251, 245, 142, 187, 47, 238, 122,
    169, 104, 121, 145, 21, 178, 7, 63, 148, 194, 16, 137, 11, 34, 95, 33,
    128, 127, 93, 154, 90, 144, 50, 39, 53, 62, 204, 231, 191, 247, 151, 3,
    255, 25, 48, 179, 72, 165, 181, 209, 215, 94, 146, 42, 172, 86, 170, 198,
    79, 184, 56, 210, 150, 164, 125, 182, 118, 252, 107, 226, 156, 116, 4, 241,
    69, 157, 112, 89, 100, 113, 135, 32, 134, 91, 207, 101, 230, 45, 168, 2,
    27, 96, 37, 173, 174, 176, 185, 246, 28, 70, 97, 105, 52, 64, 126, 15,
    85, 71, 163, 35, 221, 81, 175, 58, 195, 92, 249, 206, 186, 197, 234, 38,
    44, 83, 13, 110, 133, 40, 132, 9, 211, 223, 205, 244, 65, 129, 77, 82,
    106, 220, 55, 200, 108, 193, 171, 250, 36, 225, 123, 8, 12, 189, 177, 74,
    120, 136, 149, 139, 227, 99, 232, 109, 233, 203, 213, 254, 59, 0, 29, 57,
    242, 239, 183, 14, 102, 88, 208, 228, 166, 119, 114, 248, 235, 117, 75, 10,
    49, 68, 80, 180, 143, 237, 31, 26, 219, 153, 141, 51, 159, 17, 131, 20,
};
// clang-format on

// What slot 1 answers, without hashing, when version % 10 is 0 or 1; the
// driver writes them as two native 64-bit words (ZLUDA's integrity check).
constexpr uint64_t kFixedAnswer0[2] = {0x3341181C03CB675Cull, 0x8ED383AA1F4CD1E8ull};
constexpr uint64_t kFixedAnswer1[2] = {0x1841181C03CB675Cull, 0x8ED383AA1F4CD1E8ull};

Digest16 words_to_digest(const uint64_t (&words)[2]) {
  Digest16 out;
  std::memcpy(out.data(), words, out.size());
  return out;
}

Digest16 xor_key(const Digest16& key, uint8_t pad) {
  Digest16 out;
  for (size_t i = 0; i < out.size(); ++i) out[i] = key[i] ^ pad;
  return out;
}

template <class T>
void put_native(uint8_t* at, T value) {
  std::memcpy(at, &value, sizeof value);
}

}  // namespace

// Key bytes: ZLUDA's integrity check, where they are "pass1_result".
const Digest16 kIntegrityKey = {0x14, 0x6A, 0xDD, 0xAE, 0x53, 0xA9, 0xA7, 0x52,
                                0xAA, 0x08, 0x41, 0x36, 0x0B, 0xF5, 0x5A, 0x9F};

void Md2::update(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < size; ++i) add_byte(p[i]);
}

void Md2::add_byte(uint8_t b) {
  x_[16 + count_] = b;
  x_[32 + count_] = static_cast<uint8_t>(b ^ x_[count_]);
  checksum_[count_] ^= kPiSubst[b ^ last_];
  last_ = checksum_[count_];
  count_ = static_cast<uint8_t>((count_ + 1) & 15);
  if (count_ == 0) compress();
}

void Md2::compress() {
  uint8_t t = 0;
  for (int round = 0; round < 18; ++round) {
    for (uint8_t& v : x_) t = v ^= kPiSubst[t];
    t = static_cast<uint8_t>(t + round);
  }
}

Digest16 Md2::finish() {
  const uint8_t pad = static_cast<uint8_t>(16 - count_);
  for (int i = 0; i < pad; ++i) add_byte(pad);
  uint8_t sum[16];
  std::memcpy(sum, checksum_, sizeof sum);
  update(sum, sizeof sum);
  Digest16 out;
  std::memcpy(out.data(), x_, out.size());
  return out;
}

Md2::State Md2::state() const {
  State s;
  std::memcpy(s.data(), x_, 48);
  std::memcpy(s.data() + 48, checksum_, 16);
  s[64] = count_;
  s[65] = last_;
  return s;
}

Md2 Md2::from_state(const State& s) {
  Md2 m;
  std::memcpy(m.x_, s.data(), 48);
  std::memcpy(m.checksum_, s.data() + 48, 16);
  m.count_ = s[64] & 15;
  m.last_ = s[65];
  return m;
}

Digest16 md2(const void* data, size_t size) {
  Md2 m;
  m.update(data, size);
  return m.finish();
}

Digest16 hmac_md2(const Digest16& key, const void* data, size_t size) {
  const Digest16 inner_key = xor_key(key, 0x36);
  Md2 inner;
  inner.update(inner_key.data(), inner_key.size());
  inner.update(data, size);
  const Digest16 inner_digest = inner.finish();

  const Digest16 outer_key = xor_key(key, 0x5c);
  Md2 outer;
  outer.update(outer_key.data(), outer_key.size());
  outer.update(inner_digest.data(), inner_digest.size());
  return outer.finish();
}

std::array<uint8_t, 48> integrity_record(const IntegrityInputs& in) {
  static_assert(sizeof(void*) == 8, "the record holds 64-bit addresses");
  std::array<uint8_t, 48> r{};
  put_native(r.data() + 0, in.driver_version);
  put_native(r.data() + 4, in.version);
  put_native(r.data() + 8, in.pid);
  put_native(r.data() + 12, in.tid);
  put_native(r.data() + 16, in.cudart_table);
  put_native(r.data() + 24, in.integrity_table);
  put_native(r.data() + 32, in.check_fn);
  put_native(r.data() + 40, in.unix_seconds);
  return r;
}

bool integrity_check_hashes_inputs(uint32_t version) { return version % 10 > 1; }

Digest16 integrity_check_hash(const IntegrityInputs& in) {
  switch (in.version % 10) {
    case 0: return words_to_digest(kFixedAnswer0);
    case 1: return words_to_digest(kFixedAnswer1);
    default: break;
  }
  std::vector<uint8_t> message(48 + in.devices.size() * sizeof(IntegrityDevice));
  const auto record = integrity_record(in);
  std::memcpy(message.data(), record.data(), record.size());
  if (!in.devices.empty()) {
    std::memcpy(message.data() + record.size(), in.devices.data(),
                in.devices.size() * sizeof(IntegrityDevice));
  }
  return hmac_md2(kIntegrityKey, message.data(), message.size());
}

}  // namespace scuda::client
