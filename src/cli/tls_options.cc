#include "cli/tls_options.h"

#include <stdlib.h>

#include <filesystem>

namespace scuda::cli {

void add_tls_options(CLI::App* cmd, TlsArgs* args) {
  cmd->add_option("--tls-ca", args->ca,
                  "PEM CA the server's certificate must come from; turns TLS on (default: "
                  "SCUDA_TLS_CA; a tls:// server address uses the system's CAs)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--tls-cert", args->cert,
                  "PEM client certificate, for a server that asks for one (SCUDA_TLS_CERT)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--tls-key", args->key, "PEM private key of --tls-cert (SCUDA_TLS_KEY)")
      ->check(CLI::ExistingFile);
}

void set_path_env(const char* name, const std::string& path) {
  if (!path.empty()) setenv(name, std::filesystem::absolute(path).c_str(), 1);
}

void export_tls_env(const TlsArgs& args) {
  set_path_env("SCUDA_TLS_CA", args.ca);
  set_path_env("SCUDA_TLS_CERT", args.cert);
  set_path_env("SCUDA_TLS_KEY", args.key);
}

}  // namespace scuda::cli
