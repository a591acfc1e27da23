#include "common/server_pick.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/server_request.h"
#include "protocol/ops.h"

namespace scuda {

namespace {

// A number of the status JSON; 0 where it is missing or null (a server
// without NVML does not know the memory in use).
uint64_t number(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

size_t count(const nlohmann::json& status, const char* key) {
  const auto it = status.find(key);
  return it != status.end() && it->is_array() ? it->size() : 0;
}

// Reads the load out of a status answer; false when it is not one.
bool read_load(const std::vector<uint8_t>& body, ServerLoad* load) {
  const nlohmann::json status = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
  if (!status.is_object()) return false;
  load->busy = count(status, "sessions") + count(status, "queue");
  const auto gpus = status.find("gpus");
  if (gpus == status.end() || !gpus->is_array()) return false;
  load->gpus = gpus->size();
  for (const nlohmann::json& gpu : *gpus) {
    if (!gpu.is_object()) return false;
    const uint64_t total = number(gpu, "memory_total_bytes");
    load->free_bytes += total - std::min(total, number(gpu, "memory_used_bytes"));
  }
  return true;
}

// Busy sessions per GPU, compared without division: a/b < c/d.
bool busier(const ServerLoad& a, const ServerLoad& b) {
  return a.busy * std::max<uint64_t>(b.gpus, 1) > b.busy * std::max<uint64_t>(a.gpus, 1);
}

}  // namespace

bool parse_pick(const std::string& pick, Pick* out) {
  if (pick == "first") *out = Pick::kFirst;
  else if (pick == "least-loaded") *out = Pick::kLeastLoaded;
  else if (pick == "local-rank") *out = Pick::kLocalRank;
  else return false;
  return true;
}

int local_rank(std::string* name) {
  for (const char* variable : {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"}) {
    const char* value = std::getenv(variable);
    if (!value || !*value) continue;
    char* end = nullptr;
    const long rank = std::strtol(value, &end, 10);
    if (*end != '\0' || rank < 0 || rank > 1 << 20) return -1;
    *name = variable;
    return static_cast<int>(rank);
  }
  return -1;
}

std::vector<ServerLoad> measure_loads(const std::vector<std::string>& servers,
                                      const std::string& token) {
  std::vector<ServerLoad> loads;
  for (const std::string& address : servers) {
    ServerLoad load;
    load.address = address;
    std::vector<uint8_t> body;
    const bool answered = ask_server(
        {address, protocol::kOpStatus, token, "the status request", std::chrono::seconds(10)},
        &body, &load.error);
    if (answered && !read_load(body, &load))
      load.error = fmt::format(
          "{} answered the status request with something other than its "
          "status",
          address);
    loads.push_back(load);
  }
  return loads;
}

std::vector<ServerLoad> least_loaded_first(std::vector<ServerLoad> loads) {
  std::erase_if(loads, [](const ServerLoad& l) { return !l.error.empty(); });
  std::stable_sort(loads.begin(), loads.end(), [](const ServerLoad& a, const ServerLoad& b) {
    if (busier(a, b)) return false;
    if (busier(b, a)) return true;
    return a.free_bytes > b.free_bytes;
  });
  return loads;
}

bool order_by_load(std::vector<std::string>* servers, const std::string& token,
                   std::vector<std::string>* left_out, std::string* chosen, std::string* error) {
  const std::vector<ServerLoad> loads = measure_loads(*servers, token);
  for (const ServerLoad& load : loads)
    if (!load.error.empty()) left_out->push_back(load.error);
  const std::vector<ServerLoad> order = least_loaded_first(loads);
  if (order.empty()) {
    *error = fmt::format("none of the {} servers answered its status request", servers->size());
    return false;
  }
  *chosen = fmt::format("the least loaded of {} servers is {}", servers->size(),
                        describe_load(order.front()));
  servers->clear();
  for (const ServerLoad& load : order) servers->push_back(load.address);
  return true;
}

std::string describe_load(const ServerLoad& load) {
  return fmt::format("{}: {} busy session(s) on {} GPU(s), {:.1f} GiB free", load.address,
                     load.busy, load.gpus, static_cast<double>(load.free_bytes) / (1ull << 30));
}

}  // namespace scuda
