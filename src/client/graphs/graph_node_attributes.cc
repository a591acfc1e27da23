// Kernel node attributes (cuGraphKernelNodeGet/SetAttribute): the value
// crosses as its bytes; an event it names is the client's id on the wire,
// which the session translates both ways (docs/protocol.md, "Graphs").
#include <cuda.h>

#include <vector>

#include "client/runtime.h"
#include "custom.h"
#include "protocol/ops.h"

namespace {

using scuda::protocol::Reader;
using scuda::protocol::Writer;

Writer request(CUgraphNode node, CUkernelNodeAttrID attr, bool set) {
  Writer w;
  w.u64(scuda::client::handle_id(node));
  w.u32(static_cast<uint32_t>(attr));
  w.u8(set ? 1 : 0);
  return w;
}

}  // namespace

CUresult scuda::client::custom::cuGraphKernelNodeSetAttribute(CUgraphNode node,
                                                              CUkernelNodeAttrID attr,
                                                              const CUkernelNodeAttrValue* value) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Writer w = request(node, attr, true);
  w.put(*value);
  std::vector<uint8_t> reply;
  return scuda::client::call(scuda::protocol::kOpGraphKernelNodeAttribute, w, &reply);
}

CUresult scuda::client::custom::cuGraphKernelNodeGetAttribute(CUgraphNode node,
                                                              CUkernelNodeAttrID attr,
                                                              CUkernelNodeAttrValue* value) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::vector<uint8_t> reply;
  const CUresult rc = scuda::client::call(scuda::protocol::kOpGraphKernelNodeAttribute,
                                          request(node, attr, false), &reply);
  if (rc != CUDA_SUCCESS) return rc;
  Reader r(reply);
  const auto got = r.get<CUkernelNodeAttrValue>();
  if (!r.done()) return scuda::client::bad_reply("cuGraphKernelNodeGetAttribute");
  *value = got;
  return CUDA_SUCCESS;
}
