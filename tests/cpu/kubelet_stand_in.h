// The kubelet's side of the device plugin API, for tests: a Registration
// service on kubelet.sock that records what plugins register, and the
// plugin started as its own process beside it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "k8s/api.grpc.pb.h"

namespace scuda::test {

class StandInKubelet final : public v1beta1::Registration::Service {
 public:
  // Serves Registration on `dir`/kubelet.sock; each Register is answered
  // with `answer`.
  explicit StandInKubelet(const std::string& dir, grpc::Status answer = grpc::Status::OK);
  ~StandInKubelet() override;

  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty*) override;
  // Waits until `count` registrations have come; false when `limit` passes
  // first. *last is the latest.
  bool wait_for_registrations(size_t count, std::chrono::milliseconds limit,
                              v1beta1::RegisterRequest* last);

 private:
  const grpc::Status answer_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::vector<v1beta1::RegisterRequest> requests_;
  std::unique_ptr<grpc::Server> server_;
};

// scuda-device-plugin run with `args`, its log in `log_path`; SIGTERM and a
// wait at destruction.
class PluginProcess {
 public:
  PluginProcess(const std::vector<std::string>& args, const std::string& log_path);
  ~PluginProcess();
  PluginProcess(const PluginProcess&) = delete;
  PluginProcess& operator=(const PluginProcess&) = delete;

  // Sends `sig` (0: none) and waits up to `limit` for the plugin to end:
  // its exit code, or -1 when it did not end.
  int wait_for_exit(int sig, std::chrono::seconds limit);
  std::string log() const;

 private:
  pid_t pid_ = -1;
  std::string log_path_;
};

// A stub of the plugin's DevicePlugin service on the socket `path`.
std::unique_ptr<v1beta1::DevicePlugin::Stub> connect_to_plugin(const std::string& path);

}  // namespace scuda::test
