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
// Whether each parameter lies inside the most bytes a launch may carry, and
// there are not more of them than a kernel may have.
bool valid_layout(const Layout& layout);

}  // namespace scuda::client
