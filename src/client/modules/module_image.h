// Module images arrive as bare pointers; their size has to be read from
// their own headers before they can be sent.
#pragma once

#include <cstddef>

namespace scuda::client {

// The size in bytes of a cubin (ELF), fatbin, fatbin wrapper's fatbin or
// NUL-terminated PTX image at `image`. Sets *data to the start of the bytes
// to send (a wrapper points elsewhere). 0 if the image is not recognised.
size_t module_image_size(const void* image, const void** data);

}  // namespace scuda::client
