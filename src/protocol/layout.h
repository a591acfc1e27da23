// One description of an op's bytes, shared by the client's encoder, the
// server's decoder and the tests' frames. A layout is a struct whose
// fields() returns std::tie of its members in wire order; write() and read()
// encode and decode any such struct with the codec's rules: a trivially
// copyable field as its bytes, a string as a u64 length and its bytes, a
// vector as a u64 count and its items. op_layouts.h holds the ops'.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "protocol/codec.h"

namespace scuda::protocol {

template <class T>
concept Layout = requires(T t) {
  t.fields();
};

template <class T>
concept Plain = std::is_trivially_copyable_v<T>;

template <Plain T>
void write_field(Writer& w, const T& v) {
  w.put(v);
}
inline void write_field(Writer& w, const std::string& s) { w.str(s); }
template <Plain T>
void write_field(Writer& w, const std::vector<T>& v) {
  w.u64(v.size());
  w.bytes(v.data(), v.size() * sizeof(T));
}

template <Plain T>
void read_field(Reader& r, T& v) {
  v = r.get<T>();
}
inline void read_field(Reader& r, std::string& s) { s = r.str(); }
// A count larger than the bytes left could hold fails the reader before
// anything is allocated.
template <Plain T>
void read_field(Reader& r, std::vector<T>& v) {
  const uint64_t n = r.u64();
  if (!r.ok() || n > r.remaining() / sizeof(T)) {
    r.fail();
    v.clear();
    return;
  }
  v.resize(n);
  if (const uint8_t* p = r.take(n * sizeof(T))) std::memcpy(v.data(), p, n * sizeof(T));
}

// Appends `layout`'s fields to `w`.
template <Layout T>
void write(Writer& w, const T& layout) {
  std::apply([&](const auto&... f) { (write_field(w, f), ...); }, const_cast<T&>(layout).fields());
}

// Encodes `layout` alone.
template <Layout T>
Writer encode(const T& layout) {
  Writer w;
  write(w, layout);
  return w;
}

// Fills `layout` from `r`; true when every field read and nothing is left.
template <Layout T>
bool read(Reader& r, T* layout) {
  std::apply([&](auto&... f) { (read_field(r, f), ...); }, layout->fields());
  return r.done();
}

// The layout with no fields: an op that carries nothing one way.
struct Empty {
  auto fields() { return std::tie(); }
};

}  // namespace scuda::protocol
