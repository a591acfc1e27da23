#include "protocol/handshake.h"

namespace scuda::protocol {

namespace {

constexpr uint64_t kMaxDevices = 64;
constexpr uint64_t kMaxAttributes = 4096;
constexpr uint64_t kMaxString = 4096;

bool read_bounded_string(Reader& r, std::string* s) {
  std::string_view v = r.blob();
  if (v.size() > kMaxString) r.fail();
  *s = v;
  return r.ok();
}

void encode_device(const DeviceInfo& d, Writer& w) {
  w.str(d.name);
  w.put(d.uuid);
  w.u64(d.total_mem);
  w.str(d.pci_bus_id);
  w.u64(d.attrs.size());
  for (size_t i = 0; i < d.attrs.size(); ++i) {
    w.put<int32_t>(d.attrs[i]);
    w.u8(d.attr_ok[i]);
  }
}

bool decode_device(Reader& r, DeviceInfo* d) {
  read_bounded_string(r, &d->name);
  d->uuid = r.get<CUuuid>();
  d->total_mem = r.u64();
  read_bounded_string(r, &d->pci_bus_id);
  uint64_t n = r.u64();
  if (n > kMaxAttributes) return false;
  d->attrs.resize(n);
  d->attr_ok.resize(n);
  for (uint64_t i = 0; i < n && r.ok(); ++i) {
    d->attrs[i] = r.get<int32_t>();
    d->attr_ok[i] = r.u8();
  }
  return r.ok();
}

}  // namespace

void encode(const QueuePosition& q, Writer& w) {
  w.u32(q.position);
  w.u32(q.waiting);
  w.str(q.reason);
}

bool decode(Reader& r, QueuePosition* q) {
  q->position = r.u32();
  q->waiting = r.u32();
  read_bounded_string(r, &q->reason);
  return r.done();
}

void encode(const Hello& h, Writer& w) {
  w.u64(h.api_hash);
  w.put<int32_t>(h.cuda_version);
  w.str(h.token);
  w.str(h.program);
  w.str(h.join);
  w.str(h.secret);
  w.u64(h.images.size());
  for (const ImageRef& image : h.images) {
    w.put(image.hash);
    w.u64(image.size);
  }
  w.u8(h.visible_set ? 1 : 0);
  w.str(h.visible);
}

bool decode(Reader& r, Hello* h) {
  h->api_hash = r.u64();
  h->cuda_version = r.get<int32_t>();
  read_bounded_string(r, &h->token);
  read_bounded_string(r, &h->program);
  read_bounded_string(r, &h->join);
  read_bounded_string(r, &h->secret);
  const uint64_t n = r.u64();
  if (!r.ok() || n > kMaxKeptImages) return false;
  h->images.resize(n);
  for (ImageRef& image : h->images) {
    image.hash = r.get<ImageHash>();
    image.size = r.u64();
  }
  const uint8_t visible_set = r.u8();
  h->visible_set = visible_set == 1;
  read_bounded_string(r, &h->visible);
  return visible_set <= 1 && r.done();
}

void encode(const Welcome& w, Writer& out) {
  out.put<int32_t>(w.driver_version);
  out.u32(w.session_pid);
  out.u64(w.devices.size());
  for (const DeviceInfo& d : w.devices) encode_device(d, out);
  out.u64(w.images_kept.size());
  for (uint8_t kept : w.images_kept) out.u8(kept);
}

bool decode(Reader& r, Welcome* w) {
  w->driver_version = r.get<int32_t>();
  w->session_pid = r.u32();
  uint64_t n = r.u64();
  if (n > kMaxDevices) return false;
  w->devices.resize(n);
  for (DeviceInfo& d : w->devices)
    if (!decode_device(r, &d)) return false;
  n = r.u64();
  if (!r.ok() || n > kMaxKeptImages) return false;
  w->images_kept.resize(n);
  for (uint8_t& kept : w->images_kept) kept = r.u8();
  return r.done();
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
