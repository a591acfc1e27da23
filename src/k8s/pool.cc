#include "k8s/pool.h"

#include <fmt/format.h>

#include <toml++/toml.h>
#include <cctype>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

namespace scuda::k8s {

namespace {

// The kubelet keeps device IDs of up to 63 characters.
constexpr size_t kMaxIdLength = 63;
// A server's GPUs beyond this are a typo rather than a machine.
constexpr int64_t kMaxGpusPerServer = 1024;

// `address` made a DNS label: letters, digits and '-' only.
std::string name_from_address(const std::string& address) {
  std::string name = address.rfind("tls://", 0) == 0 ? address.substr(6) : address;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '-';
  return name;
}

bool valid_name(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') return false;
  return true;
}

// One [[server]] table into *server; "" or what is wrong with it.
std::string read_server(const toml::table& t, PoolServer* server) {
  const std::optional<std::string> address = t["address"].value<std::string>();
  if (!address || address->empty()) return "has no address (\"HOST:PORT\")";
  server->address = *address;
  const std::optional<int64_t> gpus = t["gpus"].value<int64_t>();
  if (!gpus || *gpus < 1 || *gpus > kMaxGpusPerServer)
    return fmt::format("needs gpus, a whole number from 1 to {}", kMaxGpusPerServer);
  server->gpus = static_cast<int>(*gpus);
  server->name = t["name"].value_or(name_from_address(*address));
  if (!valid_name(server->name))
    return fmt::format("has name \"{}\": use letters, digits, '-' and '.'", server->name);
  const size_t longest_id = server->name.size() + 1 + std::to_string(server->gpus - 1).size();
  if (longest_id > kMaxIdLength)
    return fmt::format("makes device IDs longer than {} characters: give it a shorter name",
                       kMaxIdLength);
  return "";
}

// The servers of `file` into *pool; "" or what is wrong.
std::string read_servers(const toml::table& file, Pool* pool) {
  const toml::array* servers = file["server"].as_array();
  if (!servers || servers->empty()) return "lists no [[server]]";
  std::set<std::string> names;
  for (size_t i = 0; i < servers->size(); ++i) {
    const toml::table* t = (*servers)[i].as_table();
    PoolServer server;
    const std::string why = t ? read_server(*t, &server) : "is not a table";
    if (!why.empty()) return fmt::format("server {} {}", i + 1, why);
    if (!names.insert(server.name).second)
      return fmt::format("server {} has the name \"{}\" of another", i + 1, server.name);
    pool->servers.push_back(server);
  }
  return "";
}

}  // namespace

const PoolDevice* Pool::find(const std::string& id) const {
  for (const PoolDevice& d : devices)
    if (d.id == id) return &d;
  return nullptr;
}

bool parse_pool(const std::string& text, const std::string& origin, Pool* pool,
                std::string* error) {
  toml::table file;
  try {
    file = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    *error = fmt::format("{}: {} (line {})", origin, e.description(), e.source().begin.line);
    return false;
  }
  Pool read;
  if (const std::string why = read_servers(file, &read); !why.empty()) {
    *error = fmt::format("{}: {}", origin, why);
    return false;
  }
  for (size_t s = 0; s < read.servers.size(); ++s)
    for (int g = 0; g < read.servers[s].gpus; ++g)
      read.devices.push_back({fmt::format("{}-{}", read.servers[s].name, g), s, g});
  *pool = std::move(read);
  return true;
}

bool load_pool(const std::string& path, Pool* pool, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = fmt::format("cannot read the pool file {}", path);
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  return parse_pool(text.str(), path, pool, error);
}

}  // namespace scuda::k8s
