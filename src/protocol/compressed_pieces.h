// The data of a compressed device-to-host reply (kCopyCompressed): pieces,
// each a PieceHead and then its lz4 block, or its raw bytes when `block` is
// 0 (the piece did not shrink). The pieces' raw sizes add up to the copy's.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "protocol/codec.h"

namespace scuda::protocol {

struct PieceHead {
  uint32_t raw;    // the piece's bytes
  uint32_t block;  // its lz4 block's bytes; 0: the raw bytes follow
};

// Decodes untrusted pieces into the `size` bytes at `dst`; false (and why)
// unless they fill exactly those bytes.
bool read_pieces(Reader& in, uint8_t* dst, size_t size, std::string* error);

// Lays out a reply's pieces for one writev: a piece whose sample shrinks is
// compressed into the scratch memory, and one that does not is sent from
// where it lies, which must stay put until then.
class PieceWriter {
 public:
  // `scratch` has room(size) bytes for the pieces of a copy of `size` bytes.
  static size_t room(size_t size, size_t piece);
  explicit PieceWriter(uint8_t* scratch) : free_(scratch) {}

  void add(const uint8_t* piece, uint32_t size);
  std::span<iovec> parts() { return parts_; }
  size_t size() const { return size_; }
  // Pieces sent compressed and their raw bytes, for stats.
  size_t compressed() const { return compressed_; }
  size_t compressed_raw() const { return compressed_raw_; }

 private:
  uint8_t* free_;
  std::vector<iovec> parts_;
  size_t size_ = 0;
  size_t compressed_ = 0;
  size_t compressed_raw_ = 0;
};

}  // namespace scuda::protocol
