#include "server/status/metrics_text.h"

#include <map>

#include <fmt/format.h>

namespace scuda::server {

namespace {

void family(std::string* out, const char* name, const char* type, const char* help) {
  *out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void sample(std::string* out, const char* name, uint64_t value) {
  *out += fmt::format("{} {}\n", name, value);
}

// Label values escaped as the format requires.
std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void counters(std::string* out, const ServerState& s) {
  family(out, "scuda_sessions", "gauge", "Client sessions running now.");
  sample(out, "scuda_sessions", s.sessions.size());
  family(out, "scuda_sessions_started_total", "counter",
         "Sessions that completed their handshake.");
  sample(out, "scuda_sessions_started_total", s.sessions_started);
  family(out, "scuda_received_bytes_total", "counter", "Bytes of requests received from clients.");
  sample(out, "scuda_received_bytes_total", s.bytes_in);
  family(out, "scuda_sent_bytes_total", "counter", "Bytes of replies sent to clients.");
  sample(out, "scuda_sent_bytes_total", s.bytes_out);
  family(out, "scuda_requests_total", "counter",
         "Requests served (round trips and one-way requests).");
  sample(out, "scuda_requests_total", s.requests);
  family(out, "scuda_errors_total", "counter",
         "Requests that failed (CUDA errors other than not-ready) and clients refused.");
  sample(out, "scuda_errors_total", s.errors);
}

// Sessions and waiting clients per token (token="" for an unnamed one).
void admission(std::string* out, const ServerState& s) {
  family(out, "scuda_queue_length", "gauge", "Clients waiting in the admission queue.");
  sample(out, "scuda_queue_length", s.queue.size());
  std::map<std::string, std::pair<uint64_t, uint64_t>> by_token;  // sessions, waiting
  for (const SessionState& session : s.sessions) ++by_token[session.token].first;
  for (const QueuedState& q : s.queue) ++by_token[q.token].second;
  family(out, "scuda_token_sessions", "gauge", "Client sessions running now, per token.");
  for (const auto& [token, n] : by_token)
    *out += fmt::format("scuda_token_sessions{{token=\"{}\"}} {}\n", escaped(token), n.first);
  family(out, "scuda_token_queue_length", "gauge",
         "Clients waiting in the admission queue, per token.");
  for (const auto& [token, n] : by_token)
    *out += fmt::format("scuda_token_queue_length{{token=\"{}\"}} {}\n", escaped(token), n.second);
}

// One family per GPU figure, one sample per GPU that has it.
template <typename Has, typename Value>
void per_gpu(std::string* out, const ServerState& s, const char* name, const char* help, Has has,
             Value value) {
  family(out, name, "gauge", help);
  for (const GpuState& g : s.gpus)
    if (has(g))
      *out += fmt::format("{}{{gpu=\"{}\",name=\"{}\"}} {}\n", name, g.index, escaped(g.name),
                          value(g));
}

void gpus(std::string* out, const ServerState& s) {
  per_gpu(
      out, s, "scuda_gpu_memory_total_bytes", "The GPU's memory.",
      [](const GpuState&) { return true; }, [](const GpuState& g) { return g.memory_total; });
  per_gpu(
      out, s, "scuda_gpu_memory_used_bytes", "The GPU's memory in use (from NVML).",
      [](const GpuState& g) { return g.used_known; },
      [](const GpuState& g) { return g.memory_used; });
  per_gpu(
      out, s, "scuda_gpu_utilization_ratio",
      "Share of the last sample period in which a kernel ran (from NVML).",
      [](const GpuState& g) { return g.utilization >= 0; },
      [](const GpuState& g) { return g.utilization / 100.0; });
}

}  // namespace

std::string metrics_text(const ServerState& state) {
  std::string out;
  counters(&out, state);
  admission(&out, state);
  gpus(&out, state);
  return out;
}

}  // namespace scuda::server
