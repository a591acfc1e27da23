#include "client/modules/image_names.h"

#include <cstring>
#include <string>

#include "client/modules/record_file.h"
#include "client/state.h"
#include "client/stats.h"
#include "common/checksum.h"

namespace scuda::client {

namespace parts {

struct ImageNameFile : RecordFile {
  ImageNameFile() : RecordFile("image-names", "scuda image names 1\n") {}
};

}  // namespace parts

namespace {

RecordFile& names() { return client_state().image_name_file.get(); }

// The checksum, then the size: an image's key.
std::string key_of(const void* image, size_t size) {
  Checksum sum;
  {
    stats::Timed timed("image: checksum");
    sum = checksum(image, size);
  }
  const uint64_t bytes = size;
  std::string key(reinterpret_cast<const char*>(sum.data()), sum.size());
  return key.append(reinterpret_cast<const char*>(&bytes), sizeof bytes);
}

protocol::ImageHash sha256(const void* image, size_t size) {
  stats::Timed timed("image: sha-256");
  return protocol::image_hash(image, size);
}

}  // namespace

protocol::ImageHash image_name(const void* image, size_t size) {
  if (size < kRememberedImageBytes) return sha256(image, size);
  const std::string key = key_of(image, size);
  protocol::ImageHash hash;
  std::string value;
  if (names().find(key, &value) && value.size() == hash.size()) {
    std::memcpy(hash.data(), value.data(), hash.size());
    return hash;
  }
  hash = sha256(image, size);
  names().remember(key, std::string_view(reinterpret_cast<const char*>(hash.data()), hash.size()));
  return hash;
}

}  // namespace scuda::client
