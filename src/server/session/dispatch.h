// Finds the handler for an op: generated ones and the hand-written ones.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "server/session/handler.h"

namespace scuda::server {

// Hand-written handler tables, one per file that defines them.
std::span<const HandlerEntry> context_handlers();
std::span<const HandlerEntry> memory_handlers();
std::span<const HandlerEntry> module_handlers();
std::span<const HandlerEntry> launch_handlers();
std::span<const HandlerEntry> host_callback_handlers();
std::span<const HandlerEntry> pointer_handlers();
std::span<const HandlerEntry> page_handlers();
std::span<const HandlerEntry> host_register_handlers();
std::span<const HandlerEntry> graph_handlers();
std::span<const HandlerEntry> graph_exec_handlers();
std::span<const HandlerEntry> copy3d_handlers();
std::span<const HandlerEntry> resource_object_handlers();
std::span<const HandlerEntry> va_handlers();
std::span<const HandlerEntry> ipc_handlers();
std::span<const HandlerEntry> logs_handlers();
std::span<const HandlerEntry> struct_array_handlers();
std::span<const HandlerEntry> async_notification_handlers();
std::span<const HandlerEntry> lane_handlers();
std::span<const HandlerEntry> peer_copy_handlers();
std::span<const HandlerEntry> link_handlers();

// NVML: the generated handlers (nvml_server_handlers.cc) and the hand-written
// ones (nvml_ops.cc: process lists; device_list_ops.cc: device numbering).
extern const HandlerEntry kNvmlGeneratedHandlers[];
extern const size_t kNvmlGeneratedHandlerCount;
std::span<const HandlerEntry> nvml_handlers();
// NVML's device count, devices by index and their indices, over the GPUs
// the server offers (device_list_ops.cc).
std::span<const HandlerEntry> nvml_device_list_handlers();

// The entry for `op`, or nullptr when no handler exists.
const HandlerEntry* find_handler(uint32_t op);

// Every op that has a handler, in increasing order.
std::vector<uint32_t> handled_ops();

// The ops that more than one entry of the server's tables handles, in
// increasing order: none, or the server refuses to start (listener.cc);
// the first table's entry is the one used.
std::vector<uint32_t> ops_registered_twice();
// The same over `tables`.
std::vector<uint32_t> ops_registered_twice(std::span<const std::span<const HandlerEntry>> tables);

}  // namespace scuda::server
