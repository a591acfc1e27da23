#include "nvml/runtime.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

#include <spdlog/spdlog.h>

#include "client/transport/remote_call.h"
#include "common/config.h"
#include "common/lock_order.h"

namespace scuda::nvml {

namespace {

struct LocalNvml {
  NvmlTable table;
  bool loaded = false;
};

const LocalNvml& local() {
  static const LocalNvml* const n = [] {
    auto* n = new LocalNvml;  // never freed: used until the process ends
    std::string error;
    n->loaded = load_nvml("", &n->table, &error);
    if (!n->loaded)
      spdlog::error("no scuda server is configured (SCUDA_SERVER or ~/.config/scuda/host) and {}",
                    error);
    return n;
  }();
  return *n;
}

}  // namespace

bool passthrough() { return pass_through(); }

const NvmlTable& local_nvml() { return local().table; }

nvmlReturn_t local_missing() {
  return local().loaded ? NVML_ERROR_FUNCTION_NOT_FOUND : NVML_ERROR_LIBRARY_NOT_FOUND;
}

void trace_entry(const char* name) { spdlog::trace("{}", name); }

namespace {

// True the first time `what` is asked of the process: each warning is
// logged once.
bool first_time(const std::string& what) {
  static RankedMutex mu{LockRank::kLeaf, "NVML warnings"};
  static std::set<std::string> seen;
  std::lock_guard lock(mu);
  return seen.insert(what).second;
}

}  // namespace

nvmlReturn_t unsupported(const char* name) {
  if (first_time(std::string("unsupported ") + name))
    spdlog::warn("{} is not supported by scuda yet; it returns NVML_ERROR_NOT_SUPPORTED", name);
  return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t bad_reply(const char* name) {
  spdlog::error("malformed reply from the server to {}", name);
  return NVML_ERROR_UNKNOWN;
}

namespace {

// NVML's ids: this tag in the top 16 bits, the server in the next 8, and a
// count in steps of 16 below.
constexpr uint64_t kIdTag = 0x4e56;
constexpr unsigned kServerShift = 40;

thread_local uint32_t t_server = 0;

}  // namespace

uint64_t new_handle_id() {
  static std::atomic<uint64_t> next{0x1000};
  return (kIdTag << 48) | (uint64_t{t_server & 0xff} << kServerShift) | next.fetch_add(16);
}

uint32_t server_of(uint64_t id) {
  return id >> 48 == kIdTag ? static_cast<uint32_t>(id >> kServerShift) & 0xff : 0;
}

uint32_t server_count() { return std::max(scuda_server_count(), 1u); }

uint32_t current_server() { return t_server; }

bool same_server(std::initializer_list<uint64_t> ids) {
  for (uint64_t id : ids)
    if (server_of(id) != server_of(*ids.begin())) return false;
  return true;
}

nvmlReturn_t across_servers(const char* name) {
  if (first_time(std::string("across ") + name))
    spdlog::warn(
        "{} named devices or objects of two servers, which no server knows together; "
        "it returns NVML_ERROR_NOT_SUPPORTED (docs/pools.md)",
        name);
  return NVML_ERROR_NOT_SUPPORTED;
}

OnServer::OnServer(uint32_t server) : before_(t_server) { t_server = server; }

OnServer::~OnServer() { t_server = before_; }

nvmlReturn_t ask_server(uint32_t op, const protocol::Writer& request, std::vector<uint8_t>* reply) {
  void* data = nullptr;
  size_t size = 0;
  const uint32_t rc =
      scuda_remote_call(t_server, op, request.data().data(), request.size(), &data, &size);
  const auto* bytes = static_cast<const uint8_t*>(data);
  reply->assign(bytes, bytes + size);
  std::free(data);
  if (rc == kScudaRemoteNoSession) return NVML_ERROR_DRIVER_NOT_LOADED;
  if (rc == kScudaRemoteLost) return NVML_ERROR_GPU_IS_LOST;
  return static_cast<nvmlReturn_t>(rc);
}

}  // namespace scuda::nvml
