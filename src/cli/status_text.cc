#include "cli/status_text.h"

#include <fmt/format.h>

namespace scuda::cli {

namespace {

using nlohmann::json;

std::string bytes(uint64_t n) {
  if (n < 1024) return fmt::format("{} B", n);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = -1;
  while (v >= 1024 && u < 3) v /= 1024, ++u;
  return fmt::format("{:.1f} {}", v, units[u]);
}

std::string duration(double seconds) {
  const auto s = static_cast<uint64_t>(seconds);
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
}

std::string gpu_line(const json& g) {
  std::string line = fmt::format("  {}  {}  ", g["index"].get<int>(), g["name"].get<std::string>());
  const uint64_t total = g["memory_total_bytes"].get<uint64_t>();
  if (g["memory_used_bytes"].is_null()) line += fmt::format("{} memory", bytes(total));
  else
    line +=
        fmt::format("{} of {} in use", bytes(g["memory_used_bytes"].get<uint64_t>()), bytes(total));
  if (!g["utilization_percent"].is_null())
    line += fmt::format(", {}% busy", g["utilization_percent"].get<int>());
  return line + "\n";
}

std::string gpus(const json& status) {
  const std::string source = status["gpu_source"].get<std::string>();
  if (status["gpus"].empty())
    return source.empty() ? "GPUs: not yet known (the GPU monitor has not reported)\n"
                          : "GPUs: none\n";
  std::string text = fmt::format("GPUs (from {}):\n", source);
  for (const json& g : status["gpus"]) text += gpu_line(g);
  return text;
}

// A token's name as the JSON has it (null: the unnamed one).
std::string token_name(const json& token) {
  return token.is_null() ? "-" : token.get<std::string>();
}

std::string sessions(const json& status) {
  const json& list = status["sessions"];
  if (list.empty()) return "Sessions: none\n";
  std::string text = fmt::format(
      "Sessions: {}\n  {:<8} {:<22} {:<16} {:<16} {:>8} {:>11} {:>11} {:>11} {:>9} {:>6}\n",
      list.size(), "PID", "PEER", "TOKEN", "PROGRAM", "AGE", "DEVICE MEM", "RECEIVED", "SENT",
      "REQUESTS", "ERRORS");
  for (const json& s : list)
    text += fmt::format("  {:<8} {:<22} {:<16} {:<16} {:>8} {:>11} {:>11} {:>11} {:>9} {:>6}\n",
                        s["pid"].get<int>(), s["peer"].get<std::string>(), token_name(s["token"]),
                        s["program"].get<std::string>(), duration(s["age_seconds"].get<double>()),
                        bytes(s["device_memory_bytes"].get<uint64_t>()),
                        bytes(s["bytes_received"].get<uint64_t>()),
                        bytes(s["bytes_sent"].get<uint64_t>()), s["requests"].get<uint64_t>(),
                        s["errors"].get<uint64_t>());
  return text;
}

std::string queue(const json& status) {
  if (!status.contains("queue") || status["queue"].empty()) return "Queue: empty\n";
  const json& list = status["queue"];
  std::string text = fmt::format("Queue: {} waiting\n  {:>4} {:<8} {:<16} {:<22} {:>8} {:>8}\n",
                                 list.size(), "POS", "PID", "TOKEN", "PEER", "PRIORITY", "WAITED");
  for (const json& q : list)
    text += fmt::format("  {:>4} {:<8} {:<16} {:<22} {:>8} {:>8}\n", q["position"].get<uint32_t>(),
                        q["pid"].get<int>(), token_name(q["token"]), q["peer"].get<std::string>(),
                        q["priority"].get<int>(), duration(q["waited_seconds"].get<double>()));
  return text;
}

std::string totals(const json& status) {
  const json& t = status["totals"];
  return fmt::format("Since start: {} sessions, {} received, {} sent, {} requests, {} errors\n",
                     t["sessions_started"].get<uint64_t>(),
                     bytes(t["bytes_received"].get<uint64_t>()),
                     bytes(t["bytes_sent"].get<uint64_t>()), t["requests"].get<uint64_t>(),
                     t["errors"].get<uint64_t>());
}

}  // namespace

std::string status_text(const std::string& address, const json& status) {
  return fmt::format("scuda server {}, up {}\n", address,
                     duration(status["uptime_seconds"].get<double>())) +
         gpus(status) + sessions(status) + queue(status) + totals(status);
}

}  // namespace scuda::cli
