// Helpers for the generated request handlers (server_handlers.cc). Copied
// verbatim into the generated directory by codegen/generate.py.
//
// Each decoder mirrors a client_gen.h encoder: a u8 "present" flag, then the
// value. An absent pointer reaches the driver as nullptr.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "protocol/ops.h"
#include "server/session/handler.h"
#include "server/session/session.h"

namespace scuda::server::gen {

using protocol::Reader;
using protocol::Writer;

// The largest output buffer a client may ask the server to allocate.
constexpr uint64_t kMaxOutBytes = uint64_t{64} << 20;

template <class T>
struct InOut {
  bool present = false;
  T value{};
  T* ptr() { return present ? &value : nullptr; }
};

template <class T>
InOut<T> get_inout(Reader& in) {
  InOut<T> v;
  v.present = in.boolean();
  if (v.present) v.value = in.get<T>();
  return v;
}

template <class T>
void put_inout(Writer& out, const InOut<T>& v) {
  if (v.present) out.put<T>(v.value);
}

struct InStr {
  bool present = false;
  std::string text;
  const char* ptr() const { return present ? text.c_str() : nullptr; }
};

inline InStr get_str(Reader& in) {
  InStr s;
  s.present = in.boolean();
  if (s.present) s.text = in.str();
  return s;
}

template <class H>
struct OutHandle {
  bool present = false;
  uint64_t proposed = 0;
  H value{};
  H* ptr() { return present ? &value : nullptr; }
};

template <class H>
OutHandle<H> get_out_handle(Reader& in) {
  OutHandle<H> h;
  h.present = in.boolean();
  if (h.present) h.proposed = in.u64();
  return h;
}

template <class H>
bool can_bind(Session& s, const OutHandle<H>& h) {
  return !h.present || s.handles().can_bind(h.proposed);
}

// Replies the id the client must use: 0 for a null handle.
// Whether the client reads this request's reply (the ids bound for it).
inline bool answered(Session& s) { return !(s.request().flags & protocol::kOneWay); }

template <class H>
void put_out_handle(Session& s, Writer& out, const OutHandle<H>& h, HandleKind kind) {
  if (!h.present) return;
  out.u64(h.value ? s.handles().bind(h.proposed, kind, h.value, answered(s)) : 0);
}

template <class H>
bool resolve(Session& s, uint64_t id, HandleKind kind, H* out) {
  void* real = nullptr;
  if (!s.handles().resolve(id, kind, &real)) return false;
  *out = static_cast<H>(real);
  return true;
}

// Word-aligned storage, since the driver may read the bytes as any type.
// The handler checks `size` against the annotation's byte count.
struct InBuf {
  bool present = false;
  uint64_t size = 0;
  std::vector<uint64_t> words;
  void* ptr() { return present ? words.data() : nullptr; }
};

inline InBuf get_in_buf(Reader& in) {
  InBuf b;
  b.present = in.boolean();
  if (!b.present) return b;
  std::string_view bytes = in.blob();
  b.size = bytes.size();
  b.words.resize(bytes.size() / 8 + 1);
  if (!bytes.empty()) std::memcpy(b.words.data(), bytes.data(), bytes.size());
  return b;
}

struct OutBuf {
  bool present = false;
  uint64_t size = 0;
  std::vector<uint64_t> words;
  void* ptr() { return present ? words.data() : nullptr; }
  // False when the client asked for more than kMaxOutBytes.
  bool allocate() {
    if (size > kMaxOutBytes) return false;
    if (present) words.resize(size / 8 + 1);
    return true;
  }
};

inline OutBuf get_out_buf(Reader& in) {
  OutBuf b;
  b.present = in.boolean();
  if (b.present) b.size = in.u64();
  return b;
}

inline void put_out_buf(Writer& out, OutBuf& b) {
  if (b.present) out.blob(b.words.data(), b.size);
}

// The longest array a request may carry or ask for.
constexpr uint64_t kMaxArrayItems = uint64_t{1} << 20;

// An array the client sends: `count` items, or a null pointer. fits() checks
// it against the count parameter the driver will trust.
template <class T>
struct InItems {
  bool present = false;
  std::vector<T> items;
  T* ptr() { return present ? items.data() : nullptr; }
  template <class N>
  bool fits(N count) const {
    return !present || items.size() == static_cast<uint64_t>(count);
  }
};

template <class T>
InItems<T> get_in_items(Reader& in) {
  InItems<T> a;
  a.present = in.boolean();
  if (!a.present) return a;
  const uint64_t n = in.u64();
  const uint8_t* bytes = n <= kMaxArrayItems ? in.take(n * sizeof(T)) : nullptr;
  if (!bytes) return in.fail(), a;
  a.items.resize(n);
  // An empty vector's data() may be null, which memcpy must not be given.
  if (n) std::memcpy(a.items.data(), bytes, n * sizeof(T));
  return a;
}

// Handles arrive as ids; resolve_handles() fills `items` with the driver's.
template <class H>
struct InHandles : InItems<H> {
  std::vector<uint64_t> ids;
};

template <class H>
InHandles<H> get_in_handles(Reader& in) {
  InHandles<H> a;
  a.present = in.boolean();
  if (!a.present) return a;
  const uint64_t n = in.u64();
  if (n > kMaxArrayItems || n * 8 > in.remaining()) return in.fail(), a;
  a.ids.resize(n);
  for (uint64_t& id : a.ids) id = in.u64();
  a.items.resize(n);
  return a;
}

template <class H>
bool resolve_handles(Session& s, InHandles<H>* a, HandleKind kind) {
  for (size_t i = 0; i < a->ids.size(); ++i)
    if (!resolve(s, a->ids[i], kind, &a->items[i])) return false;
  return true;
}

// An array the driver fills: room for `capacity` items. fits() checks that
// the count the driver is given (in and out) is no more than that.
template <class T>
struct OutItems {
  bool present = false;
  std::vector<T> items;
  T* ptr() { return present ? items.data() : nullptr; }
  template <class N>
  bool fits(const InOut<N>& count) const {
    return !present || (count.present && count.value <= items.size());
  }
};

template <class T>
OutItems<T> get_out_items(Reader& in) {
  OutItems<T> a;
  a.present = in.boolean();
  if (!a.present) return a;
  const uint64_t capacity = in.u64();
  if (capacity > kMaxArrayItems) return in.fail(), a;
  a.items.resize(capacity);
  return a;
}

template <class T>
void put_out_items(Writer& out, const OutItems<T>& a) {
  if (a.present) out.bytes(a.items.data(), a.items.size() * sizeof(T));
}

// Out handles carry one proposed id per slot, for objects new to the session.
template <class H>
struct OutHandles : OutItems<H> {
  std::vector<uint64_t> proposed;
};

template <class H>
OutHandles<H> get_out_handles(Reader& in) {
  OutHandles<H> a;
  a.present = in.boolean();
  if (!a.present) return a;
  const uint64_t capacity = in.u64();
  if (capacity > kMaxArrayItems || capacity * 8 > in.remaining()) return in.fail(), a;
  a.proposed.resize(capacity);
  for (uint64_t& id : a.proposed) id = in.u64();
  a.items.resize(capacity);
  return a;
}

template <class H>
bool can_bind_all(Session& s, const OutHandles<H>& a) {
  std::vector<uint64_t> ids = a.proposed;
  std::sort(ids.begin(), ids.end());
  if (std::adjacent_find(ids.begin(), ids.end()) != ids.end()) return false;
  for (uint64_t id : ids)
    if (!s.handles().can_bind(id)) return false;
  return true;
}

// Replies one id per slot: the session's id for a handle it knows, else the
// proposed one; 0 for a slot the driver left empty.
template <class H>
void put_out_handles(Session& s, Writer& out, const OutHandles<H>& a, HandleKind kind) {
  for (size_t i = 0; i < a.items.size(); ++i)
    out.u64(a.items[i] ? s.handles().bind(a.proposed[i], kind, a.items[i], answered(s)) : 0);
}

}  // namespace scuda::server::gen
