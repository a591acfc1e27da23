// Modules, libraries, functions and kernels. Images go to the server by their
// SHA-256, and whole only when the server lacks them (docs/protocol.md);
// functions and kernels come back with their parameter layouts.
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include <spdlog/spdlog.h>

#include "client/attributes.h"
#include "client/context.h"
#include "client/layouts.h"
#include "client/module_image.h"
#include "client/runtime.h"
#include "forward.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

using protocol::ImageHash;
using protocol::op_name;

// Unheld images at least this large are first named by their hash alone: a
// round trip costs less than sending them again (256 KiB take about 20 ms at
// 100 Mbit/s).
constexpr size_t kProbeBytes = size_t{256} << 10;

// What this process's session on the server is known to hold.
struct HeldImages {
  std::mutex mu;
  std::set<ImageHash> hashes;
  bool server_caches = true;  // false once the server kept an image it was sent
};

HeldImages& held() {
  static HeldImages* h = new HeldImages;  // used until exit
  return *h;
}

bool is_held(const ImageHash& hash) {
  std::lock_guard lock(held().mu);
  return held().hashes.count(hash) != 0;
}

bool server_caches() {
  std::lock_guard lock(held().mu);
  return held().server_caches;
}

// The request of docs/protocol.md: the image follows unless `image` is null.
protocol::Writer load_request(uint64_t proposed, const ImageHash& hash, const void* image,
                              size_t size) {
  protocol::Writer w;
  w.u64(proposed);
  w.u8(image ? protocol::kImageFollows : protocol::kHashOnly);
  w.put(hash);
  w.u64(size);
  if (image) w.blob(image, size);
  return w;
}

// Reads a load reply: the id, and whether the server now holds the image.
CUresult read_reply(const std::vector<uint8_t>& reply, const ImageHash& hash, bool sent,
                    uint64_t* id) {
  protocol::Reader r(reply);
  *id = r.u64();
  const bool now_held = r.u8() != 0;
  if (!r.done()) return bad_reply("module load");
  std::lock_guard lock(held().mu);
  if (now_held) held().hashes.insert(hash);
  else if (sent) held().server_caches = false;
  return CUDA_SUCCESS;
}

// Loads an image; on success returns the new object's id in *id. An image the
// session holds goes one-way, by hash: a failure surfaces at the next
// synchronizing call, and at the next request naming the module.
CUresult load_image(uint32_t op, const void* image, size_t size, uint64_t* id) {
  const ImageHash hash = protocol::image_hash(image, size);
  const uint64_t proposed = new_handle_id();
  if (is_held(hash)) {
    spdlog::debug("{}: {} bytes held by the server; hash only, one-way", op_name(op), size);
    *id = proposed;
    return post(op, load_request(proposed, hash, nullptr, size));
  }
  std::vector<uint8_t> reply;
  if (size >= kProbeBytes && server_caches()) {
    CUresult rc = call(op, load_request(proposed, hash, nullptr, size), &reply);
    spdlog::debug("{}: {} bytes, hash only: {}", op_name(op), size, static_cast<int>(rc));
    if (rc == CUDA_SUCCESS) return read_reply(reply, hash, false, id);
    if (rc != static_cast<CUresult>(protocol::kImageNotHeld)) return rc;
  }
  spdlog::debug("{}: sending {} bytes", op_name(op), size);
  CUresult rc = call(op, load_request(proposed, hash, image, size), &reply);
  return rc == CUDA_SUCCESS ? read_reply(reply, hash, true, id) : rc;
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
  bool known = false;
  if (!read_layout(r, &layout, &known) || !read_attributes(r, id) || !r.done())
    return bad_reply("function lookup");
  if (known) note_layout(id, std::make_shared<const Layout>(std::move(layout)));
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

// A kernel's function in the current context, asked of the server once and
// then remembered: PyTorch asks for it before most launches.
CUresult kernel_function(uint64_t kernel, uint64_t* fn) {
  static std::mutex mu;
  static auto* known = new std::map<std::pair<uint64_t, uint64_t>, uint64_t>;  // never freed
  const std::pair key{kernel, current_context_id()};
  {
    std::lock_guard lock(mu);
    if (auto it = known->find(key); it != known->end()) {
      *fn = it->second;
      return CUDA_SUCCESS;
    }
  }
  protocol::Writer w;
  w.u64(new_handle_id());
  w.u64(kernel);
  std::vector<uint8_t> reply;
  CUresult rc = call(protocol::kOpKernelGetFunction, w, &reply);
  if (rc != CUDA_SUCCESS) return rc;
  protocol::Reader r(reply);
  *fn = r.u64();
  if (!r.done()) return bad_reply("cuKernelGetFunction");
  if (auto layout = fetch_layout(kernel)) note_layout(*fn, std::move(layout));
  note_kernel_function(kernel, *fn);
  std::lock_guard lock(mu);
  (*known)[key] = *fn;
  return CUDA_SUCCESS;
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
  uint64_t id = 0;
  CUresult rc = scuda::client::kernel_function(handle_id(kernel), &id);
  if (rc == CUDA_SUCCESS) *fn = handle_from_id<CUfunction>(id);
  return rc;
}

CUresult CUDAAPI cuLibraryGetModule(CUmodule* module, CUlibrary library) {
  SCUDA_PASSTHROUGH(cuLibraryGetModule, module, library);
  return scuda::client::forward::cuLibraryGetModule(module, library);
}

}  // extern "C"
