// `scuda cert`: a self-signed CA, a server certificate and a client
// certificate, for a first TLS setup (README, "TLS").
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "cli/certificates.h"
#include "cli/commands.h"

namespace scuda::cli {

namespace {

// This machine's host name, and the loopback names.
std::vector<std::string> default_names() {
  char host[HOST_NAME_MAX + 1] = {};
  std::vector<std::string> names;
  if (gethostname(host, sizeof host - 1) == 0 && *host) names.push_back(host);
  for (const char* n : {"localhost", "127.0.0.1", "::1"}) names.push_back(n);
  return names;
}

int make(CertificateSet set) {
  if (set.server_names.empty()) set.server_names = default_names();
  std::error_code ec;
  std::filesystem::create_directories(set.dir, ec);
  std::string error;
  if (ec || !make_certificates(set, &error)) {
    fmt::print(stderr, "scuda cert: {}\n",
               ec ? fmt::format("cannot make {}: {}", set.dir, ec.message()) : error);
    return 1;
  }
  fmt::print(
      "wrote ca.pem, server.pem, client.pem and their keys to {} (server names: {})\n"
      "  server: scuda server -l 0.0.0.0:14833 --tls-cert {}/server.pem --tls-key {}/server.key "
      "--token-file TOKEN\n"
      "  client: scuda run --server tls://HOST:14833 --tls-ca {}/ca.pem --token-file TOKEN -- "
      "PROGRAM\n"
      "keep ca.key private: it signs certificates that clients trust\n",
      set.dir, fmt::join(set.server_names, ", "), set.dir, set.dir, set.dir);
  return 0;
}

}  // namespace

void add_cert_command(CLI::App& app) {
  auto set = std::make_shared<CertificateSet>();
  CLI::App* cmd = app.add_subcommand(
      "cert", "Make a self-signed CA with a server and a client certificate, for TLS");
  cmd->add_option("--out", set->dir,
                  "Directory to write ca.pem, server.pem, client.pem and keys to")
      ->required();
  cmd->add_option("--name", set->server_names,
                  "Host name or IP address the server is reached by (repeatable; default: this "
                  "machine's host name, localhost, 127.0.0.1 and ::1)");
  cmd->add_option("--days", set->days, "Days the certificates are valid")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->callback([set] { std::exit(make(*set)); });
}

}  // namespace scuda::cli
