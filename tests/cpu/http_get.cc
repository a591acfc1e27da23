#include "http_get.h"

#include <sstream>

#include "common/socket.h"

namespace scuda::test {

std::string http_get(const std::string& address, const std::string& path) {
  HostPort hp;
  std::string error;
  if (!parse_host_port(address, &hp, &error)) return "";
  Socket s = connect_tcp(hp, &error, std::chrono::seconds(2));
  const std::string request =
      "GET " + path + " HTTP/1.0\r\nHost: " + address + "\r\nConnection: close\r\n\r\n";
  if (!s.valid() || !s.write_all(request.data(), request.size())) return "";
  s.set_idle_limit(std::chrono::seconds(5));
  std::string reply;
  char buf[4096];
  for (ssize_t n; (n = s.read_some(buf, sizeof buf)) > 0;)
    reply.append(buf, static_cast<size_t>(n));
  const size_t body = reply.find("\r\n\r\n");
  if (reply.rfind("HTTP/1.1 200", 0) != 0 && reply.rfind("HTTP/1.0 200", 0) != 0) return "";
  return body == std::string::npos ? "" : reply.substr(body + 4);
}

std::string metrics_address(const ServerProcess& server) {
  const std::string text = server.output();
  const std::string prefix = "scuda metrics at http://";
  const size_t at = text.find(prefix), end = text.find("/metrics", at);
  if (at == std::string::npos || end == std::string::npos) return "";
  return text.substr(at + prefix.size(), end - at - prefix.size());
}

double metric_value(const std::string& text, const std::string& name) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  return -1;
}

}  // namespace scuda::test
