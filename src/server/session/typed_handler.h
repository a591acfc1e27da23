// Handlers written against an op's layouts (protocol/op_layouts.h): the
// request arrives decoded, the reply leaves encoded, and the handler holds
// only the op's behaviour.
#pragma once

#include <cuda.h>

#include <optional>

#include "protocol/op_layouts.h"
#include "server/session/handler.h"

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

// The bytes of Op's request that its layout decodes: all of them, unless
// Op names a head (kHeadBytes) that bulk bytes follow, which its handler
// reads itself.
template <class Op>
constexpr uint32_t head_bytes() {
  if constexpr (requires { Op::kHeadBytes; }) return Op::kHeadBytes;
  return 0;
}

// The dispatch row of Op, handled by F.
template <class Op, TypedHandler<Op> F>
constexpr HandlerEntry typed_entry() {
  return {Op::kOp, typed<Op, F>, head_bytes<Op>()};
}

// A handler of an op whose reply carries the driver's outputs also when the
// driver failed (they say why, or keep the client's estimate fresh). F sets
// *reply only when the outputs are real, which is once it reached the
// driver: an earlier failure (a bad id, a missing entry point) replies
// nothing, and no output is made up for it.
template <class Op>
using ReportingHandler = CUresult (*)(Session& s, const typename Op::Request& request,
                                      std::optional<typename Op::Reply>* reply);

// Decodes Op's request (one that does not decode exactly is kMalformed),
// runs F, and writes its reply whenever F set one, whatever the result.
template <class Op, ReportingHandler<Op> F>
CUresult reporting(Session& s, protocol::Reader& in, protocol::Writer& out) {
  typename Op::Request request;
  if (!protocol::read(in, &request)) return kMalformed;
  std::optional<typename Op::Reply> reply;
  const CUresult rc = F(s, request, &reply);
  if (reply) protocol::write(out, *reply);
  return rc;
}

// The dispatch row of Op, handled by F, whose reply may come with a failure.
template <class Op, ReportingHandler<Op> F>
constexpr HandlerEntry reporting_entry() {
  return {Op::kOp, reporting<Op, F>};
}

}  // namespace scuda::server
