// `scuda status --json` of a test's server, read until it shows what the
// test waits for (the GPU monitor reports once a second).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace scuda::test {

// The status of the server at `address` once `ready` holds of it, asked
// every 50 ms for up to 3 s; the last answer if it never does (null when
// the status command fails).
nlohmann::json status_json_when(const std::string& address,
                                const std::function<bool(const nlohmann::json&)>& ready);

}  // namespace scuda::test
