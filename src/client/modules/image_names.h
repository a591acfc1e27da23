// The SHA-256 that names an image to the server (protocol::image_hash),
// remembered across runs. A program loads the same fatbins from its
// libraries at every start (27 MB for cuBLAS, far more for PyTorch), and
// hashing them again costs the loading thread about a millisecond per
// megabyte; a record file of the user's cache maps each large image's
// XXH3-128 checksum and size, which costs a tenth as much, to its SHA-256.
// Two different images with one checksum are as unlikely as damage the
// checksum misses. SCUDA_STATS counts each in the rows "image: checksum"
// and "image: sha-256".
#pragma once

#include <cstddef>

#include "protocol/ops.h"

namespace scuda::client {

// The SHA-256 of the `size` bytes at `image`: from the record for an image
// of at least kRememberedImageBytes seen before, else computed (and, for
// such an image, recorded).
protocol::ImageHash image_name(const void* image, size_t size);

// Smaller images are hashed at each load: their SHA-256 costs no more than
// a lookup would.
constexpr size_t kRememberedImageBytes = size_t{256} << 10;

}  // namespace scuda::client
