// The parameter layout of every function and kernel the client holds,
// learned from its description (descriptions.h), used to pack launch
// arguments.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "protocol/codec.h"
#include "protocol/ops.h"

namespace scuda::client {

using Layout = std::vector<protocol::ParamSlot>;

void note_layout(uint64_t id, std::shared_ptr<const Layout> layout);
// nullptr when `id` names no function or kernel the client knows.
std::shared_ptr<const Layout> find_layout(uint64_t id);
// Decodes a layout as the server sends it; false if malformed. With
// `known`, a layout the server could not tell is accepted, and says so.
bool read_layout(protocol::Reader& r, Layout* layout, bool* known = nullptr);

}  // namespace scuda::client
