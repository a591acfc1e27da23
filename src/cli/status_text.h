// `scuda status` for people: the status JSON (docs/protocol.md, "Status")
// as a few lines and a table of sessions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace scuda::cli {

// The text for the server at `address` whose status is `status`.
std::string status_text(const std::string& address, const nlohmann::json& status);

}  // namespace scuda::cli
