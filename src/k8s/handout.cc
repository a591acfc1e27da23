#include "k8s/handout.h"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>

namespace scuda::k8s {

namespace fs = std::filesystem;

namespace {

// Puts a copy of `from` (a file, or a link kept as a link) at `to` by a
// rename: overwriting a library in place would change the pages of every
// process that maps it.
bool replace_with_copy(const fs::path& from, const fs::path& to, std::error_code& ec) {
  const fs::path staging = to.string() + ".new";
  fs::remove(staging, ec);
  if (fs::is_symlink(from)) fs::create_symlink(fs::read_symlink(from), staging, ec);
  else fs::copy_file(from, staging, ec);
  if (ec) return false;
  fs::permissions(staging, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read,
                  fs::perm_options::replace | fs::perm_options::nofollow, ec);
  // A link has no permissions of its own to set.
  if (ec && fs::is_symlink(staging)) ec.clear();
  if (!ec) fs::rename(staging, to, ec);
  return !ec;
}

// The client libraries of `lib_dir` into `to`: the driver's stand-in, the
// link LD_PRELOAD names, and NVML's, which finds the driver's beside it.
bool publish_libraries(const fs::path& lib_dir, const fs::path& to, std::string* error) {
  std::error_code ec;
  fs::create_directories(to, ec);
  for (const char* name : {kDriverLibrary, kDriverStandIn, kNvmlStandIn}) {
    if (!fs::exists(lib_dir / name, ec)) {
      *error = fmt::format("{} does not hold the client library {}", lib_dir.string(), name);
      return false;
    }
    if (!replace_with_copy(lib_dir / name, to / name, ec)) {
      *error = fmt::format("cannot copy {} to {}: {}", (lib_dir / name).string(), to.string(),
                           ec.message());
      return false;
    }
  }
  return true;
}

// `from` into the folder as `name`, when given; *present says whether it is.
bool publish_file(const std::string& from, const fs::path& dir, const char* name, bool* present,
                  std::string* error) {
  *present = !from.empty();
  std::error_code ec;
  if (*present && !replace_with_copy(from, dir / name, ec)) {
    *error = fmt::format("cannot copy {} to {}: {}", from, (dir / name).string(), ec.message());
    return false;
  }
  return true;
}

}  // namespace

bool publish(const HandoutSources& sources, Handout* handout, std::string* error) {
  const fs::path dir = handout->host_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    *error = fmt::format("cannot create {}: {}", dir.string(), ec.message());
    return false;
  }
  return publish_file(sources.token_file, dir, kTokenName, &handout->token, error) &&
         publish_file(sources.tls_ca, dir, kCaName, &handout->tls_ca, error) &&
         publish_libraries(sources.lib_dir, dir / kLibName, error);
}

}  // namespace scuda::k8s
