// cuModule* and cuFunc*: modules are parsed text images (module_image.h).
#include <cuda.h>

#include <cstring>
#include <map>
#include <memory>
#include <utility>

#include "allocations.h"
#include "functions.h"
#include "logs.h"
#include "name_lists.h"
#include "state.h"

using namespace scuda_double;

namespace {

void unload(uintptr_t id) {
  state().functions.erase_if([&](const Function& fn) { return fn.module == id; });
  release_allocations_of_module(id);
  state().modules.erase(id);
}

CUresult add_globals(uintptr_t id, Module* module) {
  for (const GlobalDesc& global : module->image.globals) {
    CUdeviceptr address = 0;
    CUresult result = allocate(global.size, module->ctx, id, &address);
    if (result != CUDA_SUCCESS) return result;
    std::memset(reinterpret_cast<void*>(address), 0, global.size);
    module->globals.emplace(global.name, address);
  }
  return CUDA_SUCCESS;
}

void add_functions(uintptr_t id, Module* module) {
  for (const KernelDesc& kernel : module->image.kernels) {
    auto fn = std::make_unique<Function>();
    fn->kernel = &kernel;
    fn->module = id;
    module->functions.emplace(kernel.name, state().functions.add(std::move(fn)));
  }
}

CUresult load(CUmodule* out, const void* image) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (out == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto module = std::make_unique<Module>();
  if (!parse_image(image, &module->image)) return CUDA_ERROR_INVALID_IMAGE;
  module->ctx = call.ctx_id;
  Module* raw = module.get();
  uintptr_t id = state().modules.add(std::move(module));
  add_functions(id, raw);
  CUresult result = add_globals(id, raw);
  if (result != CUDA_SUCCESS) {
    unload(id);
    return result;
  }
  *out = as_handle<CUmodule>(id);
  return CUDA_SUCCESS;
}

int function_attribute(CUfunction_attribute attrib) {
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: return 32;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: return 90;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: return 90;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: return 49152;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: return -1;
    default: return 0;
  }
}

// Values set by cuFuncSetAttribute, shared by a kernel and its functions.
std::map<std::pair<const KernelDesc*, int>, int>& set_attributes() {
  static std::map<std::pair<const KernelDesc*, int>, int> values;
  return values;
}

CUresult get_attribute(int* pi, CUfunction_attribute attrib, CUfunction fn, CUdevice dev) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  const KernelDesc* desc = resolve_function(fn);
  if (desc == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (pi == nullptr || attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto it = set_attributes().find({desc, attrib});
  *pi = it != set_attributes().end() ? it->second : function_attribute(attrib);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuModuleLoadData(CUmodule* module, const void* image) { return load(module, image); }

// Lazy, like the real driver's default since CUDA 12.2.
CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  if (!mode) return CUDA_ERROR_INVALID_VALUE;
  *mode = CU_MODULE_LAZY_LOADING;
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int, CUjit_option*,
                            void**) {
  return load(module, image);
}

CUresult cuModuleUnload(CUmodule hmod) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (state().modules.find(hmod) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  unload(reinterpret_cast<uintptr_t>(hmod));
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  const Module* module = state().modules.find(hmod);
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (hfunc == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto it = module->functions.find(name);
  if (it == module->functions.end()) {
    log_error(std::string("[CUDA] cuModuleGetFunction: no function named ") + name);
    return CUDA_ERROR_NOT_FOUND;
  }
  *hfunc = as_handle<CUfunction>(it->second);
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunctionCount(unsigned int* count, CUmodule hmod) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  const Module* module = state().modules.find(hmod);
  return count_names(module ? &module->functions : nullptr, count);
}

CUresult cuModuleEnumerateFunctions(CUfunction* functions, unsigned int n, CUmodule hmod) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  const Module* module = state().modules.find(hmod);
  return list_names(module ? &module->functions : nullptr, functions, n);
}

CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod, const char* name) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  const Module* module = state().modules.find(hmod);
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto it = module->globals.find(name);
  if (it == module->globals.end()) return CUDA_ERROR_NOT_FOUND;
  if (dptr != nullptr) *dptr = it->second;
  if (bytes != nullptr) *bytes = state().allocations.at(it->second).size;
  return CUDA_SUCCESS;
}

CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t* paramOffset,
                            size_t* paramSize) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  return param_info(resolve_function(func), paramIndex, paramOffset, paramSize);
}

CUresult cuFuncGetName(const char** name, CUfunction hfunc) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  const KernelDesc* kernel = resolve_function(hfunc);
  if (kernel == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *name = kernel->name.c_str();
  return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  return get_attribute(pi, attrib, hfunc, 0);
}

CUresult cuKernelGetAttribute(int* pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev) {
  return get_attribute(pi, attrib, reinterpret_cast<CUfunction>(kernel), dev);
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  const KernelDesc* desc = resolve_function(hfunc);
  if (desc == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
  set_attributes()[{desc, attrib}] = value;
  return CUDA_SUCCESS;
}

CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  return resolve_function(hfunc) == nullptr ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}

}  // extern "C"
