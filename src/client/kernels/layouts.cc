#include "client/kernels/layouts.h"

#include <mutex>
#include <unordered_map>

#include "client/kernels/descriptions.h"
#include "client/runtime.h"
#include "client/state.h"
#include "common/lock_order.h"
#include "custom.h"
#include "protocol/op_layouts.h"

namespace scuda::client {

namespace {

constexpr uint32_t kMaxParams = 32768;
// CUDA gives a kernel at most 32764 bytes of parameters. A slot past this
// bound is a lying server's, which would make the client size its buffer by
// it (or wrap around) and copy outside the arguments it packs.
constexpr uint64_t kMaxParamBytes = 64 << 10;

}  // namespace

namespace parts {

struct KernelLayouts {
  RankedMutex mu{LockRank::kReplyTables, "KernelLayouts::mu"};
  std::unordered_map<uint64_t, std::shared_ptr<const Layout>> by_id;
};

}  // namespace parts

namespace {

parts::KernelLayouts& layouts() { return client_state().kernel_layouts.get(); }

template <class H>
CUresult param_info(H handle, size_t index, size_t* offset, size_t* size) {
  std::shared_ptr<const Layout> layout;
  if (CUresult rc = layout_of(handle_id(handle), &layout); rc != CUDA_SUCCESS) return rc;
  if (index >= layout->size() || (!offset && !size)) return CUDA_ERROR_INVALID_VALUE;
  if (offset) *offset = (*layout)[index].offset;
  if (size) *size = (*layout)[index].size;
  return CUDA_SUCCESS;
}

}  // namespace

void note_layout(uint64_t id, std::shared_ptr<const Layout> layout) {
  std::lock_guard lock(layouts().mu);
  layouts().by_id[id] = std::move(layout);
}

std::shared_ptr<const Layout> find_layout(uint64_t id) {
  std::lock_guard lock(layouts().mu);
  auto it = layouts().by_id.find(id);
  return it == layouts().by_id.end() ? nullptr : it->second;
}

bool valid_layout(const Layout& layout) {
  if (layout.size() > kMaxParams) return false;
  for (const protocol::ParamSlot& slot : layout)
    if (slot.offset > kMaxParamBytes || slot.size > kMaxParamBytes - slot.offset) return false;
  return true;
}

}  // namespace scuda::client

CUresult scuda::client::custom::cuFuncGetParamInfo(CUfunction func, size_t index, size_t* offset,
                                                   size_t* size) {
  return scuda::client::param_info(func, index, offset, size);
}

CUresult scuda::client::custom::cuKernelGetParamInfo(CUkernel kernel, size_t index, size_t* offset,
                                                     size_t* size) {
  return scuda::client::param_info(kernel, index, offset, size);
}
