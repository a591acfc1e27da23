// Progress lines for an upload a user would otherwise wait on in silence: a
// module or library image, or the JIT linker's inputs, sent whole to a
// server behind a slow link. Nothing is said of an upload that ends within
// a second.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace scuda::client {

// Whether a frame of `op` with a payload of `size` bytes is written in
// slices with progress lines.
bool shows_upload_progress(uint32_t op, size_t size);

// Counts one upload's bytes and logs how far it got: first a second after
// it began, then every five seconds, and once more when it ends if anything
// was said before.
class UploadProgress {
 public:
  // `op` names what is sent, `server` where to, `total` its size in bytes.
  UploadProgress(uint32_t op, std::string server, size_t total);
  ~UploadProgress();
  UploadProgress(const UploadProgress&) = delete;
  UploadProgress& operator=(const UploadProgress&) = delete;

  // Adds `bytes` sent; logs a line when one is due.
  void sent(size_t bytes);

 private:
  using Clock = std::chrono::steady_clock;
  std::string what() const;

  uint32_t op_;
  std::string server_;
  size_t total_;
  size_t done_ = 0;
  Clock::time_point start_ = Clock::now();
  Clock::time_point next_ = start_ + std::chrono::seconds(1);
  bool said_ = false;
};

}  // namespace scuda::client
