// Debian's real Prometheus scrapes `scuda server --metrics` on loopback,
// and its HTTP API returns the series. Prometheus is required: without it
// the test fails, unless SCUDA_SKIP_PROMETHEUS=1 says (outside CI) that
// this machine goes without it.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../double/nvml/nvml_double.h"
#include "http_get.h"
#include "server_process.h"

namespace scuda {
namespace {

using test::ServerProcess;

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::string(v) == value;
}

// Prometheus on a free loopback port, scraping `target` every second, with
// its data in a directory of its own; stopped and removed when destroyed.
class Prometheus {
 public:
  explicit Prometheus(const std::string& target) {
    char dir[] = "/tmp/scuda-prometheus-XXXXXX";
    dir_ = mkdtemp(dir);
    std::ofstream(dir_ + "/prometheus.yml")
        << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        << "scrape_configs:\n  - job_name: scuda\n    static_configs:\n"
        << "      - targets: ['" << target << "']\n";
    address_ = "127.0.0.1:" + std::to_string(test::free_port());
    pid_ = fork();
    if (pid_ == 0) {
      freopen((dir_ + "/log").c_str(), "w", stderr);
      execlp("prometheus", "prometheus", ("--config.file=" + dir_ + "/prometheus.yml").c_str(),
             ("--storage.tsdb.path=" + dir_ + "/data").c_str(),
             ("--web.listen-address=" + address_).c_str(), nullptr);
      _exit(127);
    }
  }
  ~Prometheus() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
    std::filesystem::remove_all(dir_);
  }

  // The first sample's value of the instant query `query`, once Prometheus
  // has one (waiting up to `limit`); -1 if none came.
  double query(const std::string& query, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string body = test::http_get(address_, "/api/v1/query?query=" + query);
      const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
      if (!j.is_discarded() && j.value("status", "") == "success" && !j["data"]["result"].empty())
        return std::stod(j["data"]["result"][0]["value"][1].get<std::string>());
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return -1;
  }
  std::string log() const {
    std::ifstream in(dir_ + "/log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  std::string dir_, address_;
  pid_t pid_ = -1;
};

TEST(Prometheus, ScrapesTheServersSeries) {
  if (system("command -v prometheus >/dev/null") != 0) {
    if (env_is("SCUDA_SKIP_PROMETHEUS", "1") && !env_is("CI", "true"))
      GTEST_SKIP() << "prometheus is not installed, and SCUDA_SKIP_PROMETHEUS=1 says this "
                      "machine goes without it";
    FAIL() << "prometheus is not installed: scripts/setup.sh installs Debian's (on a developer "
              "machine without it, SCUDA_SKIP_PROMETHEUS=1 skips this test)";
  }
  ServerProcess server({"--metrics", "127.0.0.1:0", "--nvml", NVML_DOUBLE_LIB});
  const std::string target = test::metrics_address(server);
  ASSERT_FALSE(target.empty()) << server.output();
  test::Output o = test::run_program({CLIENT_TOOL, "submit"}, {"SCUDA_SERVER=" + server.address()});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  Prometheus prometheus(target);
  EXPECT_GT(prometheus.query("scuda_requests_total", std::chrono::seconds(20)), 0)
      << prometheus.log();
  EXPECT_EQ(prometheus.query("scuda_sessions_started_total", std::chrono::seconds(2)), 1);
  EXPECT_GT(prometheus.query("scuda_sent_bytes_total", std::chrono::seconds(2)), 0);
  EXPECT_GT(prometheus.query("scuda_received_bytes_total", std::chrono::seconds(2)), 0);
  EXPECT_EQ(prometheus.query("scuda_sessions", std::chrono::seconds(2)), 0);
  EXPECT_EQ(prometheus.query("scuda_queue_length", std::chrono::seconds(2)), 0);
  EXPECT_EQ(prometheus.query("scuda_errors_total", std::chrono::seconds(2)), 0);
  EXPECT_EQ(
      prometheus.query("scuda_gpu_memory_used_bytes%7Bgpu%3D%220%22%7D", std::chrono::seconds(2)),
      static_cast<double>(nvml_double::kMemoryUsed));
  EXPECT_EQ(
      prometheus.query("scuda_gpu_utilization_ratio%7Bgpu%3D%220%22%7D", std::chrono::seconds(2)),
      nvml_double::kGpuUtilization / 100.0);
  EXPECT_EQ(
      prometheus.query("scuda_gpu_memory_total_bytes%7Bgpu%3D%220%22%7D", std::chrono::seconds(2)),
      static_cast<double>(nvml_double::kMemoryTotal));
  EXPECT_EQ(prometheus.query("up%7Bjob%3D%22scuda%22%7D", std::chrono::seconds(2)), 1);
}

}  // namespace
}  // namespace scuda
