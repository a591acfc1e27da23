// The kubelet's two questions about an allocation: which devices to prefer,
// and what a container that got some must be handed.
#pragma once

#include <string>
#include <vector>

#include "k8s/api.pb.h"
#include "k8s/handout.h"
#include "k8s/pool.h"

namespace scuda::k8s {

// `size` devices of `available`, `must_include` first, the rest from as few
// servers as possible: from servers already chosen, then from those with
// the most devices free. Fewer when `available` has fewer.
std::vector<std::string> preferred_devices(const Pool& pool,
                                           const std::vector<std::string>& available,
                                           const std::vector<std::string>& must_include,
                                           size_t size);

// The environment and mount that make a container's CUDA programs use the
// devices `ids` through scuda; false with *error when an ID is not the
// pool's, or when the devices are on more than one server (a client reaches
// one server).
bool container_response(const Pool& pool, const Handout& handout,
                        const std::vector<std::string>& ids,
                        v1beta1::ContainerAllocateResponse* response, std::string* error);

}  // namespace scuda::k8s
