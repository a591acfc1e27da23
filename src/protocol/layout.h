// One description of an op's bytes, shared by the client's encoder, the
// server's decoder and the tests' frames. A layout is a struct whose
// fields() returns std::tie of its members in wire order; write() and read()
// encode and decode any such struct with the codec's rules: a trivially
// copyable field as its bytes, a string as a u64 length and its bytes, a
// vector as a u64 count and its items, an optional as a u8 (1: present)
// and then its value, a layout inside another as its fields. A string_view
// crosses as a string does and is read as a view into the bytes read, which
// must outlive it: a data path's bytes are not copied. op_layouts.h holds
// the ops'.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "protocol/codec.h"

namespace scuda::protocol {

template <class T>
concept Layout = requires(T t) {
  t.fields();
};

// A field that crosses as its bytes. A layout never does, even when it is
// trivially copyable: a string_view among its fields must cross as a length
// and its bytes, not as a pointer.
template <class T>
concept Plain = std::is_trivially_copyable_v<T> && !Layout<T>;

// A layout inside another, field by field (defined below, declared first so
// that every field overload finds it).
template <Layout T>
requires(!Plain<T>) void write_field(Writer& w, const T& v);
template <Layout T>
requires(!Plain<T>) void read_field(Reader& r, T& v);
template <Layout T>
requires(!Plain<T>) void write_field(Writer& w, const std::vector<T>& v);
template <Layout T>
requires(!Plain<T>) void read_field(Reader& r, std::vector<T>& v);

template <Plain T>
void write_field(Writer& w, const T& v) {
  w.put(v);
}
inline void write_field(Writer& w, const std::string& s) { w.str(s); }
inline void write_field(Writer& w, std::string_view s) { w.str(s); }
template <Plain T>
void write_field(Writer& w, const std::vector<T>& v) {
  w.u64(v.size());
  w.bytes(v.data(), v.size() * sizeof(T));
}

inline void write_field(Writer& w, const std::vector<std::string>& v) {
  w.u64(v.size());
  for (const std::string& s : v) w.str(s);
}
template <class T>
void write_field(Writer& w, const std::optional<T>& v) {
  w.u8(v.has_value());
  if (v) write_field(w, *v);
}

template <Plain T>
void read_field(Reader& r, T& v) {
  v = r.get<T>();
}
inline void read_field(Reader& r, std::string& s) { s = r.str(); }
inline void read_field(Reader& r, std::string_view& s) { s = r.blob(); }

// A count larger than the bytes left could hold, at `least` bytes an item,
// fails the reader before anything is allocated.
inline bool count_fits(Reader& r, uint64_t n, size_t least) {
  if (r.ok() && n <= r.remaining() / least) return true;
  r.fail();
  return false;
}

template <Plain T>
void read_field(Reader& r, std::vector<T>& v) {
  const uint64_t n = r.u64();
  v.clear();
  if (!count_fits(r, n, sizeof(T)) || n == 0) return;  // an empty one has no data() to copy to
  v.resize(n);
  if (const uint8_t* p = r.take(n * sizeof(T))) std::memcpy(v.data(), p, n * sizeof(T));
}
inline void read_field(Reader& r, std::vector<std::string>& v) {
  const uint64_t n = r.u64();
  v.clear();
  if (!count_fits(r, n, sizeof(uint64_t))) return;  // each string's length
  v.resize(n);
  for (std::string& s : v) s = r.str();
}
// Anything but 0 or 1 ahead of the value fails the reader.
template <class T>
void read_field(Reader& r, std::optional<T>& v) {
  const uint8_t present = r.u8();
  v.reset();
  if (present > 1) r.fail();
  if (present != 1) return;
  T value{};
  read_field(r, value);
  v = std::move(value);
}

// Appends `layout`'s fields to `w`.
template <Layout T>
void write(Writer& w, const T& layout) {
  std::apply([&](const auto&... f) { (write_field(w, f), ...); }, const_cast<T&>(layout).fields());
}

// Fills `layout` from `r`, leaving what follows it: for a layout inside
// another, or one that bytes written apart follow (a launch's arguments).
template <Layout T>
void read_fields(Reader& r, T& layout) {
  std::apply([&](auto&... f) { (read_field(r, f), ...); }, layout.fields());
}

template <class T>
constexpr bool kIsOptional = false;
template <class T>
constexpr bool kIsOptional<std::optional<T>> = true;
template <class T>
constexpr bool kIsVector = false;
template <class T>
constexpr bool kIsVector<std::vector<T>> = true;

template <Layout T>
constexpr size_t min_wire_size();

// The fewest bytes a field of type U takes on the wire.
template <class U>
constexpr size_t min_field_size() {
  using V = std::remove_cvref_t<U>;
  if constexpr (kIsVector<V> || std::is_same_v<V, std::string> ||
                std::is_same_v<V, std::string_view>)
    return sizeof(uint64_t);                    // a count or length
  else if constexpr (kIsOptional<V>) return 1;  // its presence byte
  else if constexpr (Plain<V>) return sizeof(V);
  else return min_wire_size<V>();
}

// The fewest bytes a layout of type T takes on the wire.
template <Layout T>
constexpr size_t min_wire_size() {
  using Fields = decltype(std::declval<T&>().fields());
  return []<size_t... I>(std::index_sequence<I...>) {
    return (size_t{0} + ... + min_field_size<std::tuple_element_t<I, Fields>>());
  }
  (std::make_index_sequence<std::tuple_size_v<Fields>>{});
}

template <Layout T>
requires(!Plain<T>) void write_field(Writer& w, const T& v) { write(w, v); }
template <Layout T>
requires(!Plain<T>) void read_field(Reader& r, T& v) { read_fields(r, v); }
template <Layout T>
requires(!Plain<T>) void write_field(Writer& w, const std::vector<T>& v) {
  w.u64(v.size());
  for (const T& item : v) write(w, item);
}
// A count past what the bytes left could hold, at each item's fewest bytes,
// fails the reader before anything is allocated.
template <Layout T>
requires(!Plain<T>) void read_field(Reader& r, std::vector<T>& v) {
  const uint64_t n = r.u64();
  v.clear();
  if (!count_fits(r, n, std::max<size_t>(1, min_wire_size<T>()))) return;
  v.resize(n);
  for (T& item : v) read_fields(r, item);
}

// Writes `layout` but the bytes of its last field, a string_view, whose
// length it does write; returns those bytes, which a data path's sender
// sends from where they lie, right after, instead of copying them.
template <Layout T>
std::string_view write_head(Writer& w, const T& layout) {
  auto f = const_cast<T&>(layout).fields();
  constexpr size_t n = std::tuple_size_v<decltype(f)>;
  static_assert(std::is_same_v<std::remove_cvref_t<std::tuple_element_t<n - 1, decltype(f)>>,
                               std::string_view>,
                "write_head is for layouts whose last field is a string_view");
  [&]<size_t... I>(std::index_sequence<I...>) { (write_field(w, std::get<I>(f)), ...); }
  (std::make_index_sequence<n - 1>{});
  const std::string_view data = std::get<n - 1>(f);
  w.u64(data.size());
  return data;
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
  read_fields(r, *layout);
  return r.done();
}

// The layout with no fields: an op that carries nothing one way.
struct Empty {
  auto fields() { return std::tie(); }
};

}  // namespace scuda::protocol
