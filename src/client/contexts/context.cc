// cuCtx* and cuDevicePrimaryCtx*: the per-thread stack is the client's; the
// server creates and destroys the contexts themselves.
#include "client/contexts/context.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/dark_api/context_storage.h"
#include "client/op_calls.h"
#include "client/pools/route.h"
#include "client/runtime.h"
#include "client/state.h"
#include "client/transport/session.h"
#include "common/lock_order.h"
#include "custom.h"
#include "forward.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

struct Primary {
  uint64_t id = 0;
  int refs = 0;
  // The driver's answer to cuDevicePrimaryCtxGetState, while still valid.
  bool state_known = false;
  unsigned flags = 0;
  int active = 0;
};

}  // namespace

namespace parts {

struct Contexts {
  RankedMutex mu{LockRank::kLeaf, "Contexts::mu"};
  std::map<CUdevice, Primary> primaries;
  std::map<uint64_t, CUdevice> devices;  // every known context's device
};

}  // namespace parts

namespace {

parts::Contexts& contexts() { return client_state().contexts.get(); }

// Bumped when a context is forgotten: each thread keeps its last answer of
// known_context, which holds while this has not moved (ids are never
// reused), so the common question takes no lock shared between threads.
std::atomic<uint64_t> g_forgotten{0};

// Never destroyed: a program's exit handlers (and other thread-local
// destructors) may push, pop and ask for the current context after this
// thread's thread-local objects are gone. A thread's stack outlives it.
std::vector<uint64_t>& context_stack() {
  SCUDA_HOT_TLS thread_local std::vector<uint64_t>* stack = nullptr;
  if (!stack) stack = new std::vector<uint64_t>;
  return *stack;
}

void remember(uint64_t id, CUdevice dev) {
  std::lock_guard lock(contexts().mu);
  contexts().devices[id] = dev;
}

bool known_context(uint64_t id, CUdevice* dev) {
  struct Last {
    uint64_t id = 0;
    uint64_t forgotten = 0;
    CUdevice dev = 0;
  };
  SCUDA_HOT_TLS thread_local Last last;
  const uint64_t forgotten = g_forgotten.load(std::memory_order_acquire);
  if (id && last.id == id && last.forgotten == forgotten) {
    if (dev) *dev = last.dev;
    return true;
  }
  std::lock_guard lock(contexts().mu);
  auto it = contexts().devices.find(id);
  if (it == contexts().devices.end()) return false;
  if (dev) *dev = it->second;
  last = {id, forgotten, it->second};
  return true;
}

CUresult ask_primary(CUdevice dev, uint64_t* id) {
  Route route;
  route.device(dev);
  protocol::op::PrimaryContext::Reply reply;
  const CUresult rc =
      ask<protocol::op::PrimaryContext>({local_device(dev), new_handle_id()}, &reply);
  if (rc == CUDA_SUCCESS) *id = reply.context;
  return rc;
}

// The program's creation parameters, if it passed any, into `q`: a flag and
// a list of execution-affinity pairs (docs/protocol.md, "ctx-create"). CIG
// parameters name an object of the client's graphics API (a D3D12 command
// queue), which the server's driver cannot reach, so they are refused by
// name.
CUresult put_create_params(const CUctxCreateParams* params, protocol::op::CtxCreate::Request* q) {
  q->has_params = params != nullptr;
  if (!params) return CUDA_SUCCESS;
  if (params->cigParams) {
    spdlog::error(
        "cuCtxCreate: CIG parameters share an object of the client's graphics API, "
        "which cannot cross to the server; create the context without them");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  const int count = params->execAffinityParams ? params->numExecAffinityParams : 0;
  if (count < 0 || count > static_cast<int>(protocol::kMaxCtxAffinityParams))
    return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < count; ++i)
    q->affinity.push_back({static_cast<uint32_t>(params->execAffinityParams[i].type),
                           params->execAffinityParams[i].param.smCount.val});
  return CUDA_SUCCESS;
}

}  // namespace

// cuCtxGetDevice, answered from the client's contexts: `ctx`'s device, or
// the current context's without one.
CUresult context_device(CUdevice* device, CUcontext ctx) {
  if (!connection()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t id = ctx ? handle_id(ctx) : current_context_id();
  if (!id || !known_context(id, device)) {
    spdlog::debug("cuCtxGetDevice: context {:#x} is not one of this client's", id);
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  return CUDA_SUCCESS;
}

uint64_t current_context_id() {
  const std::vector<uint64_t>& stack = context_stack();
  return stack.empty() ? 0 : stack.back();
}

bool current_device(CUdevice* dev) {
  const uint64_t id = current_context_id();
  return id != 0 && known_context(id, dev);
}

bool valid_device(CUdevice dev) {
  return connection() && dev >= 0 && static_cast<size_t>(dev) < snapshot().devices.size();
}

CUcontext primary_context(CUdevice dev) {
  if (!valid_device(dev)) return nullptr;
  {
    std::lock_guard lock(contexts().mu);
    if (uint64_t id = contexts().primaries[dev].id) return handle_from_id<CUcontext>(id);
  }
  uint64_t id = 0;
  if (ask_primary(dev, &id) != CUDA_SUCCESS) return nullptr;
  std::lock_guard lock(contexts().mu);
  contexts().primaries[dev].id = id;
  contexts().devices[id] = dev;
  return handle_from_id<CUcontext>(id);
}

}  // namespace scuda::client

using scuda::client::context_stack;
using scuda::client::contexts;
using scuda::client::handle_from_id;
using scuda::client::handle_id;
using scuda::client::put_create_params;

CUresult scuda::client::custom::cuCtxGetCurrent(CUcontext* pctx) {
  if (!scuda::client::connection()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  *pctx = handle_from_id<CUcontext>(scuda::client::current_context_id());
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuCtxSetCurrent(CUcontext ctx) {
  if (!scuda::client::connection()) return CUDA_ERROR_NOT_INITIALIZED;
  const uint64_t id = handle_id(ctx);
  if (id && !scuda::client::known_context(id, nullptr)) return CUDA_ERROR_INVALID_CONTEXT;
  std::vector<uint64_t>& stack = context_stack();
  if (stack.empty()) {
    if (id) stack.push_back(id);
  } else if (id) {
    stack.back() = id;
  } else {
    stack.pop_back();
  }
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuCtxPushCurrent_v2(CUcontext ctx) {
  if (!scuda::client::connection()) return CUDA_ERROR_NOT_INITIALIZED;
  const uint64_t id = handle_id(ctx);
  if (!id || !scuda::client::known_context(id, nullptr)) return CUDA_ERROR_INVALID_CONTEXT;
  context_stack().push_back(id);
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuCtxPopCurrent_v2(CUcontext* pctx) {
  if (!scuda::client::connection()) return CUDA_ERROR_NOT_INITIALIZED;
  std::vector<uint64_t>& stack = context_stack();
  if (stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx) *pctx = handle_from_id<CUcontext>(stack.back());
  stack.pop_back();
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuCtxGetDevice(CUdevice* device) {
  return scuda::client::context_device(device, nullptr);
}

CUresult scuda::client::custom::cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  return scuda::client::context_device(device, ctx);
}

CUresult scuda::client::custom::cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* params,
                                               unsigned int flags, CUdevice dev) {
  if (!scuda::client::connection()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (!scuda::client::valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  scuda::client::Route route;
  route.device(dev);
  scuda::protocol::op::CtxCreate::Request request{
      scuda::client::new_handle_id(), flags, scuda::client::local_device(dev), 0, {}};
  if (CUresult rc = put_create_params(params, &request); rc != CUDA_SUCCESS) return rc;
  scuda::protocol::op::CtxCreate::Reply reply;
  const CUresult rc = scuda::client::ask<scuda::protocol::op::CtxCreate>(request, &reply);
  if (rc != CUDA_SUCCESS) return rc;
  const uint64_t id = reply.context;
  scuda::client::remember(id, dev);
  context_stack().push_back(id);
  *pctx = handle_from_id<CUcontext>(id);
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuCtxDestroy_v2(CUcontext ctx) {
  CUresult rc = scuda::client::forward::cuCtxDestroy_v2(ctx);
  if (rc != CUDA_SUCCESS) return rc;
  std::erase(context_stack(), handle_id(ctx));
  std::lock_guard lock(contexts().mu);
  contexts().devices.erase(handle_id(ctx));
  scuda::client::g_forgotten.fetch_add(1, std::memory_order_acq_rel);
  return CUDA_SUCCESS;
}

// The session's process holds the server's only references to its primary
// contexts, so the server need hold one while the program holds any: only
// the first retain and the last release are sent: a training program
// retains a primary context several times before its first step, and each
// retain sent would be a round trip it waits for.
CUresult scuda::client::custom::cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  if (!scuda::client::connection()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (!scuda::client::valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  {
    std::lock_guard lock(contexts().mu);
    scuda::client::Primary& p = contexts().primaries[dev];
    if (p.refs > 0) {
      ++p.refs;
      *pctx = handle_from_id<CUcontext>(p.id);
      return CUDA_SUCCESS;
    }
  }
  CUresult rc = scuda::client::forward::cuDevicePrimaryCtxRetain(pctx, dev);
  if (rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(contexts().mu);
  scuda::client::Primary& p = contexts().primaries[dev];
  p.id = handle_id(*pctx);
  ++p.refs;
  p.state_known = false;
  contexts().devices[p.id] = dev;
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  {
    std::lock_guard lock(contexts().mu);
    scuda::client::Primary& p = contexts().primaries[dev];
    if (p.refs > 1) {
      --p.refs;
      return CUDA_SUCCESS;
    }
  }
  CUresult rc = scuda::client::forward::cuDevicePrimaryCtxRelease_v2(dev);
  if (rc != CUDA_SUCCESS) return rc;
  uint64_t released = 0;
  {
    std::lock_guard lock(contexts().mu);
    scuda::client::Primary& p = contexts().primaries[dev];
    if (p.refs > 0 && --p.refs == 0) released = p.id;
    p.state_known = false;
  }
  if (released) scuda::client::run_context_storage_destructors(handle_from_id<CUcontext>(released));
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  CUresult rc = scuda::client::forward::cuDevicePrimaryCtxReset_v2(dev);
  if (rc != CUDA_SUCCESS) return rc;
  uint64_t id = 0;
  {
    std::lock_guard lock(contexts().mu);
    scuda::client::Primary& p = contexts().primaries[dev];
    p.refs = 0;
    p.state_known = false;
    id = p.id;
  }
  if (id) scuda::client::run_context_storage_destructors(handle_from_id<CUcontext>(id));
  if (id) scuda::client::forget_limits(id);
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  CUresult rc = scuda::client::forward::cuDevicePrimaryCtxSetFlags_v2(dev, flags);
  if (rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(contexts().mu);
  contexts().primaries[dev].state_known = false;
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags,
                                                           int* active) {
  if (!scuda::client::connection()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  if (!scuda::client::valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  {
    std::lock_guard lock(contexts().mu);
    const scuda::client::Primary& p = contexts().primaries[dev];
    if (p.state_known) {
      *flags = p.flags;
      *active = p.active;
      return CUDA_SUCCESS;
    }
  }
  CUresult rc = scuda::client::forward::cuDevicePrimaryCtxGetState(dev, flags, active);
  if (rc != CUDA_SUCCESS) return rc;
  spdlog::trace("cuDevicePrimaryCtxGetState({}): flags {:#x}, active {}", dev, *flags, *active);
  std::lock_guard lock(contexts().mu);
  scuda::client::Primary& p = contexts().primaries[dev];
  p.state_known = true;
  p.flags = *flags;
  p.active = *active;
  return CUDA_SUCCESS;
}
