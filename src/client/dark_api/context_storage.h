// Context-local storage: the three slots of the driver's
// CONTEXT_LOCAL_STORAGE export table (c693336e-...). cudart keeps its
// per-context runtime state here (Cricket). Entries are keyed by
// (context, key); key and value are the caller's opaque pointers and never
// leave this process. Semantics: docs/export-tables.md, "Context-local
// storage".
#pragma once

#include <cuda.h>

namespace scuda::client {

using ContextStorageDestructor = void(CUDAAPI*)(CUcontext ctx, void* key, void* value);

// Slot 0. A NULL ctx means the calling thread's current context. Replaces an
// existing entry without running its destructor.
CUresult CUDAAPI context_storage_put(CUcontext ctx, void* key, void* value,
                                     ContextStorageDestructor destructor);
// Slot 1. Drops the entry without running its destructor;
// CUDA_ERROR_INVALID_HANDLE when there is none.
CUresult CUDAAPI context_storage_delete(CUcontext ctx, void* key);
// Slot 2 (output first). CUDA_ERROR_INVALID_HANDLE when there is no entry.
CUresult CUDAAPI context_storage_get(void** value, CUcontext ctx, void* key);

// For the primary-context code: call when `ctx` is reset or released for the
// last time. Runs destructor(ctx, key, value) for each of its entries that has
// one, after dropping them all, outside any lock.
void run_context_storage_destructors(CUcontext ctx);

}  // namespace scuda::client
