// Function and kernel attributes, and the occupancy results that follow
// from them, cached on the client: PyTorch asks for attributes many times per
// step and for occupancy twice (docs/bench/training.md, "Figures cited by the
// code"); they only change when the program sets an attribute or a cache preference.
// A kernel and the functions made from it share attributes, so a set forgets
// what the cache holds for that whole family, unless it repeats the value
// last set: cuDNN and cuBLAS set limits before launches, so emptying the
// whole cache on each would send most of a step's questions again.
// Occupancy answers are also kept across runs
// (answer_cache.h), under the function's lasting name and the attributes its
// family was set to: nothing else this side changes them, but for
// cuCtxSetCacheConfig, after which none is kept.
#include <atomic>
#include <climits>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/kernels/attributes.h"
#include "client/kernels/descriptions.h"
#include "client/modules/answer_cache.h"
#include "client/modules/lasting_names.h"
#include "client/pools/route.h"
#include "client/pools/servers.h"
#include "client/runtime.h"
#include "client/state.h"
#include "common/lock_order.h"
#include "custom.h"
#include "forward.h"

namespace scuda::client {

namespace {

// (family, function or kernel id, query, device (-1 for functions), the
// query's arguments), where the family is the kernel a function was made
// from, else the id, and the query an attribute or an occupancy question.
using Args = std::string;  // the arguments' bytes
using Key = std::tuple<uint64_t, uint64_t, int, int, Args>;

// Occupancy questions, below every attribute.
enum Query : int {
  kMaxActiveBlocks = -1,
  kAvailableDynamicSMem = -2,
  kCacheConfig = -3,  // not a question: cuFuncSetCacheConfig's last value
  kMaxActiveClusters = -4,
  kMaxClusterSize = -5,
};

template <class... T>
Args args_of(T... values) {
  Args args;
  (args.append(reinterpret_cast<const char*>(&values), sizeof values), ...);
  return args;
}

}  // namespace

namespace parts {

struct AttributeCache {
  RankedMutex mu{LockRank::kReplyTables, "AttributeCache::mu"};
  std::map<Key, int64_t> values;
  std::map<Key, int64_t> last_set;
  std::map<uint64_t, uint64_t> kernel_of;  // function id -> kernel id
  std::map<uint64_t, uint64_t> sets;       // family -> how many sets changed it
  bool context_config_set = false;         // by cuCtxSetCacheConfig
};

}  // namespace parts

namespace {

parts::AttributeCache& cache() { return client_state().attribute_cache.get(); }

// Bumped whenever a cached attribute may have changed (a set, occupancy
// forgotten, a description that says otherwise): each thread keeps its last
// answers, which hold while this has not moved, so that asking again takes
// no lock shared between threads. Starts at 1: a zeroed entry is no answer.
std::atomic<uint64_t> g_changes{1};

void attributes_changed() { g_changes.fetch_add(1, std::memory_order_acq_rel); }

struct Front {
  uint64_t id = 0;
  int attr = 0;
  int dev = 0;
  int value = 0;
  uint64_t changes = 0;
};
constexpr size_t kFrontSlots = 16;

Front& front_slot(uint64_t id, int attr) {
  thread_local Front slots[kFrontSlots];
  return slots[(id / 16 + static_cast<uint64_t>(attr)) % kFrontSlots];
}

bool front_find(uint64_t id, int attr, int dev, int* value) {
  const Front& f = front_slot(id, attr);
  if (f.id != id || f.attr != attr || f.dev != dev ||
      f.changes != g_changes.load(std::memory_order_acquire))
    return false;
  *value = f.value;
  return true;
}

// `changes` is g_changes as read before the answer was found.
void front_keep(uint64_t id, int attr, int dev, int value, uint64_t changes) {
  front_slot(id, attr) = {id, attr, dev, value, changes};
}

// With the lock held: the kernel `id` was made from, else `id`.
uint64_t family_of(uint64_t id) {
  const auto it = cache().kernel_of.find(id);
  return it == cache().kernel_of.end() ? id : it->second;
}

// With the lock held.
Key key_of(uint64_t id, int query, int dev, Args args = {}) {
  return {family_of(id), id, query, dev, std::move(args)};
}

// With the lock held.
uint64_t generation_of(uint64_t id) {
  const auto it = cache().sets.find(family_of(id));
  return it == cache().sets.end() ? 0 : it->second;
}

// With the lock held: what has been set on `id`'s family, in terms that
// hold across runs; empty while nothing has.
std::string digest_of(uint64_t id) {
  std::string digest;
  const uint64_t family = family_of(id);
  for (auto it = cache().last_set.lower_bound({family, 0, INT_MIN, INT_MIN, ""});
       it != cache().last_set.end() && std::get<0>(it->first) == family; ++it) {
    const auto& [f, set_id, set_query, set_dev, unused] = it->first;
    digest += args_of(set_id == id, set_query, set_dev, it->second);
  }
  return digest;
}

template <class T>
bool find_cached(uint64_t id, int query, int dev, const Args& args, T* value) {
  std::lock_guard lock(cache().mu);
  auto it = cache().values.find(key_of(id, query, dev, args));
  if (it == cache().values.end()) return false;
  *value = static_cast<T>(it->second);
  return true;
}

// The answer cache's key for a question about `id`, asked with `args` in
// terms that hold across runs, and what was set on its family; empty if
// the question cannot be kept.
std::string lasting_key(uint64_t id, int query, int dev, const Args& args) {
  std::string name;
  if (!lasting_name(id, &name)) {
    spdlog::debug("occupancy question {} about {:#x}: no lasting name, not kept", query, id);
    return {};
  }
  std::lock_guard lock(cache().mu);
  if (cache().context_config_set) {
    spdlog::debug("occupancy question {}: not kept after cuCtxSetCacheConfig", query);
    return {};
  }
  return "O" + args_of(query, dev, uint32_t(name.size()), uint32_t(args.size())) + name + args +
         digest_of(id);
}

template <class T>
bool recall(const std::string& key, T* value) {
  int64_t v = 0;
  if (key.empty() || !answers::find_value(key, &v)) return false;
  *value = static_cast<T>(v);
  return true;
}

// `lasting`: the arguments in terms that hold across runs, when the answer
// may be kept for them.
template <class T, class Ask>
CUresult cached(uint64_t id, int query, int dev, Args args, T* value, const Ask& ask,
                const std::optional<Args>& lasting = std::nullopt) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  if (find_cached(id, query, dev, args, value)) return CUDA_SUCCESS;
  const std::string key = lasting ? lasting_key(id, query, dev, *lasting) : std::string();
  const bool recalled = recall(key, value);
  CUresult rc = recalled ? CUDA_SUCCESS : ask();
  if (rc != CUDA_SUCCESS) return rc;
  const auto v = static_cast<int64_t>(*value);
  if (!recalled && !key.empty()) answers::remember_value(key, v);
  std::lock_guard lock(cache().mu);
  cache().values[key_of(id, query, dev, std::move(args))] = v;
  return rc;
}

// An attribute not cached comes with the description still owed for the
// function or kernel, or else with a fetched one: every attribute at once
// (cudaFuncGetAttributes asks for nine). `forward` asks for this one alone,
// for the driver's own error when the description lacks it.
template <class Forward>
CUresult attribute(uint64_t id, CUfunction_attribute attr, int dev, int* value,
                   const Forward& forward) {
  if (attr < 0 || attr >= CU_FUNC_ATTRIBUTE_MAX) return forward();
  if (value && front_find(id, attr, dev, value)) return CUDA_SUCCESS;
  const uint64_t changes = g_changes.load(std::memory_order_acquire);
  const CUresult rc = cached(id, attr, dev, {}, value, [&] {
    if (recall_description(id) && find_cached(id, attr, dev, {}, value)) return CUDA_SUCCESS;
    if (CUresult rc = await_description(id); rc != CUDA_SUCCESS) return rc;
    if (find_cached(id, attr, dev, {}, value)) return CUDA_SUCCESS;
    if (CUresult rc = fetch_description(id, dev); rc != CUDA_SUCCESS) return rc;
    return find_cached(id, attr, dev, {}, value) ? CUDA_SUCCESS : forward();
  });
  if (rc == CUDA_SUCCESS) front_keep(id, attr, dev, *value, changes);
  return rc;
}

void note_set(uint64_t id, int query, int dev, int64_t value) {
  std::lock_guard lock(cache().mu);
  const Key key = key_of(id, query, dev);
  auto [it, first] = cache().last_set.try_emplace(key, value);
  if (!first && it->second == value) return;
  it->second = value;
  attributes_changed();
  const uint64_t family = std::get<0>(key);
  ++cache().sets[family];
  auto& values = cache().values;
  values.erase(values.lower_bound({family, 0, INT_MIN, INT_MIN, ""}),
               values.lower_bound({family + 1, 0, INT_MIN, INT_MIN, ""}));
}

}  // namespace

SetState set_state(uint64_t id) {
  std::lock_guard lock(cache().mu);
  return {generation_of(id), digest_of(id)};
}

bool note_attributes(uint64_t id, uint64_t generation, int32_t local,
                     const std::vector<protocol::op::AttributeValue>& values, int32_t* device) {
  // The server numbers its own devices; the cache, the program's.
  const int32_t dev = *device =
      several_servers() && local >= 0 ? global_device(routed_server(), local) : local;
  if (values.size() > CU_FUNC_ATTRIBUTE_MAX) return false;
  for (const auto& [attr, value] : values)
    if (attr < 0 || attr >= CU_FUNC_ATTRIBUTE_MAX) return false;
  std::lock_guard lock(cache().mu);
  if (generation_of(id) != generation) return true;
  for (const auto& [attr, value] : values) {
    auto [it, fresh] = cache().values.try_emplace(key_of(id, attr, dev), value);
    if (fresh || it->second == value) continue;
    it->second = value;
    attributes_changed();
  }
  return true;
}

CUresult cached_cluster_occupancy(uint64_t fn, uint8_t which, std::string config,
                                  const std::optional<std::string>& lasting_config, int* value,
                                  const std::function<CUresult()>& ask) {
  return cached(fn, which == 0 ? kMaxActiveClusters : kMaxClusterSize, -1, std::move(config), value,
                ask, lasting_config);
}

namespace {

// The context's cache preference shapes every function's occupancy.
void forget_occupancy() {
  std::lock_guard lock(cache().mu);
  cache().context_config_set = true;
  attributes_changed();
  std::erase_if(cache().values, [](const auto& entry) { return std::get<2>(entry.first) < 0; });
}

}  // namespace

void note_kernel_function(uint64_t kernel, uint64_t fn) {
  std::lock_guard lock(cache().mu);
  cache().kernel_of[fn] = kernel;
}

}  // namespace scuda::client

using scuda::client::Args;
using scuda::client::attribute;
using scuda::client::cached;
using scuda::client::handle_id;
using scuda::client::note_set;
namespace forward = scuda::client::forward;

CUresult scuda::client::custom::cuFuncGetAttribute(int* value, CUfunction_attribute attr,
                                                   CUfunction fn) {
  return attribute(handle_id(fn), attr, -1, value,
                   [&] { return forward::cuFuncGetAttribute(value, attr, fn); });
}

CUresult scuda::client::custom::cuKernelGetAttribute(int* value, CUfunction_attribute attr,
                                                     CUkernel kernel, CUdevice dev) {
  return attribute(handle_id(kernel), attr, dev, value,
                   [&] { return forward::cuKernelGetAttribute(value, attr, kernel, dev); });
}

CUresult scuda::client::custom::cuFuncSetAttribute(CUfunction fn, CUfunction_attribute attr,
                                                   int value) {
  note_set(handle_id(fn), attr, -1, value);
  return forward::cuFuncSetAttribute(fn, attr, value);
}

CUresult scuda::client::custom::cuKernelSetAttribute(CUfunction_attribute attr, int value,
                                                     CUkernel kernel, CUdevice dev) {
  note_set(handle_id(kernel), attr, dev, value);
  return forward::cuKernelSetAttribute(attr, value, kernel, dev);
}

CUresult scuda::client::custom::cuFuncSetCacheConfig(CUfunction fn, CUfunc_cache config) {
  note_set(handle_id(fn), scuda::client::kCacheConfig, -1, config);
  return forward::cuFuncSetCacheConfig(fn, config);
}

CUresult scuda::client::custom::cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config,
                                                       CUdevice dev) {
  note_set(handle_id(kernel), scuda::client::kCacheConfig, dev, config);
  return forward::cuKernelSetCacheConfig(kernel, config, dev);
}

CUresult scuda::client::custom::cuCtxSetCacheConfig(CUfunc_cache config) {
  scuda::client::forget_occupancy();
  return forward::cuCtxSetCacheConfig(config);
}

CUresult scuda::client::custom::cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks,
                                                                            CUfunction fn,
                                                                            int block_size,
                                                                            size_t smem) {
  return ::cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, fn, block_size, smem,
                                                                CU_OCCUPANCY_DEFAULT);
}

CUresult scuda::client::custom::cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int* blocks, CUfunction fn, int block_size, size_t smem, unsigned flags) {
  const Args args = scuda::client::args_of(block_size, smem, flags);
  return cached(
      handle_id(fn), scuda::client::kMaxActiveBlocks, -1, args, blocks,
      [&] {
        return forward::cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, fn, block_size,
                                                                             smem, flags);
      },
      args);
}

CUresult scuda::client::custom::cuOccupancyAvailableDynamicSMemPerBlock(size_t* smem, CUfunction fn,
                                                                        int blocks,
                                                                        int block_size) {
  const Args args = scuda::client::args_of(blocks, block_size);
  return cached(
      handle_id(fn), scuda::client::kAvailableDynamicSMem, -1, args, smem,
      [&] {
        return forward::cuOccupancyAvailableDynamicSMemPerBlock(smem, fn, blocks, block_size);
      },
      args);
}
