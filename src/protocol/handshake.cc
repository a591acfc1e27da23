#include "protocol/handshake.h"

#include <initializer_list>

namespace scuda::protocol {

namespace {

constexpr uint64_t kMaxDevices = 64;
constexpr uint64_t kMaxAttributes = 4096;
constexpr uint64_t kMaxString = 4096;

bool short_strings(std::initializer_list<const std::string*> strings) {
  for (const std::string* s : strings)
    if (s->size() > kMaxString) return false;
  return true;
}

bool well_formed(const DeviceInfo& d) {
  return short_strings({&d.name, &d.pci_bus_id}) && d.attrs.size() <= kMaxAttributes &&
         d.attr_ok.size() == d.attrs.size();
}

}  // namespace

void encode(const QueuePosition& q, Writer& w) { write(w, q); }

bool decode(Reader& r, QueuePosition* q) { return read(r, q) && short_strings({&q->reason}); }

void encode(const Hello& h, Writer& w) { write(w, h); }

bool decode(Reader& r, Hello* h) {
  return read(r, h) && short_strings({&h->token, &h->program, &h->join, &h->secret, &h->visible}) &&
         h->images.size() <= kMaxKeptImages && h->visible_set <= 1;
}

void encode(const Welcome& w, Writer& out) { write(out, w); }

bool decode(Reader& r, Welcome* w) {
  if (!read(r, w) || w->devices.size() > kMaxDevices || w->images_kept.size() > kMaxKeptImages)
    return false;
  for (const DeviceInfo& d : w->devices)
    if (!well_formed(d)) return false;
  return true;
}

bool tokens_equal(const std::string& a, const std::string& b) {
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  volatile uint8_t diff = a.size() != b.size();
  for (size_t i = 0; i < n; ++i) {
    uint8_t x = i < a.size() ? static_cast<uint8_t>(a[i]) : 0;
    uint8_t y = i < b.size() ? static_cast<uint8_t>(b[i]) : 0;
    diff = diff | (x ^ y);
  }
  return diff == 0;
}

}  // namespace scuda::protocol
