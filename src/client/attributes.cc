// Function and kernel attributes, cached on the client: PyTorch asks for
// them ~1,600 times per training step (shared/reference trace) and they only
// change when the program sets one. A kernel and the functions made from it
// share attributes, so a set forgets what the cache holds for that whole
// family, unless it repeats the value last set: cuDNN and cuBLAS set limits
// before launches, and emptying the whole cache on each cost 800 round trips
// per ResNet-18 step (device run, 2026-11-22).
#include <climits>
#include <map>
#include <mutex>
#include <tuple>

#include "client/attributes.h"
#include "client/runtime.h"
#include "forward.h"

namespace scuda::client {

namespace {

// (family, function or kernel id, attribute, device; -1 for functions),
// where the family is the kernel a function was made from, else the id.
using Key = std::tuple<uint64_t, uint64_t, int, int>;

struct AttributeCache {
  std::mutex mu;
  std::map<Key, int> values;
  std::map<Key, int> last_set;
  std::map<uint64_t, uint64_t> kernel_of;  // function id -> kernel id
};

AttributeCache& cache() {
  static AttributeCache* c = new AttributeCache;  // never freed: used until exit
  return *c;
}

// With the lock held.
Key key_of(uint64_t id, int attr, int dev) {
  const auto it = cache().kernel_of.find(id);
  return {it == cache().kernel_of.end() ? id : it->second, id, attr, dev};
}

template <class Ask>
CUresult cached(uint64_t id, int attr, int dev, int* value, Ask ask) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  Key key;
  {
    std::lock_guard lock(cache().mu);
    key = key_of(id, attr, dev);
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

void note_set(uint64_t id, int attr, int dev, int value) {
  std::lock_guard lock(cache().mu);
  const Key key = key_of(id, attr, dev);
  auto [it, first] = cache().last_set.try_emplace(key, value);
  if (!first && it->second == value) return;
  it->second = value;
  const uint64_t family = std::get<0>(key);
  auto& values = cache().values;
  values.erase(values.lower_bound({family, 0, INT_MIN, INT_MIN}),
               values.lower_bound({family + 1, 0, INT_MIN, INT_MIN}));
}

}  // namespace

void note_kernel_function(uint64_t kernel, uint64_t fn) {
  std::lock_guard lock(cache().mu);
  cache().kernel_of[fn] = kernel;
}

}  // namespace scuda::client

using scuda::client::cached;
using scuda::client::handle_id;
namespace forward = scuda::client::forward;

extern "C" {

CUresult CUDAAPI cuFuncGetAttribute(int* value, CUfunction_attribute attr, CUfunction fn) {
  SCUDA_PASSTHROUGH(cuFuncGetAttribute, value, attr, fn);
  return cached(handle_id(fn), attr, -1, value,
                [&] { return forward::cuFuncGetAttribute(value, attr, fn); });
}

CUresult CUDAAPI cuKernelGetAttribute(int* value, CUfunction_attribute attr, CUkernel kernel,
                                      CUdevice dev) {
  SCUDA_PASSTHROUGH(cuKernelGetAttribute, value, attr, kernel, dev);
  return cached(handle_id(kernel), attr, dev, value,
                [&] { return forward::cuKernelGetAttribute(value, attr, kernel, dev); });
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction fn, CUfunction_attribute attr, int value) {
  SCUDA_PASSTHROUGH(cuFuncSetAttribute, fn, attr, value);
  scuda::client::note_set(handle_id(fn), attr, -1, value);
  return forward::cuFuncSetAttribute(fn, attr, value);
}

CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attr, int value, CUkernel kernel,
                                      CUdevice dev) {
  SCUDA_PASSTHROUGH(cuKernelSetAttribute, attr, value, kernel, dev);
  scuda::client::note_set(handle_id(kernel), attr, dev, value);
  return forward::cuKernelSetAttribute(attr, value, kernel, dev);
}

}  // extern "C"
