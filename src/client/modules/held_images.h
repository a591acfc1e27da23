// Module images as the server holds them: named by SHA-256 in load requests
// (docs/protocol.md, "Module images"), and the ones this process's session
// is known to hold, whose loads need not wait.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "protocol/codec.h"
#include "protocol/handshake.h"
#include "protocol/ops.h"

namespace scuda::client {

// Unheld images at least this large are first named by their hash alone: a
// round trip costs less than sending them again (256 KiB take about 20 ms at
// 100 Mbit/s).
constexpr size_t kProbeBytes = size_t{256} << 10;

bool is_held(const protocol::ImageHash& hash);
// What the Welcome said of the images the Hello named (kept_images.h): the
// ones the session kept are held.
void hold_kept(const std::vector<protocol::ImageRef>& asked, const std::vector<uint8_t>& kept);
// False once the server kept no copy of an image it was sent.
bool server_caches();

// A load request: the image follows unless `image` is null (hash only).
protocol::Writer load_request(uint64_t proposed, const protocol::ImageHash& hash, const void* image,
                              size_t size);

// Reads a load reply into *id, noting whether the server now holds the
// image, of `size` bytes; `sent`: the image went with the request.
CUresult read_load_reply(protocol::Reader& r, const protocol::ImageHash& hash, uint64_t size,
                         bool sent, uint64_t* id);

}  // namespace scuda::client
