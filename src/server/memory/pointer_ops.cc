// Pointer attributes. Each value comes back as kPointerValueBytes bytes, zero
// padded; handles among them (context, memory pool) become client ids.
#include <cstring>
#include <vector>

#include "protocol/op_layouts.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "server/session/typed_handler.h"

namespace scuda::server {

namespace {

namespace op = protocol::op;

CUresult pointer_attributes(Session& s, const op::PointerAttributes::Request& q,
                            op::PointerAttributes::Reply* a) {
  const size_t n = q.attributes.size();
  if (n > protocol::kMaxPointerAttributes) return kMalformed;
  if (!s.driver().cuPointerGetAttributes) return CUDA_ERROR_NOT_SUPPORTED;
  a->values.assign(n, {});
  std::vector<void*> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = a->values[i].data();
  std::vector<CUpointer_attribute> attrs = q.attributes;
  CUresult rc = s.driver().cuPointerGetAttributes(static_cast<unsigned>(n), attrs.data(),
                                                  data.data(), q.address);
  if (rc != CUDA_SUCCESS) return rc;
  for (size_t i = 0; i < n; ++i) {
    if (attrs[i] != CU_POINTER_ATTRIBUTE_CONTEXT && attrs[i] != CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE)
      continue;
    void* handle = nullptr;
    std::memcpy(&handle, data[i], sizeof handle);
    const uint64_t id = s.handles().find(handle);
    std::memcpy(data[i], &id, sizeof id);
  }
  return CUDA_SUCCESS;
}

const HandlerEntry kHandlers[] = {
    typed_entry<op::PointerAttributes, pointer_attributes>(),
};

}  // namespace

std::span<const HandlerEntry> pointer_handlers() { return kHandlers; }

}  // namespace scuda::server
