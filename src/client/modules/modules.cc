// Module and library loads. Images go to the server by their SHA-256, and
// whole only when the server lacks them (docs/protocol.md); library loads
// without waiting (library_loads.cc).
#include <fstream>
#include <iterator>
#include <string>

#include <spdlog/spdlog.h>

#include "client/modules/held_images.h"
#include "client/modules/image_names.h"
#include "client/modules/lasting_names.h"
#include "client/modules/library_loads.h"
#include "client/modules/module_image.h"
#include "client/pools/servers.h"
#include "client/runtime.h"
#include "custom.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

using protocol::ImageHash;
using protocol::op_name;

CUresult read_reply(const std::vector<uint8_t>& reply, const ImageHash& hash, size_t size,
                    bool sent, uint64_t* id) {
  protocol::Reader r(reply);
  return read_load_reply(r, hash, size, sent, id);
}

// Loads an image; on success returns the new object's id in *id. An image the
// session holds goes one-way, by hash: a failure surfaces at the next
// synchronizing call, and at the next request naming the module. Library
// loads never wait (library_loads.cc). A module load does: JIT users (Triton,
// NVRTC) check its result.
CUresult send_load(uint32_t op, const ImageHash& hash, const void* image, size_t size,
                   uint64_t* id) {
  if (op == protocol::kOpLibraryLoad && several_servers()) {
    *id = new_shared_handle_id();
    return load_library_everywhere(hash, image, size, *id);
  }
  const uint64_t proposed = new_handle_id();
  if (is_held(hash)) {
    spdlog::debug("{}: {} bytes held by the server; hash only, one-way", op_name(op), size);
    *id = proposed;
    return post(op, load_request(proposed, hash, nullptr, size));
  }
  if (op == protocol::kOpLibraryLoad) {
    *id = proposed;
    return load_library_later(hash, image, size, proposed);
  }
  std::vector<uint8_t> reply;
  if (size >= kProbeBytes && server_caches()) {
    CUresult rc = call(op, load_request(proposed, hash, nullptr, size), &reply);
    spdlog::debug("{}: {} bytes, hash only: {}", op_name(op), size, static_cast<int>(rc));
    if (rc == CUDA_SUCCESS) return read_reply(reply, hash, size, false, id);
    if (rc != static_cast<CUresult>(protocol::kImageNotHeld)) return rc;
  }
  spdlog::debug("{}: sending {} bytes", op_name(op), size);
  CUresult rc = call(op, load_request(proposed, hash, image, size), &reply);
  return rc == CUDA_SUCCESS ? read_reply(reply, hash, size, true, id) : rc;
}

CUresult load_image(uint32_t op, const void* image, size_t size, uint64_t* id) {
  const ImageHash hash = image_name(image, size);
  const CUresult rc = send_load(op, hash, image, size, id);
  if (rc == CUDA_SUCCESS) note_image(*id, hash);
  return rc;
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
using scuda::protocol::kOpLibraryLoad;
using scuda::protocol::kOpModuleLoad;

CUresult scuda::client::custom::cuModuleLoadData(CUmodule* module, const void* image) {
  return load(kOpModuleLoad, module, image);
}

CUresult scuda::client::custom::cuModuleLoadDataEx(CUmodule* module, const void* image,
                                                   unsigned int n, CUjit_option* options,
                                                   void** values) {
  clear_log_buffers(n, options, values);
  return load(kOpModuleLoad, module, image);
}

CUresult scuda::client::custom::cuModuleLoadFatBinary(CUmodule* module, const void* fatbin) {
  return load(kOpModuleLoad, module, fatbin);
}

CUresult scuda::client::custom::cuModuleLoad(CUmodule* module, const char* path) {
  return load_file(kOpModuleLoad, module, path);
}

CUresult scuda::client::custom::cuLibraryLoadData(CUlibrary* library, const void* code,
                                                  CUjit_option* jit_options, void** jit_values,
                                                  unsigned int jit_count,
                                                  CUlibraryOption* /*options*/, void** /*values*/,
                                                  unsigned int /*count*/) {
  clear_log_buffers(jit_count, jit_options, jit_values);
  return load(kOpLibraryLoad, library, code);
}

CUresult scuda::client::custom::cuLibraryLoadFromFile(CUlibrary* library, const char* path,
                                                      CUjit_option* jit_options, void** jit_values,
                                                      unsigned int jit_count,
                                                      CUlibraryOption* /*options*/,
                                                      void** /*values*/, unsigned int /*count*/) {
  clear_log_buffers(jit_count, jit_options, jit_values);
  return load_file(kOpLibraryLoad, library, path);
}
