// `scuda status` and `scuda server --metrics` against a real server on the
// driver and NVML doubles, with a client program of its own process.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "../double/nvml/nvml_double.h"
#include "common/socket.h"
#include "http_get.h"
#include "server_process.h"
#include "status_json.h"

namespace scuda {
namespace {

using test::Output;
using test::ServerProcess;

Output status(const std::string& address, const std::vector<std::string>& more = {}) {
  std::vector<std::string> argv = {SCUDA_BIN, "status", "--server", address};
  argv.insert(argv.end(), more.begin(), more.end());
  return test::run_program(argv, {"SCUDA_TOKEN_FILE="});
}

// A figure from the server's metrics once `ready` holds of it, read up to
// `tries` times 50 ms apart; the last one read if it never does (-1: absent).
double metric_when(const std::string& metrics, const std::string& name, int tries,
                   const std::function<bool(double)>& ready) {
  double value = -1;
  for (int i = 0; i < tries; ++i) {
    if (i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    value = test::metric_value(test::http_get(metrics, "/metrics"), name);
    if (ready(value)) break;
  }
  return value;
}

// A GPU figure, once the GPU monitor has reported (it starts with the
// server).
double gpu_metric(const std::string& metrics, const std::string& name) {
  return metric_when(metrics, name, 100, [](double v) { return v >= 0; });
}

// Sends bytes that are no frame: the session refuses them, an error.
void send_garbage(const std::string& address) {
  HostPort hp;
  std::string error;
  ASSERT_TRUE(parse_host_port(address, &hp, &error)) << error;
  Socket s = connect_tcp(hp, &error);
  ASSERT_TRUE(s.valid()) << error;
  const std::string junk(64, 'x');
  ASSERT_TRUE(s.write_all(junk.data(), junk.size()));
  char byte;
  while (read(s.fd(), &byte, 1) > 0) {
  }
}

// A figure once it equals `wanted`, within three seconds.
double metric_once(const std::string& metrics, const std::string& name, double wanted) {
  return metric_when(metrics, name, 60, [&](double v) { return v == wanted; });
}

class Status : public ::testing::Test {
 protected:
  ServerProcess server_{{"--metrics", "127.0.0.1:0", "--nvml", NVML_DOUBLE_LIB}};
};

TEST_F(Status, ListsARunningSessionAndTheGpus) {
  test::InteractiveClient client(server_, "launch-after-loss");
  ASSERT_EQ(client.line(), "ready\n") << client.err();
  Output o = status(server_.address(), {"--json"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const nlohmann::json j = nlohmann::json::parse(o.out);
  ASSERT_EQ(j["sessions"].size(), 1u) << o.out;
  const nlohmann::json& s = j["sessions"][0];
  EXPECT_NE(s["program"].get<std::string>().find("client_tool"), std::string::npos) << o.out;
  EXPECT_EQ(s["peer"].get<std::string>().rfind("127.0.0.1:", 0), 0u) << o.out;
  EXPECT_GT(s["requests"].get<uint64_t>(), 0u);
  EXPECT_GT(s["bytes_received"].get<uint64_t>(), 0u);
  EXPECT_GT(s["bytes_sent"].get<uint64_t>(), 0u);
  // NVML lists the session's process with the memory it holds.
  const nlohmann::json later =
      test::status_json_when(server_.address(), [](const nlohmann::json& j) {
        return j["sessions"].size() == 1 && j["sessions"][0]["device_memory_bytes"] != 0 &&
               j["gpus"].size() == 1 && !j["gpus"][0]["utilization_percent"].is_null();
      });
  ASSERT_EQ(later["sessions"].size(), 1u) << later;
  EXPECT_EQ(later["sessions"][0]["device_memory_bytes"], nvml_double::kProcessMemory) << later;
  const nlohmann::json& gpus = later["gpus"];
  ASSERT_EQ(gpus.size(), 1u) << gpus;
  EXPECT_EQ(gpus[0]["name"], nvml_double::kName);
  EXPECT_EQ(gpus[0]["memory_total_bytes"], nvml_double::kMemoryTotal);
  EXPECT_EQ(gpus[0]["memory_used_bytes"], nvml_double::kMemoryUsed);
  EXPECT_EQ(gpus[0]["utilization_percent"], nvml_double::kGpuUtilization);
  Output text = status(server_.address());
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Sessions: 1"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("client_tool"), std::string::npos) << text.out;
  client.go();
  EXPECT_EQ(client.wait(), 0) << client.err();
}

TEST_F(Status, MetricsCountersMoveWithAClientsWork) {
  const std::string metrics = test::metrics_address(server_);
  ASSERT_FALSE(metrics.empty()) << server_.output();
  const std::string before = test::http_get(metrics, "/metrics");
  ASSERT_FALSE(before.empty());
  EXPECT_EQ(test::metric_value(before, "scuda_sessions"), 0);
  EXPECT_EQ(test::metric_value(before, "scuda_requests_total"), 0);
  EXPECT_EQ(test::metric_value(before, "scuda_errors_total"), 0);
  EXPECT_EQ(test::metric_value(before, "scuda_queue_length"), 0);
  Output o = test::run_program({CLIENT_TOOL, "submit"}, {"SCUDA_SERVER=" + server_.address()});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::string after = test::http_get(metrics, "/metrics");
  EXPECT_GT(test::metric_value(after, "scuda_requests_total"), 0) << after;
  EXPECT_GT(test::metric_value(after, "scuda_received_bytes_total"), 0) << after;
  EXPECT_GT(test::metric_value(after, "scuda_sent_bytes_total"), 0) << after;
  EXPECT_EQ(test::metric_value(after, "scuda_sessions_started_total"), 1) << after;
  EXPECT_EQ(test::metric_value(after, "scuda_errors_total"), 0) << after;
  send_garbage(server_.address());
  // Counted once the listener has reaped the refused session.
  EXPECT_EQ(metric_once(metrics, "scuda_errors_total", 1), 1);
  const std::string gpu = "{gpu=\"0\",name=\"" + std::string(nvml_double::kName) + "\"}";
  EXPECT_EQ(gpu_metric(metrics, "scuda_gpu_memory_total_bytes" + gpu),
            static_cast<double>(nvml_double::kMemoryTotal))
      << after;
  EXPECT_EQ(gpu_metric(metrics, "scuda_gpu_memory_used_bytes" + gpu),
            static_cast<double>(nvml_double::kMemoryUsed))
      << after;
  EXPECT_EQ(gpu_metric(metrics, "scuda_gpu_utilization_ratio" + gpu),
            nvml_double::kGpuUtilization / 100.0)
      << after;
  EXPECT_EQ(test::http_get(metrics, "/other"), "");
}

TEST(StatusErrors, NamesAServerThatIsNotRunning) {
  const std::string address = "127.0.0.1:" + std::to_string(test::free_port());
  Output o = status(address);
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("nothing listens at " + address + " (connection refused)"),
            std::string::npos)
      << o.err;
}

TEST(StatusErrors, NamesAWrongToken) {
  char dir[] = "/tmp/scuda-status-XXXXXX";
  const std::string token = std::string(mkdtemp(dir)) + "/token";
  std::ofstream(token) << "secret\n";
  ServerProcess server({"--token-file", token});
  Output o = status(server.address());
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("refused the status request: authentication failed"), std::string::npos)
      << o.err;
  std::filesystem::remove_all(dir);
}

TEST(StatusErrors, HelpNamesTheCommandAndTheMetricsOption) {
  Output o = test::run_program({SCUDA_BIN, "status", "--help"});
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.out.find("--json"), std::string::npos) << o.out;
  o = test::run_program({SCUDA_BIN, "server", "--help"});
  EXPECT_NE(o.out.find("--metrics"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace scuda
