// CUDA_VISIBLE_DEVICES as the driver reads it, against a list of GPUs: a
// session against the GPUs its server offers, a client given several
// servers against all of theirs.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace scuda {

// The entries of a comma-separated list, each trimmed of spaces and tabs.
std::vector<std::string> visible_entries(const std::string& list);

// The GPUs `list` picks out of `gpus` (their UUIDs, "GPU-...", in order),
// as indices into `gpus`: indices or UUID prefixes naming one GPU, any
// case, up to the first entry that names none, names more than one, or
// repeats one.
std::vector<size_t> pick_visible(const std::string& list, const std::vector<std::string>& gpus);

}  // namespace scuda
