#include "protocol/ops.h"

// The one-shot SHA256() of OpenSSL 3 goes through EVP and its providers,
// which would pull megabytes into the static client library; the deprecated
// low-level calls pull in only the hash.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include <iterator>

namespace scuda::protocol {

namespace {

struct OpRow {
  uint32_t code;
  const char* name;
  OpWay way;
};

constexpr OpRow kRows[] = {
#define SCUDA_OP_ROW(op, code, name, way) {code, name, OpWay::way},
    SCUDA_HAND_WRITTEN_OPS(SCUDA_OP_ROW)
#undef SCUDA_OP_ROW
};

constexpr bool codes_unique_and_hand_written() {
  for (size_t i = 0; i < std::size(kRows); ++i) {
    if (kRows[i].code == 0 || kRows[i].code >= kFirstGeneratedOp) return false;
    for (size_t j = 0; j < i; ++j)
      if (kRows[i].code == kRows[j].code) return false;
  }
  return true;
}
static_assert(codes_unique_and_hand_written(),
              "op_list.h: each hand-written op needs a code of its own below kFirstGeneratedOp");

const OpRow* row_of(uint32_t op) {
  for (const OpRow& row : kRows)
    if (row.code == op) return &row;
  return nullptr;
}

}  // namespace

const char* op_name(uint32_t op) {
  if (const OpRow* row = row_of(op)) return row->name;
  const char* name = generated_op_name(op);
  if (!name) name = nvml_op_name(op);
  return name ? name : "unknown";
}

std::optional<OpWay> op_way(uint32_t op) {
  if (const OpRow* row = row_of(op)) return row->way;
  return std::nullopt;
}

ImageHash image_hash(const void* data, size_t size) {
  ImageHash hash;
  SHA256_CTX ctx;
  SHA256_Init(&ctx);
  SHA256_Update(&ctx, data, size);
  SHA256_Final(hash.data(), &ctx);
  return hash;
}

}  // namespace scuda::protocol
