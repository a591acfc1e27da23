// Hand-written context requests.
#include <cstdint>
#include <vector>

#include "common/export_table_ids.h"
#include "protocol/ops.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "server/session/typed_handler.h"

namespace scuda::server {

namespace {

namespace op = protocol::op;
using protocol::Reader;
using protocol::Writer;

CUresult set_current(Session& s, const op::CtxSetCurrent::Request& q, protocol::Empty*) {
  void* ctx = nullptr;
  if (!s.handles().resolve(q.context, HandleKind::CUcontext, &ctx))
    return CUDA_ERROR_INVALID_CONTEXT;
  return s.driver().cuCtxSetCurrent(static_cast<CUcontext>(ctx));
}

// A device's primary context as cudart gets it from the driver (slot 2 of
// the driver's cudart table): still inactive, nothing made on the GPU.
// nullptr when the driver has no such table or slot.
CUcontext inactive_primary(const DriverTable& d, CUdevice dev) {
  const void* table = nullptr;
  if (!d.cuGetExportTable ||
      d.cuGetExportTable(&table, &export_table_id::kCudartInterface) != CUDA_SUCCESS || !table)
    return nullptr;
  constexpr size_t kSlot = 2;
  const auto* words = static_cast<const uintptr_t*>(table);
  if (words[0] < (kSlot + 1) * sizeof(void*) || !words[kSlot]) return nullptr;
  auto get = reinterpret_cast<CUresult (*)(CUcontext*, CUdevice)>(words[kSlot]);
  CUcontext ctx = nullptr;
  return get(&ctx, dev) == CUDA_SUCCESS ? ctx : nullptr;
}

// The handle of a device's primary context, leaving its state unchanged:
// cudart's way where the driver has it, else retain then release, which
// restores the reference count but makes the context on the GPU and
// destroys it again.
CUresult primary_context(Session& s, const op::PrimaryContext::Request& q,
                         op::PrimaryContext::Reply* a) {
  const CUdevice dev = q.device;
  if (!s.handles().can_bind(q.proposed)) return CUDA_ERROR_INVALID_VALUE;
  const DriverTable& d = s.driver();
  CUcontext ctx = inactive_primary(d, dev);
  if (!ctx) {
    if (CUresult rc = d.cuDevicePrimaryCtxRetain(&ctx, dev); rc != CUDA_SUCCESS) return rc;
    d.cuDevicePrimaryCtxRelease_v2(dev);
  }
  a->context = s.handles().bind(q.proposed, HandleKind::CUcontext, ctx);
  return CUDA_SUCCESS;
}

// The driver receives a parameters struct whenever the program gave one,
// empty lists included, as it would natively.
CUresult create(Session& s, const op::CtxCreate::Request& q, op::CtxCreate::Reply* a) {
  if (q.affinity.size() > protocol::kMaxCtxAffinityParams || q.has_params > 1) return kMalformed;
  if (!s.handles().can_bind(q.proposed)) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUexecAffinityParam> affinity;
  for (const op::CtxCreate::Affinity& p : q.affinity) {
    CUexecAffinityParam param{};
    param.type = static_cast<CUexecAffinityType>(p.type);
    param.param.smCount.val = p.sm_count;
    affinity.push_back(param);
  }
  CUctxCreateParams params{};
  params.execAffinityParams = affinity.empty() ? nullptr : affinity.data();
  params.numExecAffinityParams = static_cast<int>(affinity.size());
  CUcontext ctx = nullptr;
  const CUresult rc =
      s.driver().cuCtxCreate_v4(&ctx, q.has_params ? &params : nullptr, q.flags, q.device);
  if (rc == CUDA_SUCCESS) a->context = s.handles().bind(q.proposed, HandleKind::CUcontext, ctx);
  return rc;
}

const HandlerEntry kHandlers[] = {
    typed_entry<op::CtxCreate, create>(),
    typed_entry<op::CtxSetCurrent, set_current>(),
    typed_entry<op::PrimaryContext, primary_context>(),
};

}  // namespace

std::span<const HandlerEntry> context_handlers() { return kHandlers; }

}  // namespace scuda::server
