// Pointer attributes. Each value comes back as kPointerValueBytes bytes, zero
// padded; handles among them (context, memory pool) become client ids.
#include "protocol/ops.h"
#include "server/dispatch.h"
#include "server/session.h"

namespace scuda::server {

namespace {

using protocol::Reader;
using protocol::Writer;

constexpr uint32_t kMaxAttributes = 64;

CUresult pointer_attributes(Session& s, Reader& in, Writer& out) {
  const CUdeviceptr ptr = in.u64();
  const uint32_t n = in.u32();
  if (n > kMaxAttributes) return kMalformed;
  std::vector<CUpointer_attribute> attrs(n);
  for (CUpointer_attribute& a : attrs) a = in.get<CUpointer_attribute>();
  if (!in.done()) return kMalformed;
  if (!s.driver().cuPointerGetAttributes) return CUDA_ERROR_NOT_SUPPORTED;
  std::vector<uint64_t> values(n * protocol::kPointerValueBytes / 8, 0);
  std::vector<void*> data(n);
  for (uint32_t i = 0; i < n; ++i) data[i] = &values[i * protocol::kPointerValueBytes / 8];
  CUresult rc = s.driver().cuPointerGetAttributes(n, attrs.data(), data.data(), ptr);
  if (rc != CUDA_SUCCESS) return rc;
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t& word = values[i * protocol::kPointerValueBytes / 8];
    if (attrs[i] == CU_POINTER_ATTRIBUTE_CONTEXT || attrs[i] == CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE)
      word = s.handles().find(reinterpret_cast<void*>(word));
  }
  out.bytes(values.data(), values.size() * sizeof(uint64_t));
  return CUDA_SUCCESS;
}

const HandlerEntry kHandlers[] = {
    {protocol::kOpPointerAttributes, pointer_attributes},
};

}  // namespace

std::span<const HandlerEntry> pointer_handlers() { return kHandlers; }

}  // namespace scuda::server
