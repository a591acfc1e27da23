// Functions and kernels by name, each asked of the server once per module,
// library or context: a repeated lookup sends nothing.
//
// cuModuleGetFunction waits for its reply, which says at once whether the
// name exists: Triton and NVRTC users check that, and launch right after,
// which needs the layout the reply brings anyway; unless an earlier run was
// given both for the same image (answer_cache.h). cuLibraryGetKernel and
// cuKernelGetFunction are mostly cudart's, for names it registered from the
// same image, often well before their first launch: they go with ids chosen
// here and their replies are read when something needs them
// (descriptions.h). A name that is not there is reported by each use of the
// handle (launch, attribute or parameter query, cuKernelGetFunction): for
// cudart, in the same cudaLaunchKernel whose lookup it was.
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "client/contexts/context.h"
#include "client/handle_errors.h"
#include "client/kernels/attributes.h"
#include "client/kernels/descriptions.h"
#include "client/modules/lasting_names.h"
#include "client/modules/library_loads.h"
#include "client/modules/lookups.h"
#include "client/pools/route.h"
#include "client/pools/servers.h"
#include "client/runtime.h"
#include "client/state.h"
#include "common/lock_order.h"
#include "custom.h"
#include "forward.h"
#include "protocol/op_layouts.h"

namespace scuda::client {

namespace parts {

struct KnownLookups {
  RankedMutex mu{LockRank::kLookups, "KnownLookups::mu"};
  std::map<std::pair<uint64_t, std::string>, uint64_t> by_name;  // (module or library, name)
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> functions;   // (kernel, context)
  // Function and kernel names, for cuFuncGetName; the strings stay put
  // while their entries live, as the driver's do.
  std::map<uint64_t, std::string> names;
};

}  // namespace parts

namespace {

parts::KnownLookups& known() { return client_state().known_lookups.get(); }

template <class Key>
bool find(const std::map<Key, uint64_t>& map, const Key& key, uint64_t* id) {
  std::lock_guard lock(known().mu);
  auto it = map.find(key);
  if (it == map.end()) return false;
  *id = it->second;
  return true;
}

template <class Key>
void remember(std::map<Key, uint64_t>& map, Key key, uint64_t id) {
  std::lock_guard lock(known().mu);
  map[std::move(key)] = id;
}

void remember_name(uint64_t id, std::string name) {
  std::lock_guard lock(known().mu);
  known().names[id] = std::move(name);
}

CUresult name_of(uint64_t id, const char** name) {
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(known().mu);
  auto it = known().names.find(id);
  if (it == known().names.end()) return CUDA_ERROR_INVALID_HANDLE;
  *name = it->second.c_str();
  return CUDA_SUCCESS;
}

// A module or library is unloaded: its lookups, and the functions of its
// kernels, are gone with it.
void forget(uint64_t parent) {
  std::lock_guard lock(known().mu);
  auto& by_name = known().by_name;
  const auto first = by_name.lower_bound({parent, ""});
  const auto last = by_name.lower_bound({parent + 1, ""});
  std::set<uint64_t> gone;
  for (auto it = first; it != last; ++it) gone.insert(it->second);
  by_name.erase(first, last);
  std::erase_if(known().functions, [&](const auto& f) {
    if (!gone.count(f.first.first)) return false;
    known().names.erase(f.second);
    return true;
  });
  for (uint64_t id : gone) known().names.erase(id);
  forget_names(parent);
}

// A function an earlier run found in the same image is sure to be there:
// its lookup goes one-way, with the description that run was given.
CUresult get_function(CUfunction* out, CUmodule module, const char* name) {
  if (!out || !name) return CUDA_ERROR_INVALID_VALUE;
  const std::pair key{handle_id(module), std::string(name)};
  uint64_t id = 0;
  if (!find(known().by_name, key, &id)) {
    id = new_handle_id();
    name_lookup(id, key.first, 'f', name);
    const protocol::Writer w =
        protocol::encode(protocol::op::ModuleGetFunction::Request{id, key.first, key.second});
    if (recall_description(id)) {
      if (CUresult rc = look_up_later(protocol::op::ModuleGetFunction::kOp, w, id);
          rc != CUDA_SUCCESS)
        return rc;
    } else {
      std::vector<uint8_t> reply;
      if (CUresult rc = call(protocol::op::ModuleGetFunction::kOp, w, &reply); rc != CUDA_SUCCESS)
        return rc;
      protocol::Reader r(reply);
      if (!read_description(r, id, {}) || !r.done()) return bad_reply("cuModuleGetFunction");
    }
    remember(known().by_name, key, id);
    remember_name(id, key.second);
  }
  *out = handle_from_id<CUfunction>(id);
  return CUDA_SUCCESS;
}

// With several servers a library is on every one (library_loads.h), and so
// is each kernel, under one id: asked of each server in turn, waiting for
// each reply, since a lookup read later would be owed on one connection
// only.
CUresult look_up_everywhere(const protocol::Writer& request, uint64_t id) {
  for (uint32_t s = 0; s < server_count(); ++s) {
    Route route;
    route.to(s);
    std::vector<uint8_t> reply;
    if (CUresult rc = call(protocol::op::LibraryGetKernel::kOp, request, &reply);
        rc != CUDA_SUCCESS)
      return rc;
    protocol::Reader r(reply);
    if (!read_description(r, id, {}) || !r.done()) return bad_reply("cuLibraryGetKernel");
  }
  return CUDA_SUCCESS;
}

CUresult get_kernel(CUkernel* out, CUlibrary library, const char* name) {
  if (!out || !name) return CUDA_ERROR_INVALID_VALUE;
  const std::pair key{handle_id(library), std::string(name)};
  uint64_t id = 0;
  if (find(known().by_name, key, &id)) {
    if (CUresult rc = handle_error(id); rc != CUDA_SUCCESS) return rc;
  } else {
    if (CUresult rc = library_ready(key.first); rc != CUDA_SUCCESS) return rc;
    id = new_shared_handle_id();
    name_lookup(id, key.first, 'k', name);
    recall_description(id);
    const protocol::Writer w =
        protocol::encode(protocol::op::LibraryGetKernel::Request{id, key.first, key.second});
    if (CUresult rc = several_servers() ? look_up_everywhere(w, id)
                                        : look_up_later(protocol::op::LibraryGetKernel::kOp, w, id);
        rc != CUDA_SUCCESS)
      return rc;
    remember(known().by_name, key, id);
    remember_name(id, key.second);
  }
  *out = handle_from_id<CUkernel>(id);
  return CUDA_SUCCESS;
}

// The kernel's function in the current context. PyTorch asks before most
// launches.
CUresult get_kernel_function(CUfunction* out, CUkernel kernel) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  const std::pair key{handle_id(kernel), current_context_id()};
  if (!key.second) return CUDA_ERROR_INVALID_CONTEXT;
  if (CUresult rc = handle_error(key.first); rc != CUDA_SUCCESS) return rc;
  uint64_t id = 0;
  if (find(known().functions, key, &id)) {
    if (CUresult rc = handle_error(id); rc != CUDA_SUCCESS) return rc;
  } else {
    id = new_handle_id();
    // Before the reply can be read, so its attributes join the kernel's family.
    note_kernel_function(key.first, id);
    if (auto layout = find_layout(key.first)) note_layout(id, std::move(layout));
    if (CUdevice dev = 0; cuCtxGetDevice(&dev) == CUDA_SUCCESS) {
      name_kernel_function(id, key.first, dev);
      recall_description(id);
    }
    const protocol::Writer w =
        protocol::encode(protocol::op::KernelGetFunction::Request{id, key.first});
    if (CUresult rc = look_up_later(protocol::op::KernelGetFunction::kOp, w, id);
        rc != CUDA_SUCCESS)
      return rc;
    remember(known().functions, key, id);
    if (const char* name = nullptr; name_of(key.first, &name) == CUDA_SUCCESS)
      remember_name(id, name);
  }
  *out = handle_from_id<CUfunction>(id);
  return CUDA_SUCCESS;
}

}  // namespace

void note_function_name(uint64_t id, std::string_view name) {
  if (!name.empty()) remember_name(id, std::string(name));
}

}  // namespace scuda::client

namespace client = scuda::client;

CUresult scuda::client::custom::cuModuleGetFunction(CUfunction* fn, CUmodule module,
                                                    const char* name) {
  return client::get_function(fn, module, name);
}

CUresult scuda::client::custom::cuLibraryGetKernel(CUkernel* kernel, CUlibrary library,
                                                   const char* name) {
  return client::get_kernel(kernel, library, name);
}

CUresult scuda::client::custom::cuKernelGetFunction(CUfunction* fn, CUkernel kernel) {
  return client::get_kernel_function(fn, kernel);
}

CUresult scuda::client::custom::cuFuncGetName(const char** name, CUfunction fn) {
  return client::name_of(client::handle_id(fn), name);
}

CUresult scuda::client::custom::cuKernelGetName(const char** name, CUkernel kernel) {
  return client::name_of(client::handle_id(kernel), name);
}

CUresult scuda::client::custom::cuModuleUnload(CUmodule module) {
  client::forget(client::handle_id(module));
  return client::forward::cuModuleUnload(module);
}

CUresult scuda::client::custom::cuLibraryUnload(CUlibrary library) {
  client::forget(client::handle_id(library));
  if (CUresult rc = client::library_ready(client::handle_id(library)); rc != CUDA_SUCCESS)
    return rc;
  // With several servers the library is on each (library_loads.h).
  for (uint32_t s = 1; s < client::server_count(); ++s) {
    client::Route route;
    route.to(s);
    if (CUresult rc = client::forward::cuLibraryUnload(library); rc != CUDA_SUCCESS) return rc;
  }
  client::Route first;
  if (client::several_servers()) first.to(0);
  return client::forward::cuLibraryUnload(library);
}
