// Library loads, sent without waiting for their replies. cudart loads every
// fatbin a program carries when it starts (tens of them for a PyTorch
// program; docs/bench/training.md, "Figures cited by the code") and looks
// kernels up later: waiting for each load would cost a round trip apiece. A small image goes whole.
// A large one is first named by its hash (a probe), and the probes' replies are read together
// before the first request that names one of those libraries (library_ready), which is when the
// images the server lacked are sent. A load the server's driver rejects makes a handle that fails
// each use (handle_errors.h), rather than the next synchronize: cudart loads fatbins it may never
// use.
#include "client/modules/library_loads.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/handle_errors.h"
#include "client/modules/held_images.h"
#include "client/modules/kept_images.h"
#include "client/pools/route.h"
#include "client/pools/servers.h"
#include "client/runtime.h"
#include "client/state.h"
#include "client/transport/session.h"
#include "common/lock_order.h"
#include "custom.h"
#include "forward.h"

namespace scuda::client {

namespace {

using protocol::ImageHash;

// At most this many bytes of images are kept, copied, awaiting their
// probes' replies; more, and the probes are resolved first.
constexpr size_t kMaxProbedBytes = size_t{256} << 20;

struct Probe {
  uint64_t request = 0;
  uint64_t library = 0;
  ImageHash hash{};
  std::string image;    // sent if the server lacks it; freed once it has it
  bool missed = false;  // set by the reply, with the connection's lock held
};

}  // namespace

namespace parts {

// Taken before the connection's lock.
struct LibraryProbes {
  RankedMutex mu{LockRank::kRoundTrip, "LibraryProbes::mu"};
  std::vector<std::shared_ptr<Probe>> pending;  // in request order
  size_t bytes = 0;
};

}  // namespace parts

namespace {

parts::LibraryProbes& probes() { return client_state().library_probes.get(); }

// A failure is the library's, not the next synchronize's.
CUresult on_load_reply(uint64_t library, const ImageHash& hash, uint64_t size, bool sent,
                       CUresult rc, protocol::Reader& r) {
  uint64_t id = 0;
  if (rc == CUDA_SUCCESS) rc = read_load_reply(r, hash, size, sent, &id);
  if (rc == CUDA_SUCCESS && id != library) rc = bad_reply("cuLibraryLoadData");
  if (rc != CUDA_SUCCESS) note_handle_error(library, rc);
  return CUDA_SUCCESS;
}

CUresult send_image(const ImageHash& hash, const void* image, size_t size, uint64_t library) {
  spdlog::debug("library load: sending {} bytes; the reply is read later", size);
  // Noted now: the reply may come after the process is gone. A server that
  // does not keep it says so in the next Welcome.
  note_kept(hash, size);
  uint64_t request = 0;
  return call_later(protocol::kOpLibraryLoad, load_request(library, hash, image, size), &request,
                    [=](CUresult rc, protocol::Reader& r) {
                      return on_load_reply(library, hash, size, true, rc, r);
                    });
}

CUresult send_probe(const std::shared_ptr<Probe>& p) {
  const protocol::Writer w = load_request(p->library, p->hash, nullptr, p->image.size());
  return call_later(protocol::kOpLibraryLoad, w, &p->request,
                    [p](CUresult rc, protocol::Reader& r) {
                      if (rc == static_cast<CUresult>(protocol::kImageNotHeld)) {
                        p->missed = true;
                        return CUDA_SUCCESS;
                      }
                      const uint64_t size = p->image.size();
                      if (rc == CUDA_SUCCESS) std::string().swap(p->image);
                      return on_load_reply(p->library, p->hash, size, false, rc, r);
                    });
}

// With the probes' lock held: reads every probe's reply (one wait, for the
// last), then sends the images the server lacked.
CUresult resolve_probes() {
  auto& pending = probes().pending;
  if (pending.empty()) return CUDA_SUCCESS;
  if (CUresult rc = settle(pending.back()->request); rc != CUDA_SUCCESS) return rc;
  for (const auto& p : pending) {
    if (!p->missed) continue;
    if (CUresult rc = send_image(p->hash, p->image.data(), p->image.size(), p->library);
        rc != CUDA_SUCCESS)
      return rc;
  }
  pending.clear();
  probes().bytes = 0;
  return CUDA_SUCCESS;
}

}  // namespace

CUresult load_library_later(const ImageHash& hash, const void* image, size_t size, uint64_t id) {
  if (size < kProbeBytes || !server_caches()) return send_image(hash, image, size, id);
  std::lock_guard lock(probes().mu);
  if (probes().bytes + size > kMaxProbedBytes)
    if (CUresult rc = resolve_probes(); rc != CUDA_SUCCESS) return rc;
  auto p = std::make_shared<Probe>();
  p->library = id;
  p->hash = hash;
  p->image.assign(static_cast<const char*>(image), size);
  spdlog::debug("library load: {} bytes, hash only; the reply is read later", size);
  if (CUresult rc = send_probe(p); rc != CUDA_SUCCESS) return rc;
  probes().pending.push_back(std::move(p));
  probes().bytes += size;
  return CUDA_SUCCESS;
}

CUresult load_library_everywhere(const ImageHash& hash, const void* image, size_t size,
                                 uint64_t id) {
  for (uint32_t s = 0; s < server_count(); ++s) {
    Route route;
    route.to(s);
    if (CUresult rc = send_image(hash, image, size, id); rc != CUDA_SUCCESS) return rc;
  }
  return CUDA_SUCCESS;
}

CUresult library_ready(uint64_t id) {
  std::lock_guard lock(probes().mu);
  const auto& pending = probes().pending;
  if (std::any_of(pending.begin(), pending.end(), [&](const auto& p) { return p->library == id; }))
    if (CUresult rc = resolve_probes(); rc != CUDA_SUCCESS) return rc;
  return handle_error(id);
}

}  // namespace scuda::client

namespace client = scuda::client;

CUresult scuda::client::custom::cuLibraryGetModule(CUmodule* module, CUlibrary library) {
  if (CUresult rc = client::library_ready(client::handle_id(library)); rc != CUDA_SUCCESS)
    return rc;
  return client::forward::cuLibraryGetModule(module, library);
}

CUresult scuda::client::custom::cuLibraryGetManaged(CUdeviceptr* dptr, size_t* bytes,
                                                    CUlibrary library, const char* name) {
  if (CUresult rc = client::library_ready(client::handle_id(library)); rc != CUDA_SUCCESS)
    return rc;
  return client::forward::cuLibraryGetManaged(dptr, bytes, library, name);
}

// The pointer is the server's unified address: device work can use it, but
// a host call through it cannot work, as the code lives in the server's
// process.
CUresult scuda::client::custom::cuLibraryGetUnifiedFunction(void** fptr, CUlibrary library,
                                                            const char* symbol) {
  if (CUresult rc = client::library_ready(client::handle_id(library)); rc != CUDA_SUCCESS)
    return rc;
  return client::forward::cuLibraryGetUnifiedFunction(fptr, library, symbol);
}

CUresult scuda::client::custom::cuLibraryGetKernelCount(unsigned int* count, CUlibrary library) {
  if (CUresult rc = client::library_ready(client::handle_id(library)); rc != CUDA_SUCCESS)
    return rc;
  return client::forward::cuLibraryGetKernelCount(count, library);
}
