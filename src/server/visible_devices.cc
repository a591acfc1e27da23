#include "server/visible_devices.h"

#include <algorithm>
#include <cctype>

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
  if (!entry.empty() && std::all_of(entry.begin(), entry.end(), ::isdigit)) {
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

}  // namespace

std::vector<std::string> pick_visible(const std::string& client_list,
                                      const std::vector<std::string>& offered) {
  std::vector<std::string> chosen;
  for (size_t at = 0; at <= client_list.size();) {
    const size_t end = std::min(client_list.find(',', at), client_list.size());
    const int gpu = named_gpu(trimmed(client_list.substr(at, end - at)), offered);
    if (gpu < 0 || std::find(chosen.begin(), chosen.end(), offered[gpu]) != chosen.end()) break;
    chosen.push_back(offered[gpu]);
    at = end + 1;
  }
  return chosen;
}

}  // namespace scuda::server
