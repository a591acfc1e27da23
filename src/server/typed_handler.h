// Handlers written against an op's layouts (protocol/op_layouts.h): the
// request arrives decoded, the reply leaves encoded, and the handler holds
// only the op's behaviour.
#pragma once

#include <cuda.h>

#include "protocol/op_layouts.h"
#include "server/handler.h"

namespace scuda::server {

template <class Op>
using TypedHandler = CUresult (*)(Session& s, const typename Op::Request& request,
                                  typename Op::Reply* reply);

// Decodes Op's request (one that does not decode exactly is kMalformed),
// runs F, and writes its reply when F succeeds.
template <class Op, TypedHandler<Op> F>
CUresult typed(Session& s, protocol::Reader& in, protocol::Writer& out) {
  typename Op::Request request;
  if (!protocol::read(in, &request)) return kMalformed;
  typename Op::Reply reply;
  const CUresult rc = F(s, request, &reply);
  if (rc == CUDA_SUCCESS) protocol::write(out, reply);
  return rc;
}

// The dispatch row of Op, handled by F.
template <class Op, TypedHandler<Op> F>
constexpr HandlerEntry typed_entry() {
  return {Op::kOp, typed<Op, F>};
}

}  // namespace scuda::server
