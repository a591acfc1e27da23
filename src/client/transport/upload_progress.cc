#include "client/transport/upload_progress.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "protocol/ops.h"

namespace scuda::client {
namespace {

// Smaller uploads end within a second on any link worth using.
constexpr size_t kFrom = 4u << 20;
constexpr std::chrono::seconds kEvery(5);

double mib(size_t bytes) { return static_cast<double>(bytes) / (1u << 20); }

}  // namespace

bool shows_upload_progress(uint32_t op, size_t size) {
  return size >= kFrom && (op == protocol::kOpModuleLoad || op == protocol::kOpLibraryLoad ||
                           op == protocol::kOpLink);
}

UploadProgress::UploadProgress(uint32_t op, std::string server, size_t total)
    : op_(op), server_(std::move(server)), total_(total) {}

UploadProgress::~UploadProgress() {
  if (!said_) return;
  const double s = std::chrono::duration<double>(Clock::now() - start_).count();
  if (done_ < total_) {
    spdlog::warn("uploading {} to {} stopped after {:.0f} of {:.0f} MiB", what(), server_,
                 mib(done_), mib(total_));
    return;
  }
  spdlog::warn("uploaded {} to {} in {:.0f} s ({:.1f} MiB/s)", what(), server_, s,
               mib(total_) / std::max(s, 1e-3));
}

void UploadProgress::sent(size_t bytes) {
  done_ += bytes;
  const Clock::time_point now = Clock::now();
  if (now < next_ || done_ >= total_) return;
  next_ = now + kEvery;
  said_ = true;
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(now - start_).count();
  spdlog::warn("uploading {} to {}: {:.0f} of {:.0f} MiB ({:.0f}%) in {} s", what(), server_,
               mib(done_), mib(total_),
               100.0 * static_cast<double>(done_) / static_cast<double>(total_), s);
}

std::string UploadProgress::what() const {
  const char* kind = op_ == protocol::kOpLink         ? "JIT linker inputs"
                     : op_ == protocol::kOpModuleLoad ? "a module image"
                                                      : "a library image";
  return fmt::format("{} ({:.0f} MiB)", kind, mib(total_));
}

}  // namespace scuda::client
