// The DevicePlugin service the kubelet calls on the plugin's socket: the
// pool's devices and their health, and what a container that got some is
// handed.
#pragma once

#include "k8s/allocation.h"
#include "k8s/api.grpc.pb.h"
#include "k8s/health.h"

namespace scuda::k8s {

class DevicePluginService final : public v1beta1::DevicePlugin::Service {
 public:
  // `pool`, `handout` and `health` outlive the service.
  DevicePluginService(const Pool& pool, const Handout& handout, const HealthMonitor& health);

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* options) override;
  // Sends the devices with their health, then again at each change, until
  // the kubelet hangs up or the server shuts down.
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* response) override;
  grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override;
  // Nothing to prepare: options say it is not required.
  grpc::Status PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest*,
                                 v1beta1::PreStartContainerResponse*) override;

 private:
  v1beta1::ListAndWatchResponse device_list() const;

  const Pool& pool_;
  const Handout& handout_;
  const HealthMonitor& health_;
};

// The kubelet's words for a device's health.
inline constexpr char kHealthy[] = "Healthy";
inline constexpr char kUnhealthy[] = "Unhealthy";

}  // namespace scuda::k8s
