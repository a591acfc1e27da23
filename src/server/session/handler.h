// The shape of a request handler in the session process.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "protocol/codec.h"

namespace scuda::server {

class Session;

// A handler decodes its request from `in`, checks in.done() before acting,
// and returns kMalformed if the request does not decode exactly. Otherwise it
// returns the CUresult for the client and, on CUDA_SUCCESS, writes its
// outputs to `out`.
using Handler = CUresult (*)(Session& s, protocol::Reader& in, protocol::Writer& out);

// Not CUresults, yet inside the enum's range of values (the driver's codes
// end at 999, so the range ends at 1023): a value outside it is undefined
// behaviour once loaded as a CUresult.
// The request was malformed and the session must end.
constexpr CUresult kMalformed = static_cast<CUresult>(1023);
// The handler wrote the reply itself (Session::begin_reply).
constexpr CUresult kReplied = static_cast<CUresult>(1022);

struct HandlerEntry {
  uint32_t op;
  Handler fn;
  // Payload bytes decoded from `in`; the rest, bulk data, the handler reads
  // itself (Session::read_data), and what it leaves is skipped. 0: all.
  uint32_t head = 0;
};

extern const HandlerEntry kGeneratedHandlers[];
extern const size_t kGeneratedHandlerCount;

}  // namespace scuda::server
