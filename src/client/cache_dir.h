// The folder where the client keeps what outlives a process (answers,
// kept images, compiled programs), shared by one user's programs.
#pragma once

#include <string>

namespace scuda::client {

// SCUDA_CACHE_DIR, else $XDG_CACHE_HOME/scuda, else ~/.cache/scuda; empty
// when none of them is set. The folder may not exist yet.
std::string cache_dir();

}  // namespace scuda::client
