#include "k8s/allocation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

namespace scuda::k8s {

namespace {

// The available devices not yet chosen, by server, in pool order.
std::map<size_t, std::vector<const PoolDevice*>> free_by_server(
    const Pool& pool, const std::vector<std::string>& available,
    const std::vector<std::string>& chosen) {
  std::map<size_t, std::vector<const PoolDevice*>> by_server;
  for (const PoolDevice& d : pool.devices)
    if (std::count(available.begin(), available.end(), d.id) &&
        !std::count(chosen.begin(), chosen.end(), d.id))
      by_server[d.server].push_back(&d);
  return by_server;
}

// The order to take servers in: those holding chosen devices first, then
// the most devices free first.
std::vector<size_t> server_order(const Pool& pool,
                                 const std::map<size_t, std::vector<const PoolDevice*>>& free,
                                 const std::vector<std::string>& chosen) {
  std::vector<size_t> order;
  order.reserve(free.size());
  for (const auto& [server, devices] : free) order.push_back(server);
  auto holds_chosen = [&](size_t server) {
    return std::any_of(chosen.begin(), chosen.end(), [&](const std::string& id) {
      const PoolDevice* d = pool.find(id);
      return d && d->server == server;
    });
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (holds_chosen(a) != holds_chosen(b)) return holds_chosen(a);
    return free.at(a).size() > free.at(b).size();
  });
  return order;
}

std::string join(const std::vector<int>& numbers) {
  return fmt::format("{}", fmt::join(numbers, ","));
}

}  // namespace

std::vector<std::string> preferred_devices(const Pool& pool,
                                           const std::vector<std::string>& available,
                                           const std::vector<std::string>& must_include,
                                           size_t size) {
  std::vector<std::string> chosen;
  for (const std::string& id : must_include)
    if (chosen.size() < size && !std::count(chosen.begin(), chosen.end(), id)) chosen.push_back(id);
  const auto free = free_by_server(pool, available, chosen);
  for (size_t server : server_order(pool, free, chosen))
    for (const PoolDevice* d : free.at(server))
      if (chosen.size() < size) chosen.push_back(d->id);
  return chosen;
}

bool container_response(const Pool& pool, const Handout& handout,
                        const std::vector<std::string>& ids,
                        v1beta1::ContainerAllocateResponse* response, std::string* error) {
  std::vector<int> gpus;
  const PoolDevice* first = nullptr;
  for (const std::string& id : ids) {
    const PoolDevice* d = pool.find(id);
    if (!d) {
      *error = fmt::format("no device {} in this plugin's pool", id);
      return false;
    }
    if (first && d->server != first->server) {
      *error = fmt::format(
          "devices {} and {} are on different servers; the plugin gives a container "
          "the GPUs of one server (it numbers GPUs by their index on their server)",
          first->id, d->id);
      return false;
    }
    first = first ? first : d;
    gpus.push_back(d->gpu);
  }
  if (!first) {
    *error = "a container asked for no device";
    return false;
  }
  const std::string dir = handout.container_dir;
  auto& envs = *response->mutable_envs();
  envs["SCUDA_SERVER"] = pool.servers[first->server].address;
  envs["CUDA_VISIBLE_DEVICES"] = join(gpus);
  envs["LD_PRELOAD"] =
      fmt::format("{0}/{1}/{2} {0}/{1}/{3}", dir, kLibName, kDriverStandIn, kNvmlStandIn);
  if (handout.token) envs["SCUDA_TOKEN_FILE"] = fmt::format("{}/{}", dir, kTokenName);
  if (handout.tls_ca) envs["SCUDA_TLS_CA"] = fmt::format("{}/{}", dir, kCaName);
  v1beta1::Mount* mount = response->add_mounts();
  mount->set_host_path(handout.host_dir);
  mount->set_container_path(dir);
  mount->set_read_only(true);
  return true;
}

}  // namespace scuda::k8s
