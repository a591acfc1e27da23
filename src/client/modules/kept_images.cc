#include "client/modules/kept_images.h"

#include <cstring>

#include "client/modules/record_file.h"

namespace scuda::client {

namespace {

// Keys are hashes; a value is the image's size, or empty once it is gone.
RecordFile* g_file = nullptr;  // set once, before the connection opens

std::string key_of(const protocol::ImageHash& hash) {
  return std::string(reinterpret_cast<const char*>(hash.data()), hash.size());
}

// By host, not port: a link emulator or a restarted server's new port
// still reaches the same cache. A second server on one host only costs
// probes, when the Welcome says which images it lacks.
std::string file_name(const std::string& server) {
  return hashed_name("images-", std::string_view(server).substr(0, server.rfind(':')));
}

}  // namespace

std::vector<protocol::ImageRef> images_kept_on(const std::string& server) {
  if (!g_file) g_file = new RecordFile(file_name(server), "scuda images 1\n");  // used until exit
  std::vector<protocol::ImageRef> images;
  for (const auto& [key, value] : g_file->entries()) {
    protocol::ImageRef image;
    if (key.size() != image.hash.size() || value.size() != sizeof image.size) continue;
    std::memcpy(image.hash.data(), key.data(), key.size());
    std::memcpy(&image.size, value.data(), value.size());
    images.push_back(image);
  }
  if (images.size() > protocol::kMaxKeptImages)
    images.erase(images.begin(), images.end() - protocol::kMaxKeptImages);
  return images;
}

void note_kept(const protocol::ImageHash& hash, uint64_t size) {
  if (!g_file) return;
  g_file->remember(key_of(hash), {reinterpret_cast<const char*>(&size), sizeof size});
}

void note_gone(const protocol::ImageHash& hash) {
  if (g_file) g_file->remember(key_of(hash), {});
}

}  // namespace scuda::client
