#include "module_image.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace scuda_double {
namespace {

constexpr const char* kMagic = "scuda-double-module";

size_t align_up(size_t value, size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// C struct layout: each parameter aligned to min(size, 8).
void lay_out(KernelDesc* kernel) {
  size_t offset = 0;
  for (size_t size : kernel->sizes) {
    size_t alignment = std::min<size_t>(size, 8);
    offset = align_up(offset, alignment);
    kernel->offsets.push_back(offset);
    offset += size;
    kernel->alignment = std::max(kernel->alignment, alignment);
  }
  kernel->packed_size = offset;
}

bool parse_size(const std::string& word, size_t* out) {
  if (word.empty() || word.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::stoull(word);
  return *out > 0;
}

bool parse_kernel(std::istringstream& words, ImageDesc* out) {
  KernelDesc kernel;
  if (!(words >> kernel.name)) return false;
  std::string word;
  while (words >> word) {
    size_t size = 0;
    if (!parse_size(word, &size)) return false;
    kernel.sizes.push_back(size);
  }
  lay_out(&kernel);
  out->kernels.push_back(std::move(kernel));
  return true;
}

bool parse_global(std::istringstream& words, ImageDesc* out) {
  GlobalDesc global;
  std::string size_word, extra;
  if (!(words >> global.name >> size_word) || (words >> extra)) return false;
  if (!parse_size(size_word, &global.size)) return false;
  out->globals.push_back(std::move(global));
  return true;
}

bool parse_line(const std::string& line, ImageDesc* out) {
  std::istringstream words(line);
  std::string keyword;
  if (!(words >> keyword)) return true;  // blank line
  if (keyword[0] == '#') return true;    // a comment: tests pad images with them
  if (keyword == "kernel") return parse_kernel(words, out);
  if (keyword == "global") return parse_global(words, out);
  return false;
}

}  // namespace

bool parse_image(const void* image, ImageDesc* out) {
  if (image == nullptr) return false;
  std::istringstream lines{std::string(static_cast<const char*>(image))};
  std::string line;
  if (!std::getline(lines, line) || line != kMagic) return false;
  while (std::getline(lines, line)) {
    if (!parse_line(line, out)) return false;
  }
  return true;
}

const KernelDesc* find_kernel(const ImageDesc& image, const std::string& name) {
  for (const KernelDesc& kernel : image.kernels) {
    if (kernel.name == name) return &kernel;
  }
  return nullptr;
}

}  // namespace scuda_double
