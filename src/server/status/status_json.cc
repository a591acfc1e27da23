#include "server/status/status_json.h"

namespace scuda::server {

namespace {

// A token's name, or null for the unnamed one of --token-file (or none).
nlohmann::json token_json(const std::string& name) {
  return name.empty() ? nlohmann::json(nullptr) : nlohmann::json(name);
}

nlohmann::json session_json(const SessionState& s) {
  return {{"pid", s.pid},
          {"peer", s.peer},
          {"program", s.program},
          {"token", token_json(s.token)},
          {"age_seconds", static_cast<double>(s.age_ms) / 1000},
          {"device_memory_bytes", s.device_memory},
          {"bytes_received", s.bytes_in},
          {"bytes_sent", s.bytes_out},
          {"requests", s.requests},
          {"errors", s.errors}};
}

nlohmann::json queued_json(const QueuedState& q) {
  return {{"pid", q.pid},
          {"peer", q.peer},
          {"token", token_json(q.token)},
          {"priority", q.priority},
          {"position", q.position},
          {"waited_seconds", static_cast<double>(q.waited_ms) / 1000}};
}

nlohmann::json gpu_json(const GpuState& g) {
  nlohmann::json j = {{"index", g.index},
                      {"name", g.name},
                      {"memory_total_bytes", g.memory_total},
                      {"memory_used_bytes", nullptr},
                      {"utilization_percent", nullptr}};
  if (g.used_known) j["memory_used_bytes"] = g.memory_used;
  if (g.utilization >= 0) j["utilization_percent"] = g.utilization;
  return j;
}

}  // namespace

nlohmann::json status_json(const ServerState& state) {
  nlohmann::json sessions = nlohmann::json::array();
  for (const SessionState& s : state.sessions) sessions.push_back(session_json(s));
  nlohmann::json queue = nlohmann::json::array();
  for (const QueuedState& q : state.queue) queue.push_back(queued_json(q));
  nlohmann::json gpus = nlohmann::json::array();
  for (const GpuState& g : state.gpus) gpus.push_back(gpu_json(g));
  return {{"uptime_seconds", static_cast<double>(state.uptime_ms) / 1000},
          {"gpu_source", state.gpu_source},
          {"gpus", gpus},
          {"sessions", sessions},
          {"queue", queue},
          {"totals",
           {{"sessions_started", state.sessions_started},
            {"bytes_received", state.bytes_in},
            {"bytes_sent", state.bytes_out},
            {"requests", state.requests},
            {"errors", state.errors}}}};
}

}  // namespace scuda::server
