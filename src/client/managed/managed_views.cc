#include "client/managed/managed_views.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

namespace scuda::client::managed_views {

namespace {

// Neither view is inherited: a child after fork() has no fault service, and
// a shared mapping would let it write the parent's pages.
void keep_from_children(void* view, size_t size) {
  if (madvise(view, size, MADV_DONTFORK) != 0)
    spdlog::debug("managed memory: madvise(MADV_DONTFORK) failed: {}", std::strerror(errno));
}

// The program's view of `fd` at `address`, or false when the range is taken.
bool map_program_view(int fd, uintptr_t address, size_t size) {
  void* want = reinterpret_cast<void*>(address);
  void* got = mmap(want, size, PROT_NONE, MAP_SHARED | MAP_NORESERVE | MAP_FIXED_NOREPLACE, fd, 0);
  if (got == want) return true;
  if (got != MAP_FAILED) munmap(got, size);  // a kernel without MAP_FIXED_NOREPLACE
  return false;
}

}  // namespace

uint8_t* map(uintptr_t address, size_t size) {
  const int fd = memfd_create("scuda-managed", MFD_CLOEXEC);
  if (fd < 0) {
    spdlog::error("managed memory: memfd_create failed: {}", std::strerror(errno));
    return nullptr;
  }
  uint8_t* writable = nullptr;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    spdlog::error("managed memory: cannot size {} bytes of host copy: {}", size,
                  std::strerror(errno));
  } else if (map_program_view(fd, address, size)) {
    void* view = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (view == MAP_FAILED) {
      spdlog::error("managed memory: cannot map the client's view of {} bytes: {}", size,
                    std::strerror(errno));
      munmap(reinterpret_cast<void*>(address), size);
    } else {
      writable = static_cast<uint8_t*>(view);
      keep_from_children(reinterpret_cast<void*>(address), size);
      keep_from_children(view, size);
    }
  }
  close(fd);  // the mappings keep the memory
  return writable;
}

void unmap(uintptr_t address, uint8_t* writable, size_t size) {
  munmap(reinterpret_cast<void*>(address), size);
  munmap(writable, size);
}

}  // namespace scuda::client::managed_views
