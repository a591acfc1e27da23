// Kernel node attributes (cuGraphKernelNodeGet/SetAttribute): the value
// crosses as its bytes; an event it names is the client's id on the wire,
// which the session translates both ways (docs/protocol.md, "Graphs").
#include <cuda.h>

#include "client/op_calls.h"
#include "custom.h"
#include "protocol/op_layouts.h"

namespace {

using Attribute = scuda::protocol::op::GraphKernelNodeAttribute;

}  // namespace

CUresult scuda::client::custom::cuGraphKernelNodeSetAttribute(CUgraphNode node,
                                                              CUkernelNodeAttrID attr,
                                                              const CUkernelNodeAttrValue* value) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Attribute::Reply reply;
  return scuda::client::ask<Attribute>(
      {scuda::client::handle_id(node), static_cast<uint32_t>(attr), *value}, &reply);
}

CUresult scuda::client::custom::cuGraphKernelNodeGetAttribute(CUgraphNode node,
                                                              CUkernelNodeAttrID attr,
                                                              CUkernelNodeAttrValue* value) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Attribute::Reply reply;
  const CUresult rc = scuda::client::ask<Attribute>(
      {scuda::client::handle_id(node), static_cast<uint32_t>(attr), std::nullopt}, &reply);
  if (rc != CUDA_SUCCESS) return rc;
  if (!reply.value) return scuda::client::bad_reply("cuGraphKernelNodeGetAttribute");
  *value = *reply.value;
  return CUDA_SUCCESS;
}
