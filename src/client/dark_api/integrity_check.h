// The answer to slot 1 of the driver's INTEGRITY_CHECK export table
// (d4082055-...), which cudart uses to check the driver it runs on.
//
// It is HMAC-MD2 (RFC 1319 MD2, RFC 2104 HMAC) under a fixed 16-byte key over
// a 48-byte record of the caller's and process's identity followed by one
// 28-byte record per device. Everything here is pure, so it can be tested
// against published vectors; gathering the inputs is export_tables.cc's job.
// Source: ZLUDA's integrity check and its tests; docs/export-tables.md,
// "Integrity check".
#pragma once

#include <cuda.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace scuda::client {

using Digest16 = std::array<uint8_t, 16>;

// Streaming MD2.
class Md2 {
 public:
  // The whole internal state, laid out as the 66-byte buffer ZLUDA's tests
  // pin: X (48 bytes: state, block, state ^ block), checksum (16), the number
  // of bytes waiting in the block, and the last checksum byte.
  using State = std::array<uint8_t, 66>;

  void update(const void* data, size_t size);
  // Pads, appends the checksum and returns the digest; the object is spent.
  Digest16 finish();

  State state() const;
  static Md2 from_state(const State& state);

 private:
  void add_byte(uint8_t b);
  void compress();

  uint8_t x_[48] = {};
  uint8_t checksum_[16] = {};
  uint8_t count_ = 0;
  uint8_t last_ = 0;
};

Digest16 md2(const void* data, size_t size);
// HMAC-MD2: MD2 has a 16-byte block, so a 16-byte key fills it exactly.
Digest16 hmac_md2(const Digest16& key, const void* data, size_t size);

// Hashed as its raw 28 bytes: uuid, then three 32-bit ints.
struct IntegrityDevice {
  CUuuid uuid;
  int32_t pci_domain;
  int32_t pci_bus;
  int32_t pci_device;
};
static_assert(sizeof(IntegrityDevice) == 28);

struct IntegrityInputs {
  uint32_t driver_version;  // what this stand-in's cuDriverGetVersion reports
  uint32_t version;         // the caller's first argument
  uint32_t pid;
  uint32_t tid;                          // pthread_self() cut to 32 bits
  const void* cudart_table;              // the CUDART_INTERFACE table handed out
  const void* integrity_table;           // the INTEGRITY_CHECK table handed out
  const void* check_fn;                  // INTEGRITY_CHECK slot 1 itself
  uint64_t unix_seconds;                 // the caller's second argument
  std::vector<IntegrityDevice> devices;  // in ordinal order
};

// The 16-byte HMAC key (ZLUDA calls it pass1_result).
extern const Digest16 kIntegrityKey;

// The 48-byte record hashed before the devices, in native byte order.
std::array<uint8_t, 48> integrity_record(const IntegrityInputs& in);

// False when version % 10 is 0 or 1: the answer is then a fixed constant and
// none of the other inputs matter.
bool integrity_check_hashes_inputs(uint32_t version);

// The 16 bytes slot 1 writes to its output.
Digest16 integrity_check_hash(const IntegrityInputs& in);

}  // namespace scuda::client
