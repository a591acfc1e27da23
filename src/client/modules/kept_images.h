// Images a server's module cache held on this client's earlier runs, kept
// per server host in the cache directory (record_file.h). The Hello
// names them and the session keeps those it still has, so that loading one
// needs no probe: behind a long link, a program's first step would
// otherwise wait a round trip for each probe of an image the server already
// holds (docs/bench/training.md, "Figures cited by the code").
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
