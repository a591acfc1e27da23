// Hand-written module and library requests. Images arrive whole or as their
// hash alone (module_cache.h keeps them); functions and kernels come back
// with their description (parameter layout and attributes), so the client
// can pack launch arguments and answer attribute queries without asking.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "protocol/op_layouts.h"
#include "protocol/ops.h"
#include "server/kernels/module_cache.h"
#include "server/kernels/param_layout.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "server/session/typed_handler.h"

namespace scuda::server {

namespace {

namespace op = protocol::op;

// Every attribute the driver answers for a function or kernel. The client
// caches them, so it need not ask for any.
template <class GetAttribute>
std::vector<op::AttributeValue> attributes_of(GetAttribute get) {
  std::vector<op::AttributeValue> values;
  for (int a = 0; a < CU_FUNC_ATTRIBUTE_MAX; ++a) {
    int v = 0;
    if (get(static_cast<CUfunction_attribute>(a), &v) == CUDA_SUCCESS) values.push_back({a, v});
  }
  return values;
}

// A load request, with its image: the one sent, or the cached one.
struct LoadRequest {
  uint64_t proposed = 0;
  protocol::ImageHash hash{};
  uint64_t size = 0;
  bool hash_only = false;
  std::string image;  // a copy: PTX must end in NUL
};

// Returns kMalformed, protocol::kImageNotHeld, or CUDA_SUCCESS with the image.
CUresult read_load(const op::ImageLoad& q, LoadRequest* req) {
  req->proposed = q.proposed;
  req->hash = q.hash;
  req->size = q.size;
  req->hash_only = !q.image;
  if (q.image) req->image = std::string(*q.image);
  const std::string name = hash_hex(req->hash).substr(0, 12);
  if (req->hash_only) {
    const bool found = module_cache().find(req->hash, req->size, &req->image);
    spdlog::info("image {}: {}", name, found ? "from the cache" : "not held; the client sends it");
    return found ? CUDA_SUCCESS : static_cast<CUresult>(protocol::kImageNotHeld);
  }
  // The server names files by the hashes it computes, never by the client's.
  if (req->image.size() != req->size ||
      protocol::image_hash(req->image.data(), req->image.size()) != req->hash)
    return kMalformed;
  spdlog::info("image {}: received, {} bytes", name, req->size);
  return CUDA_SUCCESS;
}

// Results of failed loads, whose replies the client may not wait for
// (hash-only loads sent one-way, library loads): later requests naming the
// module or library report the load's error.
std::map<uint64_t, CUresult>& failed_loads() {
  static std::map<uint64_t, CUresult> failed;  // one session per process
  return failed;
}

void note_failure(const LoadRequest& req, CUresult rc) {
  if (rc == protocol::kImageNotHeld) return;
  if (failed_loads().size() >= 4096) failed_loads().clear();
  failed_loads()[req.proposed] = rc;
}

// INVALID_HANDLE, or the error of the load that should have made `id`.
CUresult unknown_handle(uint64_t id) {
  auto it = failed_loads().find(id);
  return it == failed_loads().end() ? CUDA_ERROR_INVALID_HANDLE : it->second;
}

// The shared body of module and library loads: `load` calls the driver.
template <class Load>
CUresult load_image(Session& s, const op::ImageLoad& q, op::ImageLoaded* a, HandleKind kind,
                    Load load) {
  LoadRequest req;
  CUresult rc = read_load(q, &req);
  // A one-way load by hash named an image this session held, so the
  // client has no copy left to send: the file went bad under the session.
  if (rc == protocol::kImageNotHeld && (s.request().flags & protocol::kOneWay)) {
    spdlog::warn("image {}: the cache's copy no longer reads back; the load fails",
                 hash_hex(req.hash).substr(0, 12));
    rc = CUDA_ERROR_INVALID_IMAGE;
  }
  if (rc == CUDA_SUCCESS && !s.handles().can_bind(req.proposed)) rc = CUDA_ERROR_INVALID_VALUE;
  // Shared with the handle table, which keeps it for a library's life.
  const auto image = std::make_shared<const std::string>(std::move(req.image));
  void* handle = nullptr;
  if (rc == CUDA_SUCCESS) rc = load(image->c_str(), &handle);
  if (rc != CUDA_SUCCESS) {
    if (rc != kMalformed) note_failure(req, rc);
    return rc;
  }
  // Only images the driver accepted are cached.
  ModuleCache& cache = module_cache();
  if (!cache.holds(req.hash)) cache.store(req.hash, *image);
  const uint64_t id =
      s.handles().bind(req.proposed, kind, handle, !(s.request().flags & protocol::kOneWay));
  if (kind == HandleKind::CUlibrary) s.handles().lend(id, image);
  *a = {id, static_cast<uint8_t>(cache.holds(req.hash) ? 1 : 0)};
  return CUDA_SUCCESS;
}

CUresult module_load(Session& s, const op::ImageLoad& q, op::ImageLoaded* a) {
  return load_image(s, q, a, HandleKind::CUmodule, [&](const char* image, void** handle) {
    CUmodule mod = nullptr;
    CUresult rc = s.driver().cuModuleLoadData(&mod, image);
    *handle = mod;
    return rc;
  });
}

CUresult library_load(Session& s, const op::ImageLoad& q, op::ImageLoaded* a) {
  return load_image(s, q, a, HandleKind::CUlibrary, [&](const char* image, void** handle) {
    if (!s.driver().cuLibraryLoadData) return CUDA_ERROR_NOT_SUPPORTED;
    // As cudart does: the driver reads the session's copy, which lives as
    // long as the library (load_image), rather than making its own, which
    // takes a cuBLAS kernel library's load about twice as long.
    CUlibraryOption option = CU_LIBRARY_BINARY_IS_PRESERVED;
    void* preserved = reinterpret_cast<void*>(uintptr_t{1});
    CUlibrary lib = nullptr;
    CUresult rc =
        s.driver().cuLibraryLoadData(&lib, image, nullptr, nullptr, 0, &option, &preserved, 1);
    *handle = lib;
    return rc;
  });
}

// A function's description: its layout and its own attributes.
void describe_function(const DriverTable& d, CUfunction fn, op::FunctionDescription* a) {
  a->params = function_layout(d, fn);
  a->device = -1;
  a->attributes = attributes_of([&](CUfunction_attribute attr, int* v) {
    return d.cuFuncGetAttribute ? d.cuFuncGetAttribute(v, attr, fn) : CUDA_ERROR_NOT_SUPPORTED;
  });
}

// A kernel's description, with the attributes of device `dev` (-1: the
// current context's, and none without one).
void describe_kernel(const DriverTable& d, CUkernel kernel, CUdevice dev,
                     op::FunctionDescription* a) {
  a->params = kernel_layout(d, kernel);
  if (dev < 0 && (!d.cuCtxGetDevice || d.cuCtxGetDevice(&dev) != CUDA_SUCCESS)) dev = -1;
  a->device = dev;
  a->attributes = attributes_of([&](CUfunction_attribute attr, int* v) {
    return dev >= 0 && d.cuKernelGetAttribute ? d.cuKernelGetAttribute(v, attr, kernel, dev)
                                              : CUDA_ERROR_NOT_SUPPORTED;
  });
}

CUresult module_get_function(Session& s, const op::ModuleGetFunction::Request& q,
                             op::FunctionDescription* a) {
  void* mod = nullptr;
  if (!s.handles().resolve(q.owner, HandleKind::CUmodule, &mod) || !mod)
    return unknown_handle(q.owner);
  if (!s.handles().can_bind(q.proposed)) return CUDA_ERROR_INVALID_VALUE;
  const DriverTable& d = s.driver();
  CUfunction fn = nullptr;
  CUresult rc = d.cuModuleGetFunction(&fn, static_cast<CUmodule>(mod), q.name.c_str());
  if (rc != CUDA_SUCCESS) return rc;
  s.handles().alias(q.proposed, HandleKind::CUfunction, fn);
  describe_function(d, fn, a);
  return CUDA_SUCCESS;
}

// The names of a module's functions or a library's kernels, which the
// client then looks up one by one (cuModuleEnumerateFunctions,
// cuLibraryEnumerateKernels and cuFFT's export-table slot).
template <class Owner, class Item>
CUresult names_of(Owner owner, CUresult (*count_of)(unsigned*, Owner),
                  CUresult (*enumerate)(Item*, unsigned, Owner),
                  CUresult (*name_of)(const char**, Item), std::vector<std::string>* names) {
  if (!count_of || !enumerate || !name_of) return CUDA_ERROR_NOT_SUPPORTED;
  unsigned count = 0;
  if (CUresult rc = count_of(&count, owner); rc != CUDA_SUCCESS) return rc;
  if (count > protocol::kMaxModuleFunctions) return CUDA_ERROR_NOT_SUPPORTED;
  std::vector<Item> items(count);
  if (CUresult rc = enumerate(items.data(), count, owner); rc != CUDA_SUCCESS) return rc;
  for (Item item : items) {
    const char* name = nullptr;
    if (CUresult rc = name_of(&name, item); rc != CUDA_SUCCESS) return rc;
    names->emplace_back(name ? name : "");
  }
  return CUDA_SUCCESS;
}

CUresult function_names(Session& s, const op::FunctionNames::Request& q,
                        op::FunctionNames::Reply* a) {
  void* owner = nullptr;
  if (!s.handles().resolve(q.id, q.library ? HandleKind::CUlibrary : HandleKind::CUmodule,
                           &owner) ||
      !owner)
    return unknown_handle(q.id);
  const DriverTable& d = s.driver();
  return q.library ? names_of(static_cast<CUlibrary>(owner), d.cuLibraryGetKernelCount,
                              d.cuLibraryEnumerateKernels, d.cuKernelGetName, &a->names)
                   : names_of(static_cast<CUmodule>(owner), d.cuModuleGetFunctionCount,
                              d.cuModuleEnumerateFunctions, d.cuFuncGetName, &a->names);
}

// The client may have handed the id out already and read this reply only
// when it needs the description, so the id is bound as it is.
CUresult library_get_kernel(Session& s, const op::LibraryGetKernel::Request& q,
                            op::FunctionDescription* a) {
  void* lib = nullptr;
  if (!s.handles().resolve(q.owner, HandleKind::CUlibrary, &lib) || !lib)
    return unknown_handle(q.owner);
  if (!s.handles().can_bind(q.proposed)) return CUDA_ERROR_INVALID_VALUE;
  const DriverTable& d = s.driver();
  if (!d.cuLibraryGetKernel) return CUDA_ERROR_NOT_SUPPORTED;
  CUkernel kernel = nullptr;
  CUresult rc = d.cuLibraryGetKernel(&kernel, static_cast<CUlibrary>(lib), q.name.c_str());
  if (rc != CUDA_SUCCESS) return rc;
  s.handles().alias(q.proposed, HandleKind::CUkernel, kernel);
  describe_kernel(d, kernel, -1, a);
  return CUDA_SUCCESS;
}

// As library_get_kernel, for the kernel's function in the current context.
CUresult kernel_get_function(Session& s, const op::KernelGetFunction::Request& q,
                             op::FunctionDescription* a) {
  void* kernel = nullptr;
  if (!s.handles().resolve(q.kernel, HandleKind::CUkernel, &kernel) || !kernel)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!s.handles().can_bind(q.proposed)) return CUDA_ERROR_INVALID_VALUE;
  const DriverTable& d = s.driver();
  if (!d.cuKernelGetFunction) return CUDA_ERROR_NOT_SUPPORTED;
  CUfunction fn = nullptr;
  CUresult rc = d.cuKernelGetFunction(&fn, static_cast<CUkernel>(kernel));
  if (rc != CUDA_SUCCESS) return rc;
  s.handles().alias(q.proposed, HandleKind::CUfunction, fn);
  describe_function(d, fn, a);
  return CUDA_SUCCESS;
}

// When a lookup's description lacked what the client needs (a kernel
// looked up before any context, a device other than the context's,
// attributes after a set).
CUresult function_info(Session& s, const op::FunctionInfo::Request& q, op::FunctionDescription* a) {
  const DriverTable& d = s.driver();
  void* h = nullptr;
  if (s.handles().resolve(q.id, HandleKind::CUkernel, &h) && h)
    describe_kernel(d, static_cast<CUkernel>(h), q.device, a);
  else if (s.handles().resolve(q.id, HandleKind::CUfunction, &h) && h)
    describe_function(d, static_cast<CUfunction>(h), a);
  else return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

const HandlerEntry kHandlers[] = {
    typed_entry<op::ModuleLoad, module_load>(),
    typed_entry<op::LibraryLoad, library_load>(),
    typed_entry<op::ModuleGetFunction, module_get_function>(),
    typed_entry<op::LibraryGetKernel, library_get_kernel>(),
    typed_entry<op::KernelGetFunction, kernel_get_function>(),
    typed_entry<op::FunctionInfo, function_info>(),
    typed_entry<op::FunctionNames, function_names>(),
};

}  // namespace

std::span<const HandlerEntry> module_handlers() { return kHandlers; }

}  // namespace scuda::server
