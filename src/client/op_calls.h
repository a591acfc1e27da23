// Requests of ops whose bytes are described once (protocol/op_layouts.h):
// the caller hands the op's Request and gets its Reply, and no call site
// spells out a layout.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "client/runtime.h"
#include "client/transport/connection.h"
#include "protocol/op_layouts.h"

namespace scuda::client {

// Sends Op's request and waits for its reply; a reply that does not decode
// is a bad reply.
template <class Op>
CUresult ask(const typename Op::Request& request, typename Op::Reply* reply) {
  std::vector<uint8_t> bytes;
  const CUresult rc = call(Op::kOp, protocol::encode(request), &bytes);
  if (rc != CUDA_SUCCESS) return rc;
  protocol::Reader r(bytes);
  return protocol::read(r, reply) ? CUDA_SUCCESS : bad_reply(protocol::op_name(Op::kOp));
}

// Sends Op's request and waits for its reply, for an op whose reply carries
// nothing but its result.
template <class Op>
requires std::is_same_v<typename Op::Reply, protocol::Empty> CUresult
ask(const typename Op::Request& request) {
  protocol::Empty none;
  return ask<Op>(request, &none);
}

// Sends Op's request and waits for its reply, for an op whose reply carries
// its outputs also when the driver failed: *reply is set when they came. A
// success without them is a bad reply.
template <class Op>
CUresult ask_reporting(const typename Op::Request& request,
                       std::optional<typename Op::Reply>* reply) {
  std::vector<uint8_t> bytes;
  const CUresult rc = call(Op::kOp, protocol::encode(request), &bytes);
  if (bytes.empty()) return rc == CUDA_SUCCESS ? bad_reply(protocol::op_name(Op::kOp)) : rc;
  protocol::Reader r(bytes);
  typename Op::Reply outputs;
  if (!protocol::read(r, &outputs)) return bad_reply(protocol::op_name(Op::kOp));
  reply->emplace(outputs);
  return rc;
}

// With the connection's lock held: sends Op's request one-way on `conn`,
// its last field's bytes (a string_view) from where they lie, uncopied.
template <class Op>
bool post_data(Connection& conn, const typename Op::Request& request) {
  protocol::Writer head;
  const std::string_view data = protocol::write_head(head, request);
  return conn.send(Op::kOp, protocol::kOneWay, head.data().data(), head.size(), data.data(),
                   data.size());
}

// With the connection's lock held: sends Op's request on `conn` and says
// its id, whose reply the caller reads.
template <class Op>
bool send_request(Connection& conn, const typename Op::Request& request, uint64_t* id) {
  const protocol::Writer w = protocol::encode(request);
  return conn.send(Op::kOp, 0, w.data().data(), w.size(), nullptr, 0, id);
}

// Sends Op's request one-way: a failure comes at the next synchronizing call.
// With `sent`, the request's id.
template <class Op>
CUresult tell(const typename Op::Request& request, uint64_t* sent = nullptr) {
  return post(Op::kOp, protocol::encode(request), sent);
}

}  // namespace scuda::client
