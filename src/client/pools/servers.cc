#include "client/pools/servers.h"

#include <algorithm>
#include <atomic>

namespace scuda::client {

namespace {

// Written once, before g_count is published; read-only after.
Connection* g_servers[kMaxServers] = {};
std::vector<DeviceHome>* g_homes = nullptr;  // never freed: used until exit
protocol::Welcome* g_merged = nullptr;       // never freed: used until exit
std::atomic<uint32_t> g_count{0};

protocol::Welcome merge(const std::vector<Connection*>& servers, std::vector<DeviceHome>* homes) {
  protocol::Welcome merged = servers.front()->welcome();
  merged.devices.clear();
  for (uint32_t s = 0; s < servers.size(); ++s) {
    const protocol::Welcome& w = servers[s]->welcome();
    merged.driver_version = std::min(merged.driver_version, w.driver_version);
    for (size_t d = 0; d < w.devices.size(); ++d) {
      merged.devices.push_back(w.devices[d]);
      homes->push_back({s, static_cast<CUdevice>(d)});
    }
  }
  return merged;
}

}  // namespace

void set_servers(std::vector<Connection*> servers) {
  if (servers.empty() || servers.size() > kMaxServers) return;
  auto* homes = new std::vector<DeviceHome>;
  g_merged = new protocol::Welcome(merge(servers, homes));
  g_homes = homes;
  std::copy(servers.begin(), servers.end(), g_servers);
  g_count.store(static_cast<uint32_t>(servers.size()), std::memory_order_release);
}

uint32_t server_count() { return g_count.load(std::memory_order_acquire); }

bool several_servers() { return g_count.load(std::memory_order_relaxed) > 1; }

Connection* server_connection(uint32_t i) { return i < server_count() ? g_servers[i] : nullptr; }

bool device_home(CUdevice dev, DeviceHome* home) {
  if (server_count() == 0 || dev < 0 || static_cast<size_t>(dev) >= g_homes->size()) return false;
  *home = (*g_homes)[dev];
  return true;
}

bool on_two_servers(CUdevice a, CUdevice b) {
  DeviceHome ha, hb;
  return several_servers() && device_home(a, &ha) && device_home(b, &hb) && ha.server != hb.server;
}

CUdevice global_device(uint32_t server, CUdevice local) {
  if (server_count() == 0) return local;
  for (size_t d = 0; d < g_homes->size(); ++d)
    if ((*g_homes)[d].server == server && (*g_homes)[d].local == local)
      return static_cast<CUdevice>(d);
  return local;
}

const protocol::Welcome& merged_welcome() { return *g_merged; }

}  // namespace scuda::client
