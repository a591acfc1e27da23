// What the client learns of a function or kernel after looking it up: its
// parameter layout and its attributes (layouts.h, attributes.h), together a
// *description*. A lookup's reply carries one; library-get-kernel and
// kernel-get-function replies are read only when something needs them
// (docs/protocol.md), so a program that looks up before it launches waits
// for none of them. A lookup that failed leaves the handle unusable: every
// use reports the lookup's error (handle_errors.h).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>

#include "client/kernels/attributes.h"
#include "client/kernels/layouts.h"
#include "protocol/codec.h"

namespace scuda::client {

// Decodes a description of `id` from the reply to a request sent when its
// family's sets were `asked` (attributes.h) and caches it, also for later
// runs (answer_cache.h) under `id`'s lasting name and those sets: the server
// answered after applying them, and before any later one; false if
// malformed.
bool read_description(protocol::Reader& r, uint64_t id, const SetState& asked);

// Caches the descriptions earlier runs were given for `id`'s lasting name
// (lasting_names.h) with the same sets made: one per device; false if there
// is none.
bool recall_description(uint64_t id);

// Sends lookup `op` without waiting; its reply describes `id` (or says why
// the lookup failed) whenever it is read.
CUresult look_up_later(uint32_t op, const protocol::Writer& request, uint64_t id);

// Reads the reply describing `id` if it is still owed; then the error of
// its lookup, if it failed.
CUresult await_description(uint64_t id);

// Asks the server for `id`'s description, with the attributes of device
// `dev` for a kernel (-1: the current context's). One round trip.
CUresult fetch_description(uint64_t id, int dev);

// `id`'s layout: cached, from the reply owed, or else fetched.
CUresult layout_of(uint64_t id, std::shared_ptr<const Layout>* layout);

}  // namespace scuda::client
