#include "server/listener/driver_probe.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include <fmt/format.h>

#include "common/driver_table.h"
#include "common/gpu_uuid.h"
#include "server/session/snapshot.h"

namespace scuda::server {

namespace {

// In the child: what to report, and whether it is a success. The summary's
// line is followed by one line per GPU, its UUID.
bool describe(const std::string& path, std::string* text) {
  DriverTable d;
  protocol::Welcome w;
  if (!load_driver(path, &d, text) || !take_snapshot(d, &w, text)) return false;
  *text =
      fmt::format("driver {}, CUDA {}.{}; {} GPU{}", d.path, w.driver_version / 1000,
                  w.driver_version % 1000 / 10, w.devices.size(), w.devices.size() == 1 ? "" : "s");
  for (size_t i = 0; i < w.devices.size(); ++i)
    *text += fmt::format("{} {} {} ({:.1f} GiB)", i == 0 ? ":" : ",", i, w.devices[i].name,
                         static_cast<double>(w.devices[i].total_mem) / (1 << 30));
  if (w.devices.empty()) return *text += " (it sees no GPU)", false;
  for (const protocol::DeviceInfo& device : w.devices) *text += "\n" + gpu_uuid_text(device.uuid);
  return true;
}

}  // namespace

bool probe_driver(const std::string& path, std::string* summary, std::vector<std::string>* gpus,
                  std::string* error) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) {
    *error = fmt::format("cannot check the driver: {}", std::strerror(errno));
    return false;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipe_fds[0]);
    std::string text;
    const bool ok = describe(path, &text);
    [[maybe_unused]] const ssize_t n = write(pipe_fds[1], text.data(), text.size());
    _exit(ok ? 0 : 1);
  }
  close(pipe_fds[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof buf)) != 0;) {
    if (n > 0) text.append(buf, static_cast<size_t>(n));
    else if (errno != EINTR) break;
  }
  close(pipe_fds[0]);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
    *error = text.empty() ? "the driver check did not finish (it crashed)" : text;
    return false;
  }
  std::istringstream lines(text);
  std::getline(lines, *summary);
  for (std::string uuid; std::getline(lines, uuid);) gpus->push_back(uuid);
  return true;
}

}  // namespace scuda::server
