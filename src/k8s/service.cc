#include "k8s/service.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

namespace scuda::k8s {

namespace {

std::vector<std::string> strings(const google::protobuf::RepeatedPtrField<std::string>& field) {
  return {field.begin(), field.end()};
}

}  // namespace

DevicePluginService::DevicePluginService(const Pool& pool, const Handout& handout,
                                         const HealthMonitor& health)
    : pool_(pool), handout_(handout), health_(health) {}

grpc::Status DevicePluginService::GetDevicePluginOptions(grpc::ServerContext*,
                                                         const v1beta1::Empty*,
                                                         v1beta1::DevicePluginOptions* options) {
  options->set_pre_start_required(false);
  options->set_get_preferred_allocation_available(true);
  return grpc::Status::OK;
}

v1beta1::ListAndWatchResponse DevicePluginService::device_list() const {
  const std::vector<ServerHealth> servers = health_.servers();
  v1beta1::ListAndWatchResponse list;
  for (const PoolDevice& d : pool_.devices) {
    v1beta1::Device* device = list.add_devices();
    device->set_id(d.id);
    device->set_health(gpu_healthy(servers[d.server], d.gpu) ? kHealthy : kUnhealthy);
  }
  return list;
}

// The wait is bounded so that a kubelet's hang-up and the server's shutdown
// are noticed without a change of health.
grpc::Status DevicePluginService::ListAndWatch(
    grpc::ServerContext* context, const v1beta1::Empty*,
    grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  constexpr std::chrono::milliseconds kCheck(200);
  uint64_t sent = health_.generation();
  if (!writer->Write(device_list())) return grpc::Status::OK;
  while (!context->IsCancelled()) {
    const uint64_t now = health_.wait_for_change(sent, kCheck);
    if (now == sent) continue;
    sent = now;
    if (!writer->Write(device_list())) break;
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::GetPreferredAllocation(
    grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* request,
    v1beta1::PreferredAllocationResponse* response) {
  for (const v1beta1::ContainerPreferredAllocationRequest& r : request->container_requests()) {
    if (r.allocation_size() < 0)
      return {grpc::StatusCode::INVALID_ARGUMENT, "allocation_size is negative"};
    const std::vector<std::string> ids =
        preferred_devices(pool_, strings(r.available_deviceids()),
                          strings(r.must_include_deviceids()), r.allocation_size());
    *response->add_container_responses()->mutable_deviceids() = {ids.begin(), ids.end()};
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::Allocate(grpc::ServerContext*,
                                           const v1beta1::AllocateRequest* request,
                                           v1beta1::AllocateResponse* response) {
  for (const v1beta1::ContainerAllocateRequest& r : request->container_requests()) {
    std::string error;
    const std::vector<std::string> ids = strings(r.devices_ids());
    if (!container_response(pool_, handout_, ids, response->add_container_responses(), &error)) {
      spdlog::warn("refused an allocation: {}", error);
      return {grpc::StatusCode::INVALID_ARGUMENT, error};
    }
    spdlog::info("allocated {} on {}", fmt::join(ids, ", "),
                 response->container_responses().rbegin()->envs().at("SCUDA_SERVER"));
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::PreStartContainer(grpc::ServerContext*,
                                                    const v1beta1::PreStartContainerRequest*,
                                                    v1beta1::PreStartContainerResponse*) {
  return grpc::Status::OK;
}

}  // namespace scuda::k8s
