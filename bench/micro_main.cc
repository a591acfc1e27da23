// scuda-bench-micro: protocol-overhead figures of scuda against the server
// SCUDA_SERVER names, each beside the same measurement over plain TCP on the
// same link (bench/README.md).
#include <dlfcn.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <map>
#include <string>

#include "cuda_figures.h"
#include "peer.h"
#include "report.h"

namespace scuda::bench {

namespace {

struct Options {
  std::string json_path;
  std::string echo;         // raw-TCP peer; empty: one on loopback in this process
  std::string echo_server;  // serve as the peer instead of measuring
  std::string link = "unknown";
  ModuleKind module = ModuleKind::kAuto;
  bool quick = false;
  bool copies_only = false;  // only the pageable copies' throughput (scuda bench's TLS figure)
  size_t transfer_mib = 256;
};

// Transfers are measured in rounds of one sample of each figure
// (measure_transfers).
struct Rounds {
  int min, max;
  double budget_s;  // no round begins after this, once `min` are done
};

struct Plans {
  Plan latency, transfer, launch;  // latency and transfer: per round
  Rounds latency_rounds, rounds;
  size_t transfer_bytes;
  int launches;
  Plan live;  // each sample a launch, two synchronizations and a sleep of 2 ms
};

Plans plans_for(const Options& o) {
  if (o.quick)
    return {{5, 3, 70, 1}, {1, 1, 1, 2},     {1, 3, 3, 2}, {3, 3, 0},
            {3, 3, 0},     size_t{16} << 20, 2000,         {1, 3, 5, 5}};
  return {{10, 5, 200, 2}, {1, 1, 1, 10},        {1, 3, 5, 20}, {10, 10, 15},
          {3, 9, 30},      o.transfer_mib << 20, 20000,         {3, 20, 100, 10}};
}

double gbit_per_s(size_t bytes, double seconds) { return bytes * 8.0 / seconds / 1e9; }

void add_transfer(Report& r, const std::string& key, size_t bytes,
                  const std::vector<double>& seconds) {
  std::vector<double> rates;
  for (double s : seconds) rates.push_back(gbit_per_s(bytes, s));
  r.add(key, median(rates), rates.size());
}

// Each round takes one sample of every figure, alternating scuda's copies
// with raw TCP's, so that a change in the machine's load during the run
// weighs on both sides of each ratio alike. A 256 MiB copy on loopback varies
// by a tenth from one sample to the next as the scheduler places the
// threads, so the full plan takes up to 9 rounds.
template <class F>
void in_rounds(const Rounds& rounds, F&& one_round) {
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < rounds.max && (i < rounds.min || seconds_since(start) < rounds.budget_s); ++i)
    one_round();
}

// In rounds, alternating scuda's round trips with raw TCP's, as the
// transfers do: the loopback's round trip alone moves by a third from one
// run to the next. The raw pings are taken both as most programs wait,
// sleeping in a read, and as scuda's waits do, spinning first.
void measure_latency(CudaBench& cuda, RawLink& raw, const Plans& p, Report& r) {
  std::vector<double> scuda, tcp, spinning;
  auto take = [](std::vector<double>& all, const std::vector<double>& more) {
    all.insert(all.end(), more.begin(), more.end());
  };
  in_rounds(p.latency_rounds, [&] {
    take(scuda, cuda.sync_copy(p.latency));
    take(tcp, raw.ping(p.latency));
    take(spinning, raw.ping(p.latency, kWaitSpin));
  });
  r.add("sync_rtt_us", median(scuda) * 1e6, scuda.size());
  r.add("raw_tcp_rtt_us", median(tcp) * 1e6, tcp.size());
  r.add("raw_tcp_spin_rtt_us", median(spinning) * 1e6, spinning.size());
  r.add_ratio("sync_rtt_ratio", "sync_rtt_us", "raw_tcp_rtt_us");
  r.add_ratio("sync_rtt_spin_ratio", "sync_rtt_us", "raw_tcp_spin_rtt_us");
}

using LanesOpen = uint32_t (*)();

// The lanes scuda's large copies take (none when the local driver answers,
// or SCUDA_LANES=1). The first large copy opens them in the background; the
// figures wait for them, so that every sample takes them.
uint32_t open_lanes(CudaBench& cuda, const Plans& p) {
  auto open = reinterpret_cast<LanesOpen>(dlsym(RTLD_DEFAULT, "scuda_lanes_open"));
  if (!open) return 0;
  const Plan once{0, 1, 1, 0};
  cuda.htod(p.transfer_bytes, false, once);
  const Clock::time_point start = Clock::now();
  while (!open() && seconds_since(start) < 5) cuda.htod(p.transfer_bytes, false, once);
  return open();
}

// Raw TCP both over one connection, the figure scuda's must come near, and
// over as many as scuda has lanes, what its lanes could at best reach.
void measure_transfers(CudaBench& cuda, RawLink& raw, const std::string& peer, uint32_t lanes,
                       const Plans& p, Report& r) {
  const size_t n = p.transfer_bytes;
  const Plan& round = p.transfer;
  RawLinks parallel(peer, lanes < 2 ? 0 : lanes);  // used only with lanes
  std::map<std::string, std::vector<double>> seconds;
  auto take = [&](const char* key, const std::vector<double>& more) {
    seconds[key].insert(seconds[key].end(), more.begin(), more.end());
  };
  in_rounds(p.rounds, [&] {
    take("h2d_gbps", cuda.htod(n, false, round));
    take("raw_tcp_gbps", raw.upload(n, round));
    take("d2h_gbps", cuda.dtoh(n, false, round));
    take("raw_tcp_down_gbps", raw.download(n, round));
    take("h2d_pinned_gbps", cuda.htod(n, true, round));
    take("d2h_pinned_gbps", cuda.dtoh(n, true, round));
    take("managed_pull_gbps", cuda.managed_pull(n, round));
    take("managed_push_gbps", cuda.managed_push(n, round));
    if (lanes < 2) return;
    take("raw_tcp_lanes_gbps", parallel.upload(n, round));
    take("raw_tcp_lanes_down_gbps", parallel.download(n, round));
  });
  for (const auto& [key, samples] : seconds) add_transfer(r, key, n, samples);
  r.add("lanes", lanes, 1);
  r.add_ratio("h2d_ratio", "h2d_gbps", "raw_tcp_gbps");
  r.add_ratio("h2d_pinned_ratio", "h2d_pinned_gbps", "raw_tcp_gbps");
  r.add_ratio("d2h_ratio", "d2h_gbps", "raw_tcp_down_gbps");
  r.add_ratio("d2h_pinned_ratio", "d2h_pinned_gbps", "raw_tcp_down_gbps");
  r.add_ratio("managed_pull_ratio", "managed_pull_gbps", "raw_tcp_down_gbps");
  r.add_ratio("managed_push_ratio", "managed_push_gbps", "raw_tcp_gbps");
  if (lanes < 2) return;
  r.add_ratio("h2d_lanes_ratio", "h2d_gbps", "raw_tcp_lanes_gbps");
  r.add_ratio("h2d_pinned_lanes_ratio", "h2d_pinned_gbps", "raw_tcp_lanes_gbps");
  r.add_ratio("d2h_lanes_ratio", "d2h_gbps", "raw_tcp_lanes_down_gbps");
  r.add_ratio("d2h_pinned_lanes_ratio", "d2h_pinned_gbps", "raw_tcp_lanes_down_gbps");
}

using SetCompression = int (*)(const char*);

// The stand-in's switch for SCUDA_COMPRESS, or nullptr when the local driver
// answers (there is nothing to compress then).
SetCompression compression_switch() {
  return reinterpret_cast<SetCompression>(dlsym(RTLD_DEFAULT, "scuda_set_compression"));
}

// A mostly-zero buffer copied with lz4 off and in auto mode, alternately,
// after measure_transfers has let auto measure the link (with lz4 off).
void measure_compression(CudaBench& cuda, SetCompression set, const Plans& p, Report& r) {
  const size_t n = p.transfer_bytes;
  const Plan& round = p.transfer;
  std::map<std::string, std::vector<double>> seconds;
  auto take = [&](const char* key, const char* mode, bool up) {
    set(mode);
    const auto more = up ? cuda.htod(n, false, round, Content::kCompressible)
                         : cuda.dtoh(n, false, round, Content::kCompressible);
    seconds[key].insert(seconds[key].end(), more.begin(), more.end());
  };
  in_rounds(p.rounds, [&] {
    take("h2d_sparse_gbps", "off", true);
    take("h2d_sparse_lz4_gbps", "auto", true);
    take("d2h_sparse_gbps", "off", false);
    take("d2h_sparse_lz4_gbps", "auto", false);
  });
  set("off");
  for (const auto& [key, samples] : seconds) add_transfer(r, key, n, samples);
  r.add_ratio("h2d_lz4_speedup", "h2d_sparse_lz4_gbps", "h2d_sparse_gbps");
  r.add_ratio("d2h_lz4_speedup", "d2h_sparse_lz4_gbps", "d2h_sparse_gbps");
}

// Each local query's median, and local_query_ns: the slowest of them, which
// the budget per call bounds.
void measure_local_queries(CudaBench& cuda, const Options& o, const Plans& p, Report& r) {
  double slowest = 0;
  size_t samples = 0;
  for (const auto& [name, ns] : cuda.local_queries(o.module, p.latency)) {
    const double m = median(ns);
    r.add("local_query_ns_" + name, m, ns.size());
    if (m >= slowest) slowest = m, samples = ns.size();
  }
  r.add("local_query_ns", slowest, samples);
}

void measure_launches(CudaBench& cuda, const Options& o, const Plans& p, Report& r) {
  std::vector<double> rates, cpu;
  for (const auto& s : cuda.launches(o.module, p.launches, p.launch)) {
    rates.push_back(s.per_second);
    cpu.push_back(s.cpu_us_per_launch);
  }
  r.add("launch_rate_per_s", median(rates), rates.size());
  r.add("launch_client_cpu_us", median(cpu), cpu.size());
  std::vector<double> copy_cpu, copy_replies;
  for (const auto& s : cuda.copy_cpu(p.launches, p.launch)) {
    copy_cpu.push_back(s.cpu_us);
    copy_replies.push_back(s.replies_per_copy);
  }
  r.add("copy_client_cpu_us", median(copy_cpu), copy_cpu.size());
  r.add("copy_replies_per_copy", median(copy_replies), copy_replies.size());
  const std::vector<double> pairs = cuda.alloc_free(p.latency);
  r.add("alloc_free_us", median(pairs) * 1e6, pairs.size());
  // Said and left out when it fails: the rest of the figures stand.
  try {
    const std::vector<double> live = cuda.live_exchange(p.live);
    r.add("live_rtt_us", median(live) * 1e6, live.size());
    r.add_ratio("live_rtt_ratio", "live_rtt_us", "raw_tcp_spin_rtt_us");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scuda-bench-micro: live_rtt_us not measured: %s\n", e.what());
  }
}

const std::vector<Row> kRows = {
    {"4-byte cuMemcpyDtoH round trip, µs", "sync_rtt_us", "raw_tcp_rtt_us", "sync_rtt_ratio"},
    {"... beside a ping whose ends spin, µs", "sync_rtt_us", "raw_tcp_spin_rtt_us",
     "sync_rtt_spin_ratio"},
    {"H2D pageable, Gbit/s", "h2d_gbps", "raw_tcp_gbps", "h2d_ratio"},
    {"H2D cuMemHostAlloc, Gbit/s", "h2d_pinned_gbps", "raw_tcp_gbps", "h2d_pinned_ratio"},
    {"D2H pageable, Gbit/s", "d2h_gbps", "raw_tcp_down_gbps", "d2h_ratio"},
    {"D2H cuMemHostAlloc, Gbit/s", "d2h_pinned_gbps", "raw_tcp_down_gbps", "d2h_pinned_ratio"},
    {"host reads managed memory after device work, Gbit/s", "managed_pull_gbps",
     "raw_tcp_down_gbps", "managed_pull_ratio"},
    {"host writes managed memory, device reads it, Gbit/s", "managed_push_gbps", "raw_tcp_gbps",
     "managed_push_ratio"},
    {"empty-kernel launches per second", "launch_rate_per_s", "", ""},
    {"client CPU per launch, µs", "launch_client_cpu_us", "", ""},
    {"calling thread's CPU per one-way 64-byte copy, µs", "copy_client_cpu_us", "", ""},
    {"replies waited for per such copy", "copy_replies_per_copy", "", ""},
    {"cuMemAlloc + cuMemFree, µs", "alloc_free_us", "", ""},
    {"mapped host memory, host to running kernel and back, µs", "live_rtt_us",
     "raw_tcp_spin_rtt_us", "live_rtt_ratio"},
    {"slowest query answered locally, ns per call", "local_query_ns", "", ""},
};

// The same copies beside raw TCP over as many connections as lanes.
const std::vector<Row> kLaneRows = {
    {"H2D pageable, Gbit/s", "h2d_gbps", "raw_tcp_lanes_gbps", "h2d_lanes_ratio"},
    {"H2D cuMemHostAlloc, Gbit/s", "h2d_pinned_gbps", "raw_tcp_lanes_gbps",
     "h2d_pinned_lanes_ratio"},
    {"D2H pageable, Gbit/s", "d2h_gbps", "raw_tcp_lanes_down_gbps", "d2h_lanes_ratio"},
    {"D2H cuMemHostAlloc, Gbit/s", "d2h_pinned_gbps", "raw_tcp_lanes_down_gbps",
     "d2h_pinned_lanes_ratio"},
};

const std::vector<Row> kCompressionRows = {
    {"H2D pageable, mostly zeros, Gbit/s", "h2d_sparse_lz4_gbps", "h2d_sparse_gbps",
     "h2d_lz4_speedup"},
    {"D2H pageable, mostly zeros, Gbit/s", "d2h_sparse_lz4_gbps", "d2h_sparse_gbps",
     "d2h_lz4_speedup"},
};

// "scuda" when the stand-in answers this process's driver calls, else
// "native": run with no server configured, the same program measures CUDA.
const char* driver_kind() {
  return dlsym(RTLD_DEFAULT, "scuda_stand_in_marker") != nullptr && std::getenv("SCUDA_SERVER")
             ? "scuda"
             : "native";
}

// Pageable copies each way, over the lanes, as measure_transfers takes
// them, without raw TCP beside them: `scuda bench` compares two such runs,
// one plain and one over TLS.
int run_copies(CudaBench& cuda, const Options& o, const Plans& p) {
  open_lanes(cuda, p);
  std::vector<double> h2d, d2h;
  in_rounds(p.rounds, [&] {
    const std::vector<double> up = cuda.htod(p.transfer_bytes, false, p.transfer);
    const std::vector<double> down = cuda.dtoh(p.transfer_bytes, false, p.transfer);
    h2d.insert(h2d.end(), up.begin(), up.end());
    d2h.insert(d2h.end(), down.begin(), down.end());
  });
  Report r;
  add_transfer(r, "h2d_gbps", p.transfer_bytes, h2d);
  add_transfer(r, "d2h_gbps", p.transfer_bytes, d2h);
  if (!o.json_path.empty()) std::ofstream(o.json_path) << r.json();
  std::printf("H2D %.3g Gbit/s, D2H %.3g Gbit/s\n", r.figure("h2d_gbps"), r.figure("d2h_gbps"));
  return 0;
}

int run(const Options& o) {
  if (!o.echo_server.empty()) return run_echo_server(o.echo_server);
  const Plans p = plans_for(o);
  CudaBench cuda;
  if (o.copies_only) return run_copies(cuda, o, p);
  const std::string peer = o.echo.empty() ? start_local_echo() : o.echo;
  RawLink raw(peer);
  Report r;
  // The figures beside raw TCP measure the protocol: lz4 stays off for them.
  const SetCompression set_compression = compression_switch();
  if (set_compression) set_compression("off");
  measure_latency(cuda, raw, p, r);
  const uint32_t lanes = open_lanes(cuda, p);
  measure_transfers(cuda, raw, peer, lanes, p, r);
  if (set_compression) measure_compression(cuda, set_compression, p, r);
  measure_launches(cuda, o, p, r);
  measure_local_queries(cuda, o, p, r);
  r.add_meta("device", cuda.device_name());
  r.add_meta("driver", driver_kind());
  r.add_meta("module", cuda.module_used());
  r.add_meta("link", o.link);
  r.add_meta("transfer_bytes", std::to_string(p.transfer_bytes));
  r.add_meta("launches_per_sample", std::to_string(p.launches));
  r.add_meta("mode", o.quick ? "quick" : "full");
  if (!o.json_path.empty()) std::ofstream(o.json_path) << r.json();
  std::printf("device: %s, driver: %s, link: %s, %s mode\n\n%s", cuda.device_name().c_str(),
              driver_kind(), o.link.c_str(), o.quick ? "quick" : "full", r.markdown(kRows).c_str());
  if (lanes > 1)
    std::printf("\nscuda's copies took %u lanes; raw TCP over as many connections:\n\n%s", lanes,
                r.markdown(kLaneRows).c_str());
  if (set_compression)
    std::printf("\n%s",
                r.markdown(kCompressionRows, {"lz4 auto", "lz4 off", "auto / off"}).c_str());
  return 0;
}

}  // namespace

}  // namespace scuda::bench

int main(int argc, char** argv) {
  using scuda::bench::ModuleKind;
  scuda::bench::Options o;
  CLI::App app{
      "scuda-bench-micro: scuda's protocol overhead against SCUDA_SERVER, each figure "
      "beside plain TCP on the same link"};
  app.add_option("--json", o.json_path, "Write the figures as one JSON object to FILE");
  app.add_flag("--quick", o.quick, "Small sizes, few iterations (a smoke test, not figures)");
  app.add_flag("--copies-only", o.copies_only,
               "Only the pageable copies' throughput each way, without raw TCP");
  app.add_option("--echo", o.echo,
                 "Raw-TCP peer HOST:PORT on the same link as the server "
                 "(default: a peer on loopback in this process)");
  app.add_option("--echo-server", o.echo_server,
                 "Only serve as the raw-TCP peer on HOST:PORT (run it on the GPU host)");
  app.add_option("--link", o.link, "Name of the link, recorded in the output");
  app.add_option("--transfer-mib", o.transfer_mib, "Bytes per copy in full mode, MiB")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  const std::map<std::string, ModuleKind> kinds = {
      {"auto", ModuleKind::kAuto}, {"double", ModuleKind::kDouble}, {"ptx", ModuleKind::kPtx}};
  app.add_option("--module", o.module,
                 "Empty-kernel image: the test double's format, PTX, or auto (by device name)")
      ->transform(CLI::CheckedTransformer(kinds, CLI::ignore_case));
  CLI11_PARSE(app, argc, argv);
  try {
    return scuda::bench::run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scuda-bench-micro: %s\n", e.what());
    return 1;
  }
}
