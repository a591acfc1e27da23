// Helpers for the generated client stubs (client_stubs.cc). Copied verbatim
// into the generated directory by codegen/generate.py.
//
// Pass-through is SCUDA_PASSTHROUGH from client/runtime.h.
//
// Every optional pointer travels as a u8 "present" flag first, so the server
// can hand the driver a nullptr and let it report the error itself.
#pragma once

#include <cuda.h>

#include <cstring>
#include <vector>

#include "client/runtime.h"
#include "protocol/ops.h"

namespace scuda::client::gen {

using protocol::Reader;
using protocol::Writer;

template <class T>
void put_inout(Writer& w, const T* p) {
  w.u8(p != nullptr);
  if (p) w.put<T>(*p);
}

template <class T>
void get_inout(Reader& r, T* p) {
  if (p) *p = r.get<T>();
}

inline void put_str(Writer& w, const char* s) {
  w.u8(s != nullptr);
  if (s) w.str(s);
}

// Proposes an id for the object the call creates; returns it (0 when absent).
template <class H>
uint64_t put_out_handle(Writer& w, const H* p) {
  w.u8(p != nullptr);
  if (!p) return 0;
  const uint64_t id = new_handle_id();
  w.u64(id);
  return id;
}

// A one-way create: the client's proposed id is the handle.
template <class H>
void set_out_handle(H* p, uint64_t id) {
  if (p) *p = handle_from_id<H>(id);
}

template <class H>
void get_out_handle(Reader& r, H* p) {
  if (p) *p = handle_from_id<H>(r.u64());
}

inline void put_in_buf(Writer& w, const void* p, size_t n) {
  w.u8(p != nullptr);
  if (p) w.blob(p, n);
}

inline void put_out_buf(Writer& w, const void* p, size_t n) {
  w.u8(p != nullptr);
  if (p) w.u64(n);
}

// The reply must carry exactly the n bytes that were asked for.
inline void get_out_buf(Reader& r, void* p, size_t n) {
  if (!p) return;
  std::string_view got = r.blob();
  if (got.size() != n) return r.fail();
  if (n) std::memcpy(p, got.data(), n);
}

inline CUresult finish(const Reader& r, const char* name) {
  return r.done() ? CUDA_SUCCESS : bad_reply(name);
}

}  // namespace scuda::client::gen
