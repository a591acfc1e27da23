// Names of functions and kernels that hold from one run to the next: the
// image they came from (its SHA-256) and the name looked up in it, so that
// what the server said of them can be remembered across runs
// (answer_cache.h). Ids are this process's own; these names are not.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/ops.h"

namespace scuda::client {

// Module or library `parent` was loaded from the image with `hash`.
void note_image(uint64_t parent, const protocol::ImageHash& hash);

// `id` is `name` looked up in module or library `parent` (as a function, or
// a library's kernel: `kind`, neither of them 'F'). Nothing is named if the parent's image is
// unknown.
void name_lookup(uint64_t id, uint64_t parent, char kind, std::string_view name);

// `fn` is kernel `kernel`'s function in a context of device `dev`.
void name_kernel_function(uint64_t fn, uint64_t kernel, int dev);

// The lasting name of `id`, if it has one.
bool lasting_name(uint64_t id, std::string* name);

// True when `id` is named as a library's kernel (kind 'k'), whose context a
// launch's stream picks; a function has its own.
bool named_kernel(uint64_t id);

// Module or library `parent` is unloaded: its image and its lookups' names go.
void forget_names(uint64_t parent);

}  // namespace scuda::client
