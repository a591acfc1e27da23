// What the plugin puts on the node for containers and how they find it: one
// folder, written by publish() and mounted read-only into every container
// that gets a device.
#pragma once

#include <string>

namespace scuda::k8s {

// Names inside the folder.
inline constexpr char kTokenName[] = "token";
inline constexpr char kCaName[] = "ca.pem";
inline constexpr char kLibName[] = "lib";
// The driver's stand-in, and the link to it that LD_PRELOAD names (the
// client's own name for it), inside kLibName; then NVML's stand-in.
inline constexpr char kDriverLibrary[] = "libcuda.so.1";
inline constexpr char kDriverStandIn[] = "libscuda.so";
inline constexpr char kNvmlStandIn[] = "libnvidia-ml.so.1";

struct Handout {
  std::string host_dir;       // on the node
  std::string container_dir;  // where containers see it
  bool token = false;         // host_dir holds kTokenName
  bool tls_ca = false;        // host_dir holds kCaName
};

struct HandoutSources {
  std::string token_file;  // may be empty: the servers take no token
  std::string tls_ca;      // may be empty: no TLS, or the system's CAs
  std::string lib_dir;     // the client libraries
};

// Copies the token, the CA and the client libraries into `handout->host_dir`
// and records which it holds; false with *error. Each file is replaced by a
// rename, so running containers keep the libraries they mapped.
bool publish(const HandoutSources& sources, Handout* handout, std::string* error);

}  // namespace scuda::k8s
