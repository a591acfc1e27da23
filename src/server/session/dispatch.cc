#include "server/session/dispatch.h"

#include <algorithm>
#include <unordered_map>

namespace scuda::server {

namespace {

std::vector<std::span<const HandlerEntry>> all_tables() {
  return {{kGeneratedHandlers, kGeneratedHandlerCount},
          context_handlers(),
          memory_handlers(),
          module_handlers(),
          launch_handlers(),
          host_callback_handlers(),
          pointer_handlers(),
          page_handlers(),
          host_register_handlers(),
          graph_handlers(),
          graph_exec_handlers(),
          copy3d_handlers(),
          resource_object_handlers(),
          va_handlers(),
          ipc_handlers(),
          logs_handlers(),
          struct_array_handlers(),
          async_notification_handlers(),
          lane_handlers(),
          peer_copy_handlers(),
          link_handlers(),
          {kNvmlGeneratedHandlers, kNvmlGeneratedHandlerCount},
          nvml_handlers(),
          nvml_device_list_handlers()};
}

// Every op's entry; an op registered twice keeps its first entry and is
// listed in `twice`.
struct Index {
  std::unordered_map<uint32_t, const HandlerEntry*> entries;
  std::vector<uint32_t> twice;
};

Index build_index(std::span<const std::span<const HandlerEntry>> tables) {
  Index index;
  for (std::span<const HandlerEntry> table : tables)
    for (const HandlerEntry& e : table)
      if (!index.entries.emplace(e.op, &e).second) index.twice.push_back(e.op);
  std::sort(index.twice.begin(), index.twice.end());
  return index;
}

const Index& index() {
  static const Index built = build_index(all_tables());
  return built;
}

}  // namespace

const HandlerEntry* find_handler(uint32_t op) {
  auto it = index().entries.find(op);
  return it == index().entries.end() ? nullptr : it->second;
}

std::vector<uint32_t> handled_ops() {
  std::vector<uint32_t> ops;
  for (const auto& [op, entry] : index().entries) ops.push_back(op);
  std::sort(ops.begin(), ops.end());
  return ops;
}

std::vector<uint32_t> ops_registered_twice(std::span<const std::span<const HandlerEntry>> tables) {
  return build_index(tables).twice;
}

std::vector<uint32_t> ops_registered_twice() { return index().twice; }

}  // namespace scuda::server
