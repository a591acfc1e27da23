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

// Arrays: a u8 "present" flag, then the count and the items. An out array
// sends its capacity, and for handles one proposed id per slot.
template <class H>
void put_in_handles(Writer& w, const H* p, size_t n) {
  w.u8(p != nullptr);
  if (!p) return;
  w.u64(n);
  for (size_t i = 0; i < n; ++i) w.u64(handle_id(p[i]));
}

template <class T>
void put_in_items(Writer& w, const T* p, size_t n) {
  w.u8(p != nullptr);
  if (!p) return;
  w.u64(n);
  w.bytes(p, n * sizeof(T));
}

template <class H>
void put_out_handles(Writer& w, const H* p, size_t capacity) {
  w.u8(p != nullptr);
  if (!p) return;
  w.u64(capacity);
  for (size_t i = 0; i < capacity; ++i) w.u64(new_handle_id());
}

template <class T>
void put_out_items(Writer& w, const T* p, size_t capacity) {
  w.u8(p != nullptr);
  if (p) w.u64(capacity);
}

template <class H>
void get_out_handles(Reader& r, H* p, size_t capacity) {
  if (!p) return;
  for (size_t i = 0; i < capacity; ++i) p[i] = handle_from_id<H>(r.u64());
}

template <class T>
void get_out_items(Reader& r, T* p, size_t capacity) {
  if (!p) return;
  if (const uint8_t* got = r.take(capacity * sizeof(T))) std::memcpy(p, got, capacity * sizeof(T));
}

inline CUresult finish(const Reader& r, const char* name) {
  return r.done() ? CUDA_SUCCESS : bad_reply(name);
}

}  // namespace scuda::client::gen
