// What one element of a CUDA array takes, shared by the client (copies it
// can shape without asking) and the server (a token's memory cap).
#pragma once

#include <cuda.h>

#include <cstddef>

namespace scuda {

// Bytes per element of an array of a plain format (8, 16 or 32-bit integers,
// half, float) with 1, 2 or 4 channels; 0 for the others (block compressed,
// video) and for other channel counts.
size_t format_element_bytes(CUarray_format format, unsigned channels);

}  // namespace scuda
