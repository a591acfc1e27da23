#include "state.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "allocations.h"
#include "common/gpu_uuid.h"
#include "current.h"

namespace scuda_double {

size_t total_memory() {
  static const size_t total = [] {
    const char* bytes = std::getenv("SCUDA_DOUBLE_TOTAL_MEMORY");
    return bytes && *bytes ? std::strtoull(bytes, nullptr, 10) : size_t{1} << 30;
  }();
  return total;
}

CUuuid device_uuid(int physical) {
  CUuuid id;
  std::memcpy(id.bytes, "scuda-test-dbl01", sizeof id.bytes);
  id.bytes[15] = static_cast<char>(id.bytes[15] + physical);
  return id;
}

namespace {

int shown_devices() {
  const char* n = std::getenv("SCUDA_DOUBLE_DEVICES");
  const int count = n && *n ? std::atoi(n) : 1;
  return count >= 1 && count <= kMaxDevices ? count : 1;
}

// The device an entry of CUDA_VISIBLE_DEVICES names: an index, or a "GPU-"
// prefix of one device's UUID; -1 when it names none or several.
int named_device(const std::string& item, int shown) {
  if (item.rfind("GPU-", 0) == 0) {
    int found = -1;
    for (int i = 0; i < shown; ++i) {
      if (scuda::gpu_uuid_text(device_uuid(i)).rfind(item, 0) != 0) continue;
      if (found >= 0) return -1;
      found = i;
    }
    return found;
  }
  char* rest = nullptr;
  const long index = std::strtol(item.c_str(), &rest, 10);
  return item.empty() || *rest != '\0' || index < 0 || index >= shown ? -1
                                                                      : static_cast<int>(index);
}

// The devices CUDA_VISIBLE_DEVICES lists, up to the first that names no
// device or repeats one, as the driver reads it; all when it is unset.
std::vector<int> visible_devices() {
  const int shown = shown_devices();
  std::vector<int> out;
  const char* list = std::getenv("CUDA_VISIBLE_DEVICES");
  if (list == nullptr) {
    for (int i = 0; i < shown; ++i) out.push_back(i);
    return out;
  }
  std::string items(list);
  for (size_t at = 0; at <= items.size();) {
    const size_t end = std::min(items.find(',', at), items.size());
    const int index = named_device(items.substr(at, end - at), shown);
    if (index < 0 || std::find(out.begin(), out.end(), index) != out.end()) break;
    out.push_back(index);
    at = end + 1;
  }
  return out;
}

const std::vector<int>& visible() {
  static const std::vector<int> devices = visible_devices();
  return devices;
}

}  // namespace

int device_count() { return static_cast<int>(visible().size()); }

int physical_device(CUdevice dev) { return valid_device(dev) ? visible()[dev] : -1; }

State& state() {
  static State instance;
  return instance;
}

Call begin() {
  Call call{std::unique_lock<std::mutex>(state().mu)};
  if (!state().initialized) call.status = CUDA_ERROR_NOT_INITIALIZED;
  return call;
}

Call begin_in_context() {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call;
  call.ctx_id = current_context();
  call.ctx = usable_context(call.ctx_id);
  if (call.ctx == nullptr) {
    call.status = CUDA_ERROR_INVALID_CONTEXT;
  } else {
    call.status = call.ctx->sticky;
  }
  return call;
}

Call begin_on_stream(CUstream stream) {
  Call call = begin_in_context();
  if (call.status == CUDA_SUCCESS && !valid_stream(stream)) call.status = CUDA_ERROR_INVALID_HANDLE;
  return call;
}

Context* usable_context(uintptr_t id) {
  Context* ctx = state().contexts.find(id);
  if (ctx == nullptr || (ctx->primary && ctx->refcount == 0)) return nullptr;
  return ctx;
}

bool valid_device(CUdevice dev) { return dev >= 0 && dev < device_count(); }

CUdevice device_of(uintptr_t ctx) {
  const Context* context = state().contexts.find(ctx);
  return context ? context->device : 0;
}

bool valid_stream(CUstream stream) {
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) {
    return true;
  }
  return state().streams.find(stream) != nullptr;
}

void release_context_resources(uintptr_t ctx) {
  State& s = state();
  release_allocations_of_context(ctx);
  s.streams.erase_if([&](const Stream& stream) { return stream.ctx == ctx; });
  s.events.erase_if([&](const Event& event) { return event.ctx == ctx; });
  s.functions.erase_if([&](const Function& fn) {
    const Module* module = s.modules.find(fn.module);
    return module != nullptr && module->ctx == ctx;
  });
  s.modules.erase_if([&](const Module& module) { return module.ctx == ctx; });
  s.arrays.erase_if([&](const Array& array) { return array.ctx == ctx; });
}

}  // namespace scuda_double
