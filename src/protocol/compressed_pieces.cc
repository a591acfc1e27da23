#include "protocol/compressed_pieces.h"

#include <cstring>

#include <fmt/format.h>

#include "common/compression.h"

namespace scuda::protocol {

bool read_pieces(Reader& in, uint8_t* dst, size_t size, std::string* error) {
  size_t at = 0;
  while (in.remaining()) {
    const auto head = in.get<PieceHead>();
    if (!in.ok() || head.raw == 0 || head.raw > size - at) {
      *error = fmt::format("a piece at byte {} of {} overruns the copy", at, size);
      return false;
    }
    const uint8_t* p = in.take(head.block ? head.block : head.raw);
    if (!p) {
      *error = fmt::format("the piece at byte {} is cut short", at);
      return false;
    }
    if (!head.block) {
      std::memcpy(dst + at, p, head.raw);
    } else if (!compression::decompress(p, head.block, dst + at, head.raw)) {
      *error =
          fmt::format("the lz4 block at byte {} does not decode to its {} bytes", at, head.raw);
      return false;
    }
    at += head.raw;
  }
  if (at == size) return true;
  *error = fmt::format("the pieces carry {} bytes of {}", at, size);
  return false;
}

size_t PieceWriter::room(size_t size, size_t piece) {
  return (size + piece - 1) / piece * (sizeof(PieceHead) + compression::bound(piece));
}

void PieceWriter::add(const uint8_t* piece, uint32_t size) {
  const bool try_it = compression::sample_ratio(piece, size) <= compression::kMaxRatio;
  const size_t n = try_it ? compression::compress(piece, size, free_ + sizeof(PieceHead)) : 0;
  const PieceHead head{size, static_cast<uint32_t>(n)};
  std::memcpy(free_, &head, sizeof head);  // blocks leave heads unaligned
  if (n) {
    parts_.push_back({free_, sizeof(PieceHead) + n});
    ++compressed_;
    compressed_raw_ += size;
  } else {
    parts_.push_back({free_, sizeof(PieceHead)});
    parts_.push_back({const_cast<uint8_t*>(piece), size});
  }
  free_ += sizeof(PieceHead) + n;
  size_ += sizeof(PieceHead) + (n ? n : size);
}

}  // namespace scuda::protocol
