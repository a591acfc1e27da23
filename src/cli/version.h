// The version `scuda --version` prints.
#pragma once

namespace scuda::cli {

// What `git describe` said at build time, or the project's version when the
// source was not in git (src/cli/version.cmake).
extern const char* const kVersion;

}  // namespace scuda::cli
