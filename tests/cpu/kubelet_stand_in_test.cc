// scuda-device-plugin against a test that plays the kubelet's side of the
// device plugin API (no kubelet runs here): the plugin registers on the
// stand-in's kubelet.sock, and the test calls its DevicePlugin service as
// the kubelet does, with two real `scuda server`s on the driver double as
// the pool.
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "kubelet_stand_in.h"
#include "server_process.h"

namespace scuda::test {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

constexpr char kToken[] = "kubelet-stand-in-token";

std::string make_temp_dir() {
  std::string pattern = (fs::temp_directory_path() / "scuda-k8s-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

void write_file(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Each device's health, by ID.
using Health = std::map<std::string, std::string>;
using Watch = grpc::ClientReader<v1beta1::ListAndWatchResponse>;

Health health_of(const v1beta1::ListAndWatchResponse& list) {
  Health health;
  for (const v1beta1::Device& d : list.devices()) health[d.id()] = d.health();
  return health;
}

// Reads lists until one shows `wanted`; false when the stream ends first.
// Each list read on the way goes into *seen.
bool read_until(Watch& stream, const Health& wanted, std::vector<Health>* seen) {
  v1beta1::ListAndWatchResponse list;
  while (stream.Read(&list)) {
    seen->push_back(health_of(list));
    if (seen->back() == wanted) return true;
  }
  return false;
}

// Server a lists one GPU (the driver double's), the pool says two: the
// second is Unhealthy once the server's status lists its GPUs, which its
// monitor does shortly after it starts.
const Health kStart = {{"a-0", "Healthy"}, {"a-1", "Unhealthy"}, {"b-0", "Healthy"}};

// The pool: server "a" with two GPUs, "b" with one, both with the token.
class KubeletStandInTest : public ::testing::Test {
 protected:
  // The servers read the token at start, so it is written first.
  void SetUp() override {
    write_file(dir_ / "token", std::string(kToken) + "\n");
    a_ = std::make_unique<ServerProcess>(token_args());
    b_ = std::make_unique<ServerProcess>(token_args());
    write_file(dir_ / "pool.toml", "[[server]]\nname = \"a\"\naddress = \"" + a_->address() +
                                       "\"\ngpus = 2\n\n"
                                       "[[server]]\nname = \"b\"\naddress = \"" +
                                       b_->address() + "\"\ngpus = 1\n");
  }
  void TearDown() override {
    watch_context_.TryCancel();
    plugin_.reset();
    fs::remove_all(dir_);
  }

  // Starts the plugin; the kubelet answers its registration with `answer`.
  void start_plugin(grpc::Status answer = grpc::Status::OK) {
    kubelet_ = std::make_unique<StandInKubelet>(dir_.string(), answer);
    plugin_ = std::make_unique<PluginProcess>(
        std::vector<std::string>{"--pool", (dir_ / "pool.toml").string(), "--token-file",
                                 (dir_ / "token").string(), "--lib-dir", LIB_DIR, "--host-dir",
                                 host_dir(), "--container-dir", host_dir(), "--device-plugin-dir",
                                 dir_.string(), "--health-interval", "0.1"},
        (dir_ / "plugin.log").string());
  }

  // Whether the plugin's `count`th registration came within 20 s; a
  // plugin that ends first fails at once, with its log.
  ::testing::AssertionResult registered(size_t count, v1beta1::RegisterRequest* request) {
    for (int i = 0; i < 200; ++i) {
      if (kubelet_->wait_for_registrations(count, std::chrono::milliseconds(100), request))
        return ::testing::AssertionSuccess();
      if (const int code = plugin_->wait_for_exit(0, seconds(0)); code != -1)
        return ::testing::AssertionFailure()
               << "the plugin ended with " << code << ": " << plugin_->log();
    }
    return ::testing::AssertionFailure() << "no registration in 20 s: " << plugin_->log();
  }

  // Starts the plugin and waits for its registration, which must come.
  void start_registered_plugin() {
    start_plugin();
    v1beta1::RegisterRequest request;
    ASSERT_TRUE(registered(1, &request));
    stub_ = connect_to_plugin((dir_ / request.endpoint()).string());
  }

  // Starts the plugin and its ListAndWatch stream (30 s at most), read
  // until it shows kStart into seen_; false with the plugin's log when not.
  ::testing::AssertionResult watch_from_start() {
    start_registered_plugin();
    if (!stub_) return ::testing::AssertionFailure() << "the plugin did not register";
    watch_context_.set_deadline(std::chrono::system_clock::now() + seconds(30));
    watch_ = stub_->ListAndWatch(&watch_context_, {});
    if (read_until(*watch_, kStart, &seen_)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "never " << ::testing::PrintToString(kStart) << ": " << plugin_->log();
  }

  // Allocate for one container that asks for `ids`.
  grpc::Status allocate(const std::vector<std::string>& ids, v1beta1::AllocateResponse* response) {
    grpc::ClientContext context;
    v1beta1::AllocateRequest request;
    v1beta1::ContainerAllocateRequest* container = request.add_container_requests();
    for (const std::string& id : ids) container->add_devices_ids(id);
    return stub_->Allocate(&context, request, response);
  }

  // The folder the plugin hands to containers; the test's programs run on
  // this host, so containers see it where the host has it.
  std::string host_dir() const { return (dir_ / "handout").string(); }

  std::vector<std::string> token_args() const {
    return {"--token-file", (dir_ / "token").string()};
  }

  fs::path dir_ = make_temp_dir();
  std::unique_ptr<ServerProcess> a_, b_;
  std::unique_ptr<StandInKubelet> kubelet_;
  std::unique_ptr<PluginProcess> plugin_;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
  grpc::ClientContext watch_context_;
  std::unique_ptr<Watch> watch_;
  std::vector<Health> seen_;  // what watch_ has shown
};

TEST_F(KubeletStandInTest, PluginRegistersItsResourceVersionAndEndpoint) {
  start_plugin();
  v1beta1::RegisterRequest request;
  ASSERT_TRUE(registered(1, &request));
  EXPECT_EQ(request.version(), "v1beta1");
  EXPECT_EQ(request.resource_name(), "scuda.dev/gpu");
  EXPECT_EQ(request.endpoint(), "scuda.sock");
  EXPECT_TRUE(request.options().get_preferred_allocation_available());
  EXPECT_FALSE(request.options().pre_start_required());
  EXPECT_TRUE(fs::is_socket(dir_ / "scuda.sock"));
}

TEST_F(KubeletStandInTest, OptionsOfferPreferredAllocationAndNeedNoPreStart) {
  start_registered_plugin();
  grpc::ClientContext context;
  v1beta1::DevicePluginOptions options;
  ASSERT_TRUE(stub_->GetDevicePluginOptions(&context, {}, &options).ok());
  EXPECT_TRUE(options.get_preferred_allocation_available());
  EXPECT_FALSE(options.pre_start_required());
}

TEST_F(KubeletStandInTest, ListAndWatchMarksAGpuItsServerDoesNotListUnhealthy) {
  EXPECT_TRUE(watch_from_start());
  for (const Health& h : seen_) {
    EXPECT_EQ(h.at("a-0"), "Healthy");
    EXPECT_EQ(h.at("b-0"), "Healthy");
  }
}

TEST_F(KubeletStandInTest, ListAndWatchFollowsAServerThatStopsAndComesBack) {
  ASSERT_TRUE(watch_from_start());
  const std::string address = b_->address();
  b_->stop();
  Health b_down = kStart;
  b_down["b-0"] = "Unhealthy";
  EXPECT_TRUE(read_until(*watch_, b_down, &seen_)) << plugin_->log();
  EXPECT_NE(plugin_->log().find(address + " does not answer"), std::string::npos) << plugin_->log();
  std::vector<std::string> args = token_args();
  args.insert(args.end(), {"-l", address});
  b_ = std::make_unique<ServerProcess>(args);
  EXPECT_TRUE(read_until(*watch_, kStart, &seen_)) << plugin_->log();
}

TEST_F(KubeletStandInTest, AllocateHandsTheServerTokenAndClientLibraries) {
  start_registered_plugin();
  v1beta1::AllocateResponse response;
  const grpc::Status status = allocate({"b-0"}, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.container_responses_size(), 1);
  const v1beta1::ContainerAllocateResponse& c = response.container_responses(0);
  const std::string dir = host_dir();
  EXPECT_EQ(c.envs().at("SCUDA_SERVER"), b_->address());
  EXPECT_EQ(c.envs().at("CUDA_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(c.envs().at("SCUDA_TOKEN_FILE"), dir + "/token");
  EXPECT_EQ(c.envs().at("LD_PRELOAD"), dir + "/lib/libscuda.so " + dir + "/lib/libnvidia-ml.so.1");
  EXPECT_EQ(c.envs().count("SCUDA_TLS_CA"), 0u);
  ASSERT_EQ(c.mounts_size(), 1);
  EXPECT_EQ(c.mounts(0).host_path(), dir);
  EXPECT_EQ(c.mounts(0).container_path(), dir);
  EXPECT_TRUE(c.mounts(0).read_only());
  EXPECT_EQ(read_file(fs::path(dir) / "token"), read_file(dir_ / "token"));
}

// What a container's unmodified program does with what Allocate hands it:
// Python loads libcuda.so.1 as any CUDA program does, and the preloaded
// stand-in answers it from server b, with the handed token.
TEST_F(KubeletStandInTest, AnUnmodifiedProgramRunsThroughScudaWithTheAllocatedEnvironment) {
  start_registered_plugin();
  v1beta1::AllocateResponse response;
  ASSERT_TRUE(allocate({"b-0"}, &response).ok());
  std::vector<std::string> env;
  for (const auto& [name, value] : response.container_responses(0).envs())
    env.push_back(name + "=" + value);
  const Output run =
      run_program({PYTHON3, "-c",
                   "import ctypes\n"
                   "cuda = ctypes.CDLL('libcuda.so.1')\n"
                   "n = ctypes.c_int()\n"
                   "print(cuda.cuInit(0), cuda.cuDeviceGetCount(ctypes.byref(n)), n.value)\n"},
                  env);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "0 0 1\n") << run.err;
}

TEST_F(KubeletStandInTest, AllocateRefusesUnknownDevicesAndDevicesOfTwoServers) {
  start_registered_plugin();
  v1beta1::AllocateResponse response;
  EXPECT_EQ(allocate({"c-0"}, &response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(allocate({"a-0", "b-0"}, &response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(allocate({}, &response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(allocate({"a-0", "a-1"}, &response).ok());
}

TEST_F(KubeletStandInTest, PreferredAllocationKeepsAContainerOnOneServer) {
  start_registered_plugin();
  struct Case {
    std::vector<std::string> must_include;
    int size;
    std::vector<std::string> expected;
  };
  for (const Case& k : {Case{{}, 2, {"a-0", "a-1"}}, Case{{"b-0"}, 1, {"b-0"}},
                        Case{{"a-1"}, 2, {"a-1", "a-0"}}, Case{{}, 3, {"a-0", "a-1", "b-0"}}}) {
    grpc::ClientContext context;
    v1beta1::PreferredAllocationRequest request;
    auto* c = request.add_container_requests();
    for (const char* id : {"b-0", "a-0", "a-1"}) c->add_available_deviceids(id);
    for (const std::string& id : k.must_include) c->add_must_include_deviceids(id);
    c->set_allocation_size(k.size);
    v1beta1::PreferredAllocationResponse response;
    ASSERT_TRUE(stub_->GetPreferredAllocation(&context, request, &response).ok());
    ASSERT_EQ(response.container_responses_size(), 1);
    const auto& ids = response.container_responses(0).deviceids();
    EXPECT_EQ(std::vector<std::string>(ids.begin(), ids.end()), k.expected) << k.size;
  }
}

TEST_F(KubeletStandInTest, PreStartContainerAnswers) {
  start_registered_plugin();
  grpc::ClientContext context;
  v1beta1::PreStartContainerRequest request;
  request.add_devices_ids("a-0");
  v1beta1::PreStartContainerResponse response;
  EXPECT_TRUE(stub_->PreStartContainer(&context, request, &response).ok());
}

// A restarting kubelet deletes the sockets in its folder.
TEST_F(KubeletStandInTest, PluginRegistersAgainWhenTheKubeletRestarts) {
  start_registered_plugin();
  fs::remove(dir_ / "scuda.sock");
  v1beta1::RegisterRequest request;
  ASSERT_TRUE(registered(2, &request));
  EXPECT_TRUE(fs::is_socket(dir_ / "scuda.sock"));
  grpc::ClientContext context;
  v1beta1::DevicePluginOptions options;
  EXPECT_TRUE(connect_to_plugin((dir_ / "scuda.sock").string())
                  ->GetDevicePluginOptions(&context, {}, &options)
                  .ok());
}

TEST_F(KubeletStandInTest, PluginEndsWhenTheKubeletRefusesItsRegistration) {
  start_plugin({grpc::StatusCode::INVALID_ARGUMENT, "unsupported version"});
  EXPECT_EQ(plugin_->wait_for_exit(0, seconds(20)), 1);
  EXPECT_NE(plugin_->log().find("unsupported version"), std::string::npos) << plugin_->log();
}

// Containers that run keep the libraries they mapped: a plugin that starts
// again puts new files in place instead of writing into the old ones.
TEST_F(KubeletStandInTest, PluginStartedAgainReplacesTheLibrariesItHandsOut) {
  const fs::path library = fs::path(host_dir()) / "lib" / "libcuda.so.1";
  start_registered_plugin();
  struct stat before {};
  ASSERT_EQ(stat(library.c_str(), &before), 0);
  ASSERT_EQ(plugin_->wait_for_exit(SIGTERM, seconds(20)), 0) << plugin_->log();
  kubelet_.reset();  // its kubelet.sock is the next one's
  start_registered_plugin();
  struct stat after {};
  ASSERT_EQ(stat(library.c_str(), &after), 0);
  EXPECT_NE(before.st_ino, after.st_ino);
  EXPECT_EQ(before.st_size, after.st_size);
}

TEST_F(KubeletStandInTest, PluginStopsOnSigtermAndRemovesItsSocket) {
  start_registered_plugin();
  EXPECT_EQ(plugin_->wait_for_exit(SIGTERM, seconds(20)), 0) << plugin_->log();
  EXPECT_FALSE(fs::exists(dir_ / "scuda.sock"));
}

}  // namespace
}  // namespace scuda::test
