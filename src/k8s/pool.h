// The pool of remote GPUs a node's device plugin advertises: the scuda
// servers of its pool file, and one device per GPU of each.
#pragma once

#include <string>
#include <vector>

namespace scuda::k8s {

struct PoolServer {
  std::string name;     // stable, DNS-label-like: the prefix of its devices' IDs
  std::string address;  // what SCUDA_SERVER takes: HOST:PORT or tls://HOST:PORT
  int gpus = 0;
};

struct PoolDevice {
  std::string id;  // "<server name>-<gpu>", at most 63 characters (the kubelet's limit)
  size_t server;   // index into Pool::servers
  int gpu;         // the GPU's index on its server
};

struct Pool {
  std::vector<PoolServer> servers;
  std::vector<PoolDevice> devices;  // server by server, GPU by GPU
  // The device with this ID; nullptr when the pool has none.
  const PoolDevice* find(const std::string& id) const;
};

// Reads a pool file (TOML, one [[server]] table each with `address`, `gpus`
// and an optional `name`); false with *error naming the file and the fault.
bool load_pool(const std::string& path, Pool* pool, std::string* error);

// The same from the file's text; `origin` names it in errors.
bool parse_pool(const std::string& text, const std::string& origin, Pool* pool, std::string* error);

}  // namespace scuda::k8s
