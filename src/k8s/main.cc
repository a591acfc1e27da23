// scuda-device-plugin: advertises a pool's remote GPUs to the kubelet as an
// extended resource, and hands each container that gets one what it needs
// to reach it through scuda (README.md).
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "common/config.h"
#include "common/log.h"
#include "common/main_guard.h"
#include "k8s/health.h"
#include "k8s/plugin.h"

namespace {

using namespace scuda::k8s;

struct Args {
  std::string pool_file;
  HandoutSources sources;
  Handout handout{"/var/lib/scuda", "/run/scuda"};
  PluginOptions plugin{"/var/lib/kubelet/device-plugins", "scuda.sock", "scuda.dev/gpu"};
  double health_interval = 10;
  bool verbose = false;
};

// The client libraries beside this executable, as `scuda run` finds them.
std::string default_lib_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::canonical("/proc/self/exe", ec);
  return ec ? "" : (exe.parent_path().parent_path() / "lib").string();
}

void add_options(CLI::App& app, Args& a) {
  app.add_option("--pool", a.pool_file, "The pool file: the servers and their GPU counts (TOML)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--token-file", a.sources.token_file, "The servers' token, handed to containers")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-ca", a.sources.tls_ca,
                 "The CA of the servers' certificates, handed to "
                 "containers and used for health checks")
      ->check(CLI::ExistingFile);
  app.add_option("--lib-dir", a.sources.lib_dir, "The client libraries to hand to containers")
      ->default_str("../lib beside this executable")
      ->check(CLI::ExistingDirectory);
  app.add_option("--host-dir", a.handout.host_dir,
                 "Where on the node to put what containers "
                 "mount")
      ->capture_default_str();
  app.add_option("--container-dir", a.handout.container_dir, "Where containers see it")
      ->capture_default_str();
  app.add_option("--device-plugin-dir", a.plugin.plugin_dir, "The kubelet's device-plugins folder")
      ->capture_default_str();
  app.add_option("--endpoint", a.plugin.endpoint, "The plugin's socket in that folder")
      ->capture_default_str();
  app.add_option("--resource", a.plugin.resource, "The extended resource advertised")
      ->capture_default_str();
  app.add_option("--health-interval", a.health_interval, "Seconds between health checks")
      ->capture_default_str()
      ->check(CLI::Range(0.05, 3600.0));
  app.add_flag("-v,--verbose", a.verbose, "Log at debug level");
}

// Sets `stop` at SIGTERM or SIGINT. The signals are blocked here, before
// any thread starts, so that every thread inherits the mask and only the
// waiting thread takes them.
void stop_on_signals(std::atomic<bool>& stop) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::thread([signals, &stop] {
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("signal {}: stopping", sig);
    stop = true;
  }).detach();
}

int run(Args& a) {
  static std::atomic<bool> stop{false};
  stop_on_signals(stop);
  Pool pool;
  std::string error;
  if (a.sources.lib_dir.empty()) a.sources.lib_dir = default_lib_dir();
  if (!load_pool(a.pool_file, &pool, &error) || !publish(a.sources, &a.handout, &error)) {
    spdlog::error("{}", error);
    return 2;
  }
  // The health checks reach TLS servers as the containers' clients do.
  if (!a.sources.tls_ca.empty()) setenv("SCUDA_TLS_CA", a.sources.tls_ca.c_str(), 1);
  std::string token;
  if (!a.sources.token_file.empty() &&
      !scuda::read_token_file(a.sources.token_file, &token, &error)) {
    spdlog::error("{}", error);
    return 2;
  }
  std::vector<std::string> addresses;
  for (const PoolServer& s : pool.servers) addresses.push_back(s.address);
  HealthMonitor health(addresses, status_probe(token),
                       std::chrono::milliseconds(static_cast<int64_t>(a.health_interval * 1000)));
  health.start();
  spdlog::info("{} devices of {} servers as {}", pool.devices.size(), pool.servers.size(),
               a.plugin.resource);
  DevicePluginService service(pool, a.handout, health);
  return serve(a.plugin, service, stop);
}

int main_of(int argc, char** argv) {
  Args args;
  CLI::App app{"scuda-device-plugin: a pool's remote GPUs as a Kubernetes extended resource"};
  add_options(app, args);
  CLI11_PARSE(app, argc, argv);
  scuda::init_logging(args.verbose);
  if (!args.verbose && !std::getenv("SCUDA_LOG_LEVEL")) spdlog::set_level(spdlog::level::info);
  return run(args);
}

}  // namespace

int main(int argc, char** argv) {
  return scuda::run_main("scuda-device-plugin", [&] { return main_of(argc, argv); });
}
