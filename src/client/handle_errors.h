// Handles the client hands out before the server has made them: lookups and
// library loads whose replies it reads later. CUDA would have failed the
// call that made one; here each later use of the handle fails instead, with
// that error. Such errors are not kept for the next synchronizing call: a
// handle never used has no effect, as an ignored error has none in CUDA
// (cudart loads every fatbin a program carries, some of which a GPU may
// reject, and uses only those it needs).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace scuda::client {

void note_handle_error(uint64_t id, CUresult rc);
// CUDA_SUCCESS, or the error of the request that was to make `id`.
CUresult handle_error(uint64_t id);

}  // namespace scuda::client
