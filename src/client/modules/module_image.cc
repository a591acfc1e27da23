#include "client/modules/module_image.h"

#include <elf.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace scuda::client {

namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr uint32_t kWrapperMagic = 0x466243B1;

// fatbin header: magic, u16 version, u16 header size, u64 payload size.
struct FatbinHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t header_size;
  uint64_t payload_size;
};

// cudart's registration wrapper around a fatbin.
struct FatbinWrapper {
  uint32_t magic;
  uint32_t version;
  const void* data;
  const void* filename_or_prelinked;
};

size_t elf_size(const uint8_t* p) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, p, sizeof eh);
  size_t end = std::max<size_t>(eh.e_shoff + size_t{eh.e_shnum} * eh.e_shentsize,
                                eh.e_phoff + size_t{eh.e_phnum} * eh.e_phentsize);
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, p + eh.e_shoff + size_t{i} * eh.e_shentsize, sizeof sh);
    if (sh.sh_type != SHT_NOBITS) end = std::max<size_t>(end, sh.sh_offset + sh.sh_size);
  }
  return end;
}

}  // namespace

size_t module_image_size(const void* image, const void** data) {
  *data = image;
  if (!image) return 0;
  const auto* p = static_cast<const uint8_t*>(image);
  uint32_t magic;
  std::memcpy(&magic, p, sizeof magic);
  if (magic == kWrapperMagic) {
    FatbinWrapper w;
    std::memcpy(&w, p, sizeof w);
    return module_image_size(w.data, data);
  }
  if (magic == kFatbinMagic) {
    FatbinHeader h;
    std::memcpy(&h, p, sizeof h);
    return h.header_size + h.payload_size;
  }
  if (std::memcmp(p, ELFMAG, SELFMAG) == 0 && p[EI_CLASS] == ELFCLASS64) return elf_size(p);
  return std::strlen(static_cast<const char*>(image)) + 1;  // PTX text
}

}  // namespace scuda::client
