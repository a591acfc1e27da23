#include "server/dispatch.h"

#include <algorithm>
#include <unordered_map>

namespace scuda::server {

namespace {

std::unordered_map<uint32_t, const HandlerEntry*> build_index() {
  std::unordered_map<uint32_t, const HandlerEntry*> index;
  auto add = [&](std::span<const HandlerEntry> entries) {
    for (const HandlerEntry& e : entries) index[e.op] = &e;
  };
  add({kGeneratedHandlers, kGeneratedHandlerCount});
  add(context_handlers());
  add(memory_handlers());
  add(module_handlers());
  add(launch_handlers());
  add(host_callback_handlers());
  add(pointer_handlers());
  add(page_handlers());
  add(host_register_handlers());
  add(graph_handlers());
  add(graph_exec_handlers());
  add(copy3d_handlers());
  add(resource_object_handlers());
  add(va_handlers());
  add(ipc_handlers());
  add(logs_handlers());
  add(struct_array_handlers());
  add(async_notification_handlers());
  add(lane_handlers());
  add(peer_copy_handlers());
  add(link_handlers());
  add({kNvmlGeneratedHandlers, kNvmlGeneratedHandlerCount});
  add(nvml_handlers());
  return index;
}

const std::unordered_map<uint32_t, const HandlerEntry*>& index() {
  static const auto built = build_index();
  return built;
}

}  // namespace

const HandlerEntry* find_handler(uint32_t op) {
  auto it = index().find(op);
  return it == index().end() ? nullptr : it->second;
}

std::vector<uint32_t> handled_ops() {
  std::vector<uint32_t> ops;
  for (const auto& [op, entry] : index()) ops.push_back(op);
  std::sort(ops.begin(), ops.end());
  return ops;
}

}  // namespace scuda::server
