#include "server/kernels/launch_attributes.h"

#include "server/session/session.h"

namespace scuda::server {

namespace {

// The event an attribute names, or nullptr for one that names none.
CUevent* event_of(CUlaunchAttribute* a) {
  switch (a->id) {
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT: return &a->value.programmaticEvent.event;
    case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT: return &a->value.launchCompletionEvent.event;
    default: return nullptr;
  }
}

}  // namespace

CUresult translate_attribute(Session& s, CUlaunchAttribute* a, AttributeUse use) {
  if (a->id == CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE && use == AttributeUse::kLaunch)
    return CUDA_ERROR_NOT_SUPPORTED;  // graph nodes only
  CUevent* event = event_of(a);
  if (event == nullptr) return CUDA_SUCCESS;
  void* real = nullptr;
  if (!s.handles().resolve(reinterpret_cast<uintptr_t>(*event), HandleKind::CUevent, &real))
    return CUDA_ERROR_INVALID_HANDLE;
  *event = static_cast<CUevent>(real);
  return CUDA_SUCCESS;
}

void name_attribute_handles(Session& s, CUlaunchAttribute* a) {
  if (CUevent* event = event_of(a))
    *event = reinterpret_cast<CUevent>(static_cast<uintptr_t>(s.handles().find(*event)));
}

}  // namespace scuda::server
