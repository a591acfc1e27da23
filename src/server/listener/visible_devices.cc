#include "server/listener/visible_devices.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace scuda::server {

namespace {

std::string trimmed(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// The offered GPU that `entry` names; -1 when it names none or several.
int named_gpu(const std::string& entry, const std::vector<std::string>& offered) {
  const auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  if (!entry.empty() && std::all_of(entry.begin(), entry.end(), digit)) {
    if (entry.size() > 4) return -1;
    const size_t index = std::stoul(entry);
    return index < offered.size() ? static_cast<int>(index) : -1;
  }
  const std::string prefix = lower(entry);
  if (prefix.rfind("gpu-", 0) != 0 || prefix.size() <= 4) return -1;
  int found = -1;
  for (size_t i = 0; i < offered.size(); ++i) {
    if (lower(offered[i]).rfind(prefix, 0) != 0) continue;
    if (found >= 0) return -1;
    found = static_cast<int>(i);
  }
  return found;
}

// The entries of a comma-separated list, trimmed.
std::vector<std::string> entries(const std::string& list) {
  std::vector<std::string> out;
  for (size_t at = 0; at <= list.size();) {
    const size_t end = std::min(list.find(',', at), list.size());
    out.push_back(trimmed(list.substr(at, end - at)));
    at = end + 1;
  }
  return out;
}

}  // namespace

std::vector<size_t> pick_visible(const std::string& client_list,
                                 const std::vector<std::string>& offered) {
  std::vector<size_t> chosen;
  for (const std::string& entry : entries(client_list)) {
    const int gpu = named_gpu(entry, offered);
    if (gpu < 0 || std::find(chosen.begin(), chosen.end(), size_t(gpu)) != chosen.end()) break;
    chosen.push_back(static_cast<size_t>(gpu));
  }
  return chosen;
}

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
      server_list ? entries(server_list) : std::vector<std::string>{};
  std::string out;
  for (size_t gpu : chosen) {
    if (!out.empty()) out += ",";
    out += server_list && gpu < named.size() ? named[gpu] : std::to_string(gpu);
  }
  return out;
}

}  // namespace scuda::server
