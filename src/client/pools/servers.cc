#include "client/pools/servers.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>

#include "common/gpu_uuid.h"
#include "common/visible_list.h"

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

// Keeps the devices of `merged` (and their homes) that `visible` picks, in
// its order, as a local driver reads CUDA_VISIBLE_DEVICES over its GPUs.
void narrow(const char* visible, protocol::Welcome* merged, std::vector<DeviceHome>* homes) {
  std::vector<std::string> uuids;
  for (const protocol::DeviceInfo& d : merged->devices) uuids.push_back(gpu_uuid_text(d.uuid));
  std::vector<protocol::DeviceInfo> devices;
  std::vector<DeviceHome> kept;
  for (size_t i : pick_visible(visible, uuids)) {
    devices.push_back(merged->devices[i]);
    kept.push_back((*homes)[i]);
  }
  merged->devices = std::move(devices);
  *homes = std::move(kept);
}

}  // namespace

bool set_servers(std::vector<Connection*> servers, const char* visible) {
  if (servers.empty() || servers.size() > kMaxServers) return false;
  auto homes = std::make_unique<std::vector<DeviceHome>>();
  protocol::Welcome merged = merge(servers, homes.get());
  if (visible) narrow(visible, &merged, homes.get());
  if (visible && homes->empty()) return false;
  g_merged = new protocol::Welcome(std::move(merged));
  g_homes = homes.release();
  std::copy(servers.begin(), servers.end(), g_servers);
  g_count.store(static_cast<uint32_t>(servers.size()), std::memory_order_release);
  return true;
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
