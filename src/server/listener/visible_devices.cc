#include "server/listener/visible_devices.h"

#include <string>

namespace scuda::server {

std::string printable(const std::string& list) {
  std::string out = list.substr(0, 200);
  for (char& c : out)
    if (c < 0x20 || c > 0x7e) c = '?';
  return out;
}

// The driver offers the GPUs of the server's list up to its first entry
// that names none, so offered GPU i is the list's entry i.
std::string session_visible(const std::vector<size_t>& chosen, const char* server_list) {
  const std::vector<std::string> named =
      server_list ? visible_entries(server_list) : std::vector<std::string>{};
  std::string out;
  for (size_t gpu : chosen) {
    if (!out.empty()) out += ",";
    out += server_list && gpu < named.size() ? named[gpu] : std::to_string(gpu);
  }
  return out;
}

}  // namespace scuda::server
