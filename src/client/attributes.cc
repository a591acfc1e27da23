// Function and kernel attributes, cached on the client: PyTorch asks for
// them ~1,600 times per training step (shared/reference trace) and they only
// change when the program sets one. A set may change what another handle
// reports (a kernel and the functions made from it share attributes), so a
// set empties the cache, unless it repeats the value last set for the same
// attribute: cuDNN and cuBLAS set the same limits before every launch, which
// emptied the cache 800 times per ResNet-18 step (device run, 2026-11-22).
#include <map>
#include <mutex>
#include <tuple>

#include "client/runtime.h"
#include "forward.h"

namespace scuda::client {

namespace {

// (function or kernel id, attribute, device; -1 for functions)
using Key = std::tuple<uint64_t, int, int>;

struct AttributeCache {
  std::mutex mu;
  std::map<Key, int> values;
  std::map<Key, int> last_set;
};

AttributeCache& cache() {
  static AttributeCache* c = new AttributeCache;  // never freed: used until exit
  return *c;
}

template <class Ask>
CUresult cached(const Key& key, int* value, Ask ask) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard lock(cache().mu);
    auto it = cache().values.find(key);
    if (it != cache().values.end()) {
      *value = it->second;
      return CUDA_SUCCESS;
    }
  }
  CUresult rc = ask();
  if (rc == CUDA_SUCCESS) {
    std::lock_guard lock(cache().mu);
    cache().values[key] = *value;
  }
  return rc;
}

void note_set(const Key& key, int value) {
  std::lock_guard lock(cache().mu);
  auto [it, first] = cache().last_set.try_emplace(key, value);
  if (!first && it->second == value) return;
  it->second = value;
  cache().values.clear();
}

}  // namespace

}  // namespace scuda::client

using scuda::client::cached;
using scuda::client::handle_id;
namespace forward = scuda::client::forward;

extern "C" {

CUresult CUDAAPI cuFuncGetAttribute(int* value, CUfunction_attribute attr, CUfunction fn) {
  SCUDA_PASSTHROUGH(cuFuncGetAttribute, value, attr, fn);
  return cached({handle_id(fn), attr, -1}, value,
                [&] { return forward::cuFuncGetAttribute(value, attr, fn); });
}

CUresult CUDAAPI cuKernelGetAttribute(int* value, CUfunction_attribute attr, CUkernel kernel,
                                      CUdevice dev) {
  SCUDA_PASSTHROUGH(cuKernelGetAttribute, value, attr, kernel, dev);
  return cached({handle_id(kernel), attr, dev}, value,
                [&] { return forward::cuKernelGetAttribute(value, attr, kernel, dev); });
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction fn, CUfunction_attribute attr, int value) {
  SCUDA_PASSTHROUGH(cuFuncSetAttribute, fn, attr, value);
  scuda::client::note_set({handle_id(fn), attr, -1}, value);
  return forward::cuFuncSetAttribute(fn, attr, value);
}

CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attr, int value, CUkernel kernel,
                                      CUdevice dev) {
  SCUDA_PASSTHROUGH(cuKernelSetAttribute, attr, value, kernel, dev);
  scuda::client::note_set({handle_id(kernel), attr, dev}, value);
  return forward::cuKernelSetAttribute(attr, value, kernel, dev);
}

}  // extern "C"
