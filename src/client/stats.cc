#include "client/stats.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "client/state.h"
#include "client/transport/connection.h"
#include "client/transport/session.h"
#include "common/lock_order.h"
#include "protocol/ops.h"

namespace scuda::client::stats {

namespace {

struct Row {
  uint64_t calls = 0;
  uint64_t one_way = 0;
  uint64_t round_trips = 0;
  uint64_t deferred = 0;  // replies read while awaiting another: no round trip
  uint64_t bytes_out = 0;
  uint64_t bytes_in = 0;
  uint64_t waited_ns = 0;
};

using Table = std::vector<std::pair<std::string, Row>>;

std::string table_text(const Table& rows) {
  std::string out =
      fmt::format("{:<44}{:>10}{:>9}{:>9}{:>9}{:>13}{:>13}{:>11}\n", "scuda stats: function",
                  "calls", "one-way", "sync", "deferred", "bytes out", "bytes in", "waited ms");
  for (const auto& [name, r] : rows)
    out += fmt::format("{:<44}{:>10}{:>9}{:>9}{:>9}{:>13}{:>13}{:>11.3f}\n", name, r.calls,
                       r.one_way, r.round_trips, r.deferred, r.bytes_out, r.bytes_in,
                       static_cast<double>(r.waited_ns) / 1e6);
  return out;
}

std::string json_text(const Table& rows) {
  std::vector<std::string> items;
  for (const auto& [name, r] : rows)
    items.push_back(
        fmt::format("{{\"function\":\"{}\",\"calls\":{},\"one_way\":{},\"round_trips\":{},"
                    "\"deferred\":{},\"bytes_out\":{},\"bytes_in\":{},\"waited_ms\":{:.3f}}}",
                    name, r.calls, r.one_way, r.round_trips, r.deferred, r.bytes_out, r.bytes_in,
                    static_cast<double>(r.waited_ns) / 1e6));
  return "[\n" + fmt::format("{}", fmt::join(items, ",\n")) + "\n]\n";
}

bool write_json(const Table& rows, const char* path) {
  FILE* f = std::fopen(path, "w");
  if (!f) return false;
  const bool written = std::fputs(json_text(rows).c_str(), f) >= 0;
  return std::fclose(f) == 0 && written;
}

}  // namespace

namespace parts {

// Collects rows; report() writes them out, at the process's exit.
class Stats {
 public:
  Stats();
  Row& row(const std::string& name) { return rows_[name]; }
  RankedMutex& mutex() { return mu_; }

  // The rows so far, most called first.
  Table rows() {
    std::lock_guard lock(mu_);
    Table rows(rows_.begin(), rows_.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
      return a.second.calls != b.second.calls ? a.second.calls > b.second.calls : a.first < b.first;
    });
    return rows;
  }

  void report() {
    const Table all = rows();
    if (const char* path = std::getenv("SCUDA_STATS_JSON"); path && *path) write_json(all, path);
    if (const char* flag = std::getenv("SCUDA_STATS"); flag && *flag && *flag != '0')
      std::fputs(table_text(all).c_str(), stderr);
  }

 private:
  RankedMutex mu_{LockRank::kStats, "Stats::mu_"};
  std::unordered_map<std::string, Row> rows_;
};

}  // namespace parts

namespace {

using parts::Stats;

Stats& stats() { return client_state().stats.get(); }

}  // namespace

// Never destroyed (ClientState), so calls made while the process exits
// still count.
Stats::Stats() {
  std::atexit([] { stats().report(); });
}

namespace {

Row& row_for_op(uint32_t op) { return stats().row(protocol::op_name(op)); }

}  // namespace

bool enabled() {
  static const bool on = [] {
    const char* flag = std::getenv("SCUDA_STATS");
    const char* json = std::getenv("SCUDA_STATS_JSON");
    return (flag && *flag && *flag != '0') || (json && *json);
  }();
  return on;
}

void count_call(const char* name) {
  std::lock_guard lock(stats().mutex());
  ++stats().row(name).calls;
}

void count_send(uint32_t op, size_t bytes, bool one_way) {
  std::lock_guard lock(stats().mutex());
  Row& r = row_for_op(op);
  r.bytes_out += bytes;
  if (one_way) ++r.one_way;
}

void count_reply(uint32_t op, size_t bytes, uint64_t waited_ns, bool awaited) {
  std::lock_guard lock(stats().mutex());
  Row& r = row_for_op(op);
  ++(awaited ? r.round_trips : r.deferred);
  r.bytes_in += bytes;
  r.waited_ns += waited_ns;
}

void count_lane_bytes(uint32_t op, size_t bytes, bool outgoing) {
  std::lock_guard lock(stats().mutex());
  Row& r = row_for_op(op);
  (outgoing ? r.bytes_out : r.bytes_in) += bytes;
}

void count_lz4(uint32_t op, size_t raw_bytes, bool outgoing) {
  std::lock_guard lock(stats().mutex());
  Row& r = stats().row(std::string(protocol::op_name(op)) + " lz4");
  ++r.calls;
  (outgoing ? r.bytes_out : r.bytes_in) += raw_bytes;
}

void count_unsupported(const char* name) {
  std::lock_guard lock(stats().mutex());
  ++stats().row(std::string(name) + " (not supported)").calls;
}

void count_time(const char* name, uint64_t ns) {
  std::lock_guard lock(stats().mutex());
  Row& r = stats().row(name);
  ++r.calls;
  r.waited_ns += ns;
}

}  // namespace scuda::client::stats

// For benchmarks (bench/apps/step_time.py reads it through ctypes): replies
// this process has waited for so far, 0 before a session exists.
extern "C" __attribute__((visibility("default"))) uint64_t scuda_replies_awaited() {
  const scuda::client::Connection* conn = scuda::client::connection();
  return conn ? conn->replies_awaited() : 0;
}

// For benchmarks: the stats so far as SCUDA_STATS_JSON would hold them, so
// that a phase of a program (bench/apps/step_time.py's first step) can be
// told apart by difference. 0 when written; -1 when stats are off or the
// file cannot be.
extern "C" __attribute__((visibility("default"))) int scuda_stats_write(const char* path) {
  namespace stats = scuda::client::stats;
  if (!stats::enabled() || !path) return -1;
  spdlog::debug("stats written to {}", path);
  return stats::write_json(stats::stats().rows(), path) ? 0 : -1;
}
