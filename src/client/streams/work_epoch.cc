#include "client/streams/work_epoch.h"

#include <atomic>

namespace scuda::client {

namespace {

std::atomic<uint64_t> g_epoch{0};

}  // namespace

uint64_t work_epoch() { return g_epoch.load(std::memory_order_acquire); }

void work_sent() { g_epoch.fetch_add(1, std::memory_order_acq_rel); }

}  // namespace scuda::client
