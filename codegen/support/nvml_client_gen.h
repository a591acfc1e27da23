// Helpers for the generated NVML stubs (nvml_client_stubs.cc). Copied
// verbatim into the generated directory by codegen/generate.py. The encoders
// are the driver stubs' (client_gen.h); handles come from the NVML
// stand-in's own id range.
#pragma once

#include <nvml.h>

#include "client_gen.h"
#include "nvml/runtime.h"

namespace scuda::nvml::gen {

using client::gen::get_inout;
using client::gen::get_out_buf;
using client::gen::put_in_buf;
using client::gen::put_inout;
using client::gen::put_out_buf;
using client::gen::put_str;
using protocol::Reader;
using protocol::Writer;

template <class H>
void put_out_handle(Writer& w, const H* p) {
  w.u8(p != nullptr);
  if (p) w.u64(new_handle_id());
}

template <class H>
void get_out_handle(Reader& r, H* p) {
  if (p) *p = handle_from_id<H>(r.u64());
}

inline nvmlReturn_t finish(const Reader& r, nvmlReturn_t rc, const char* name) {
  return r.done() ? rc : bad_reply(name);
}

}  // namespace scuda::nvml::gen
