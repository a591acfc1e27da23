#include "k8s/plugin.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <thread>

namespace scuda::k8s {

namespace fs = std::filesystem;

namespace {

enum class Registered { kYes, kNoKubelet, kRefused };

Registered register_with_kubelet(const PluginOptions& options) {
  const std::string kubelet = (fs::path(options.plugin_dir) / kKubeletSocket).string();
  auto channel = grpc::CreateChannel("unix://" + kubelet, grpc::InsecureChannelCredentials());
  auto registration = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest request;
  request.set_version(kApiVersion);
  request.set_endpoint(options.endpoint);
  request.set_resource_name(options.resource);
  request.mutable_options()->set_get_preferred_allocation_available(true);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1beta1::Empty reply;
  const grpc::Status status = registration->Register(&context, request, &reply);
  if (status.ok()) {
    spdlog::info("registered {} with the kubelet at {}", options.resource, kubelet);
    return Registered::kYes;
  }
  const bool absent = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
  if (absent) spdlog::debug("no kubelet answers at {} yet: {}", kubelet, status.error_message());
  else
    spdlog::error("the kubelet at {} refused {}: {}", kubelet, options.resource,
                  status.error_message());
  return absent ? Registered::kNoKubelet : Registered::kRefused;
}

// Sleeps `time` in short steps; false once `stop` is set.
bool pause(std::chrono::milliseconds time, const std::atomic<bool>& stop) {
  constexpr std::chrono::milliseconds kStep(100);
  for (auto slept = std::chrono::milliseconds(0); slept < time && !stop; slept += kStep)
    std::this_thread::sleep_for(kStep);
  return !stop;
}

// Registers, waiting for a kubelet that is not there yet.
Registered register_when_kubelet_answers(const PluginOptions& options,
                                         const std::atomic<bool>& stop) {
  for (;;) {
    const Registered r = register_with_kubelet(options);
    if (r != Registered::kNoKubelet || !pause(std::chrono::seconds(1), stop)) return r;
  }
}

// The kubelet deletes every socket in its folder when it starts, so a
// missing socket means it restarted and awaits a new registration.
void watch_socket(const fs::path& socket, const std::atomic<bool>& stop) {
  std::error_code ec;
  while (pause(std::chrono::milliseconds(500), stop) && fs::exists(socket, ec)) {
  }
  if (!stop)
    spdlog::info("{} was removed (the kubelet restarted): serving it again", socket.string());
}

}  // namespace

int serve(const PluginOptions& options, DevicePluginService& service,
          const std::atomic<bool>& stop) {
  const fs::path socket = fs::path(options.plugin_dir) / options.endpoint;
  while (!stop) {
    std::error_code ec;
    fs::remove(socket, ec);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix://" + socket.string(), grpc::InsecureServerCredentials());
    builder.RegisterService(&service);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (!server) {
      spdlog::error("cannot serve the device plugin on {}", socket.string());
      return 1;
    }
    const Registered r = register_when_kubelet_answers(options, stop);
    if (r == Registered::kYes) watch_socket(socket, stop);
    // An immediate deadline cancels the open ListAndWatch streams.
    server->Shutdown(std::chrono::system_clock::now());
    server->Wait();
    if (r == Registered::kRefused) return 1;
  }
  std::error_code ec;
  fs::remove(socket, ec);
  return 0;
}

}  // namespace scuda::k8s
