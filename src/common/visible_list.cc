#include "common/visible_list.h"

#include <algorithm>
#include <cctype>

namespace scuda {

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

// The GPU of `gpus` that `entry` names; -1 when it names none or several.
int named_gpu(const std::string& entry, const std::vector<std::string>& gpus) {
  const auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  if (!entry.empty() && std::all_of(entry.begin(), entry.end(), digit)) {
    if (entry.size() > 4) return -1;
    const size_t index = std::stoul(entry);
    return index < gpus.size() ? static_cast<int>(index) : -1;
  }
  const std::string prefix = lower(entry);
  if (prefix.rfind("gpu-", 0) != 0 || prefix.size() <= 4) return -1;
  int found = -1;
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (lower(gpus[i]).rfind(prefix, 0) != 0) continue;
    if (found >= 0) return -1;
    found = static_cast<int>(i);
  }
  return found;
}

}  // namespace

std::vector<std::string> visible_entries(const std::string& list) {
  std::vector<std::string> out;
  for (size_t at = 0; at <= list.size();) {
    const size_t end = std::min(list.find(',', at), list.size());
    out.push_back(trimmed(list.substr(at, end - at)));
    at = end + 1;
  }
  return out;
}

std::vector<size_t> pick_visible(const std::string& list, const std::vector<std::string>& gpus) {
  std::vector<size_t> chosen;
  for (const std::string& entry : visible_entries(list)) {
    const int gpu = named_gpu(entry, gpus);
    if (gpu < 0 || std::find(chosen.begin(), chosen.end(), size_t(gpu)) != chosen.end()) break;
    chosen.push_back(static_cast<size_t>(gpu));
  }
  return chosen;
}

}  // namespace scuda
