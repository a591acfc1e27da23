#include "status_json.h"

#include <chrono>
#include <thread>

#include "server_process.h"

namespace scuda::test {

nlohmann::json status_json_when(const std::string& address,
                                const std::function<bool(const nlohmann::json&)>& ready) {
  nlohmann::json j;
  for (int i = 0; i < 60; ++i) {
    const Output o =
        run_program({SCUDA_BIN, "status", "--json", "--server", address}, {"SCUDA_TOKEN_FILE="});
    if (o.exit_code != 0) return j;
    j = nlohmann::json::parse(o.out, nullptr, false);
    if (!j.is_discarded() && ready(j)) return j;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return j;
}

}  // namespace scuda::test
