// cuLibrary* and cuKernel*: context-independent loading of the same image
// format. `global` lines are accepted but not backed by memory here.
#include <cuda.h>

#include <memory>
#include <vector>

#include "functions.h"
#include "name_lists.h"
#include "state.h"

using namespace scuda_double;

namespace {

// Where the unified functions of an image's kernels lie, one per stride.
constexpr uintptr_t kUnifiedFunctions = 0x7f0000000000;
constexpr uintptr_t kUnifiedFunctionStride = 0x1000;

void add_kernels(uintptr_t id, Library* library) {
  for (const KernelDesc& desc : library->image.kernels) {
    auto fn = std::make_unique<Function>();
    fn->kernel = &desc;
    fn->library = id;
    auto kernel = std::make_unique<Kernel>();
    kernel->desc = &desc;
    kernel->library = id;
    kernel->function = state().functions.add(std::move(fn));
    library->kernels.emplace(desc.name, state().kernels.add(std::move(kernel)));
  }
}

bool is_preserved(const CUlibraryOption* options, void* const* values, unsigned n) {
  for (unsigned i = 0; options && values && i < n; ++i)
    if (options[i] == CU_LIBRARY_BINARY_IS_PRESERVED && values[i]) return true;
  return false;
}

}  // namespace

extern "C" {

CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option*, void**,
                           unsigned int, CUlibraryOption* options, void** values,
                           unsigned int n_options) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (library == nullptr || code == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto lib = std::make_unique<Library>();
  if (!parse_image(code, &lib->image)) return CUDA_ERROR_INVALID_IMAGE;
  if (is_preserved(options, values, n_options)) {
    lib->preserved = static_cast<const char*>(code);
    lib->text = lib->preserved;
  }
  Library* raw = lib.get();
  uintptr_t id = state().libraries.add(std::move(lib));
  add_kernels(id, raw);
  *library = as_handle<CUlibrary>(id);
  return CUDA_SUCCESS;
}

CUresult cuLibraryUnload(CUlibrary library) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  uintptr_t id = reinterpret_cast<uintptr_t>(library);
  if (state().libraries.find(id) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  state().kernels.erase_if([&](const Kernel& k) { return k.library == id; });
  state().functions.erase_if([&](const Function& fn) { return fn.library == id; });
  state().libraries.erase(id);
  return CUDA_SUCCESS;
}

CUresult cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  const Library* lib = state().libraries.find(library);
  if (lib == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (pKernel == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // A preserved image freed or changed while its library lives: under the
  // sanitizers this read is the use after free; elsewhere the text differs.
  if (lib->preserved && lib->text != lib->preserved) return CUDA_ERROR_ILLEGAL_STATE;
  auto it = lib->kernels.find(name);
  if (it == lib->kernels.end()) return CUDA_ERROR_NOT_FOUND;
  *pKernel = as_handle<CUkernel>(it->second);
  return CUDA_SUCCESS;
}

CUresult cuLibraryGetKernelCount(unsigned int* count, CUlibrary library) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  const Library* lib = state().libraries.find(library);
  return count_names(lib ? &lib->kernels : nullptr, count);
}

CUresult cuLibraryEnumerateKernels(CUkernel* kernels, unsigned int n, CUlibrary library) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  const Library* lib = state().libraries.find(library);
  return list_names(lib ? &lib->kernels : nullptr, kernels, n);
}

// A unified function's address is a device address in the driver; here
// each kernel of the image has one, by its place in the image.
CUresult cuLibraryGetUnifiedFunction(void** fptr, CUlibrary library, const char* symbol) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  const Library* lib = state().libraries.find(library);
  if (lib == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (fptr == nullptr || symbol == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const std::vector<KernelDesc>& kernels = lib->image.kernels;
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (kernels[i].name != symbol) continue;
    *fptr = reinterpret_cast<void*>(kUnifiedFunctions + i * kUnifiedFunctionStride);
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_FOUND;
}

CUresult cuKernelGetFunction(CUfunction* pFunc, CUkernel kernel) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  const Kernel* k = state().kernels.find(kernel);
  if (k == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (pFunc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pFunc = as_handle<CUfunction>(k->function);
  return CUDA_SUCCESS;
}

// Like the H100's driver, which cannot tell a kernel's parameters before a
// context is current (cudart looks kernels up before it retains one).
CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t* paramOffset,
                              size_t* paramSize) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  const Kernel* k = state().kernels.find(kernel);
  return param_info(k == nullptr ? nullptr : k->desc, paramIndex, paramOffset, paramSize);
}

CUresult cuKernelGetName(const char** name, CUkernel hfunc) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  const Kernel* k = state().kernels.find(hfunc);
  if (k == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *name = k->desc->name.c_str();
  return CUDA_SUCCESS;
}

}  // extern "C"
