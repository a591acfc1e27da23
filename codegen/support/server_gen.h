// Helpers for the generated request handlers (server_handlers.cc). Copied
// verbatim into the generated directory by codegen/generate.py.
//
// Each decoder mirrors a client_gen.h encoder: a u8 "present" flag, then the
// value. An absent pointer reaches the driver as nullptr.
#pragma once

#include <cuda.h>

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "protocol/ops.h"
#include "server/handler.h"
#include "server/session.h"

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
template <class H>
void put_out_handle(Session& s, Writer& out, const OutHandle<H>& h, HandleKind kind) {
  if (!h.present) return;
  out.u64(h.value ? s.handles().bind(h.proposed, kind, h.value) : 0);
}

template <class H>
bool resolve(Session& s, uint64_t id, HandleKind kind, H* out) {
  void* real = nullptr;
  if (!s.handles().resolve(id, kind, &real)) return false;
  *out = static_cast<H>(real);
  return true;
}

// Word-aligned storage, since the driver may read the bytes as any type.
struct InBuf {
  bool present = false;
  std::vector<uint64_t> words;
  void* ptr() { return present ? words.data() : nullptr; }
};

// The size of what a pointer parameter points to; 0 for void.
template <class P>
constexpr size_t pointee_size() {
  using T = std::remove_cv_t<std::remove_pointer_t<P>>;
  if constexpr (std::is_void_v<T>) {
    return 0;
  } else {
    return sizeof(T);
  }
}

// A buffer shorter than `min_size` (what the driver will read) fails the
// request, so a client cannot make the driver read past it.
inline InBuf get_in_buf(Reader& in, size_t min_size) {
  InBuf b;
  b.present = in.boolean();
  if (!b.present) return b;
  std::string_view bytes = in.blob();
  if (bytes.size() < min_size) in.fail();
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

}  // namespace scuda::server::gen
