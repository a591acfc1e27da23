// The plugin's life beside the kubelet: it serves the DevicePlugin service
// on a socket in the kubelet's device-plugins folder, registers it, and
// does both again whenever the kubelet restarts.
#pragma once

#include <atomic>
#include <string>

#include "k8s/service.h"

namespace scuda::k8s {

// The API version this plugin speaks.
inline constexpr char kApiVersion[] = "v1beta1";
// The kubelet's registration socket, in the device-plugins folder.
inline constexpr char kKubeletSocket[] = "kubelet.sock";

struct PluginOptions {
  std::string plugin_dir;  // the kubelet's device-plugins folder
  std::string endpoint;    // the plugin's socket, a name in plugin_dir
  std::string resource;    // the extended resource, e.g. scuda.dev/gpu
};

// Serves `service` and registers it until `stop` is set (then 0), or until
// the kubelet refuses the registration or the socket cannot be served (1,
// logged). A kubelet that is not there yet is waited for.
int serve(const PluginOptions& options, DevicePluginService& service,
          const std::atomic<bool>& stop);

}  // namespace scuda::k8s
