// Images a server's module cache held on this client's earlier runs, kept
// per server host in the cache directory (record_file.h). The Hello
// names them and the session keeps those it still has, so that loading one
// needs no probe: at 150 ms RTT, ResNet-18's first training step waited 28
// times for probes of images the server held (device run 11, 2026-11-22).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/handshake.h"

namespace scuda::client {

// The images to name in the Hello to `server` (HOST[:PORT]): at most
// protocol::kMaxKeptImages, those first noted most recently.
std::vector<protocol::ImageRef> images_kept_on(const std::string& server);
// The server holds `hash`, an image of `size` bytes.
void note_kept(const protocol::ImageHash& hash, uint64_t size);
// The server no longer has `hash`.
void note_gone(const protocol::ImageHash& hash);

}  // namespace scuda::client
