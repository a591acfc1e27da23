// Modules, libraries, functions and kernels. Images go to the server as they
// are; functions and kernels come back with their parameter layouts.
#include <fstream>
#include <iterator>
#include <string>

#include "client/layouts.h"
#include "client/module_image.h"
#include "client/runtime.h"
#include "forward.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

// Sends an image; on success returns the new object's id in *id.
CUresult load_image(uint32_t op, const void* image, size_t size, uint64_t* id) {
  protocol::Writer w;
  w.u64(new_handle_id());
  w.blob(image, size);
  std::vector<uint8_t> reply;
  CUresult rc = call(op, w, &reply);
  if (rc != CUDA_SUCCESS) return rc;
  protocol::Reader r(reply);
  *id = r.u64();
  return r.done() ? CUDA_SUCCESS : bad_reply("module load");
}

template <class H>
CUresult load(uint32_t op, H* out, const void* image) {
  if (!out || !image) return CUDA_ERROR_INVALID_VALUE;
  const void* data = nullptr;
  const size_t size = module_image_size(image, &data);
  if (!size) return CUDA_ERROR_INVALID_IMAGE;
  uint64_t id = 0;
  CUresult rc = load_image(op, data, size, &id);
  if (rc == CUDA_SUCCESS) *out = handle_from_id<H>(id);
  return rc;
}

template <class H>
CUresult load_file(uint32_t op, H* out, const char* path) {
  if (!out || !path) return CUDA_ERROR_INVALID_VALUE;
  std::ifstream in(path, std::ios::binary);
  if (!in) return CUDA_ERROR_FILE_NOT_FOUND;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes.push_back('\0');  // PTX files are text
  uint64_t id = 0;
  CUresult rc = load_image(op, bytes.data(), bytes.size(), &id);
  if (rc == CUDA_SUCCESS) *out = handle_from_id<H>(id);
  return rc;
}

// Looks up a function or kernel by name and records its layout.
template <class H, class P>
CUresult get_entry(uint32_t op, H* out, P parent, const char* name) {
  if (!out || !name) return CUDA_ERROR_INVALID_VALUE;
  protocol::Writer w;
  w.u64(new_handle_id());
  w.u64(handle_id(parent));
  w.str(name);
  std::vector<uint8_t> reply;
  CUresult rc = call(op, w, &reply);
  if (rc != CUDA_SUCCESS) return rc;
  protocol::Reader r(reply);
  const uint64_t id = r.u64();
  Layout layout;
  if (!read_layout(r, &layout) || !r.done()) return bad_reply("function lookup");
  note_layout(id, std::move(layout));
  *out = handle_from_id<H>(id);
  return CUDA_SUCCESS;
}

// JIT options that hand the driver a host buffer to fill cannot be honoured
// remotely; such buffers are left empty.
void clear_log_buffers(unsigned n, const CUjit_option* options, void** values) {
  for (unsigned i = 0; options && values && i < n; ++i) {
    if ((options[i] == CU_JIT_INFO_LOG_BUFFER || options[i] == CU_JIT_ERROR_LOG_BUFFER) &&
        values[i])
      static_cast<char*>(values[i])[0] = '\0';
  }
}

}  // namespace

}  // namespace scuda::client

using namespace scuda::client;
using scuda::protocol::kOpLibraryGetKernel;
using scuda::protocol::kOpLibraryLoad;
using scuda::protocol::kOpModuleGetFunction;
using scuda::protocol::kOpModuleLoad;

extern "C" {

CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  SCUDA_PASSTHROUGH(cuModuleLoadData, module, image);
  return load(kOpModuleLoad, module, image);
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int n,
                                    CUjit_option* options, void** values) {
  SCUDA_PASSTHROUGH(cuModuleLoadDataEx, module, image, n, options, values);
  clear_log_buffers(n, options, values);
  return load(kOpModuleLoad, module, image);
}

CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule* module, const void* fatbin) {
  SCUDA_PASSTHROUGH(cuModuleLoadFatBinary, module, fatbin);
  return load(kOpModuleLoad, module, fatbin);
}

CUresult CUDAAPI cuModuleLoad(CUmodule* module, const char* path) {
  SCUDA_PASSTHROUGH(cuModuleLoad, module, path);
  return load_file(kOpModuleLoad, module, path);
}

CUresult CUDAAPI cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option* jit_options,
                                   void** jit_values, unsigned int jit_count,
                                   CUlibraryOption* options, void** values, unsigned int count) {
  SCUDA_PASSTHROUGH(cuLibraryLoadData, library, code, jit_options, jit_values, jit_count, options,
                    values, count);
  clear_log_buffers(jit_count, jit_options, jit_values);
  return load(kOpLibraryLoad, library, code);
}

CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary* library, const char* path,
                                       CUjit_option* jit_options, void** jit_values,
                                       unsigned int jit_count, CUlibraryOption* options,
                                       void** values, unsigned int count) {
  SCUDA_PASSTHROUGH(cuLibraryLoadFromFile, library, path, jit_options, jit_values, jit_count,
                    options, values, count);
  clear_log_buffers(jit_count, jit_options, jit_values);
  return load_file(kOpLibraryLoad, library, path);
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction* fn, CUmodule module, const char* name) {
  SCUDA_PASSTHROUGH(cuModuleGetFunction, fn, module, name);
  return get_entry(kOpModuleGetFunction, fn, module, name);
}

CUresult CUDAAPI cuLibraryGetKernel(CUkernel* kernel, CUlibrary library, const char* name) {
  SCUDA_PASSTHROUGH(cuLibraryGetKernel, kernel, library, name);
  return get_entry(kOpLibraryGetKernel, kernel, library, name);
}

CUresult CUDAAPI cuKernelGetFunction(CUfunction* fn, CUkernel kernel) {
  SCUDA_PASSTHROUGH(cuKernelGetFunction, fn, kernel);
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  Layout layout;
  if (!find_layout(handle_id(kernel), &layout)) return CUDA_ERROR_INVALID_HANDLE;
  scuda::protocol::Writer w;
  w.u64(new_handle_id());
  w.u64(handle_id(kernel));
  std::vector<uint8_t> reply;
  CUresult rc = call(scuda::protocol::kOpKernelGetFunction, w, &reply);
  if (rc != CUDA_SUCCESS) return rc;
  scuda::protocol::Reader r(reply);
  const uint64_t id = r.u64();
  if (!r.done()) return bad_reply("cuKernelGetFunction");
  note_layout(id, std::move(layout));
  *fn = handle_from_id<CUfunction>(id);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryGetModule(CUmodule* module, CUlibrary library) {
  SCUDA_PASSTHROUGH(cuLibraryGetModule, module, library);
  return scuda::client::forward::cuLibraryGetModule(module, library);
}

}  // extern "C"
