// The parameter layout of every function and kernel the client holds,
// learned when it was looked up, used to pack launch arguments.
#pragma once

#include <cstdint>
#include <vector>

#include "protocol/codec.h"
#include "protocol/ops.h"

namespace scuda::client {

using Layout = std::vector<protocol::ParamSlot>;

void note_layout(uint64_t id, Layout layout);
// False when `id` names no function or kernel the client knows.
bool find_layout(uint64_t id, Layout* layout);
// Decodes a layout as the server sends it; false if malformed.
bool read_layout(protocol::Reader& r, Layout* layout);

}  // namespace scuda::client
