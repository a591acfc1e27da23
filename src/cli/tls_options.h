// The client's TLS flags, shared by the commands that reach a server
// (`scuda run`, `scuda status`): each flag becomes the environment variable
// the client library and common/tls_client.h read.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace scuda::cli {

struct TlsArgs {
  std::string ca, cert, key;  // as SCUDA_TLS_CA, SCUDA_TLS_CERT, SCUDA_TLS_KEY
};

// Adds --tls-ca, --tls-cert and --tls-key to `cmd`, stored in *args.
void add_tls_options(CLI::App* cmd, TlsArgs* args);

// Sets SCUDA_TLS_CA, SCUDA_TLS_CERT and SCUDA_TLS_KEY to the absolute paths
// of the flags given, leaving the variables of the others as they are.
void export_tls_env(const TlsArgs& args);

// Sets `name` to the absolute path of `path`, when one is given, so that a
// program that changes its directory still finds the file.
void set_path_env(const char* name, const std::string& path);

}  // namespace scuda::cli
