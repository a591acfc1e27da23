// Whether a client speaks TLS to its server, and with what (README, "TLS"):
// TLS is on for an address that starts with tls://, and whenever a CA or a
// client certificate is given (SCUDA_TLS_CA, SCUDA_TLS_CERT, SCUDA_TLS_KEY;
// `scuda run` sets them from its flags).
#pragma once

#include <memory>
#include <string>

#include "common/tls.h"

namespace scuda::tls {

constexpr char kScheme[] = "tls://";

// `address` (HOST[:PORT], or tls://HOST[:PORT]) with the default port added
// where it names none.
std::string with_default_port(const std::string& address);

struct Target {
  std::string address;  // HOST:PORT, without the scheme
  bool tls = false;
};

// Splits the scheme off `address` and says whether TLS is on for it.
Target target_of(const std::string& address);

// Whether the client shows a certificate of its own to servers that ask
// (SCUDA_TLS_CERT or SCUDA_TLS_KEY): mutual TLS.
bool client_certificate_given();

// The client's configuration from the environment, made once per process;
// null, saying why, when a file it names is unusable.
std::shared_ptr<const Context> client_context_from_env(std::string* error);

}  // namespace scuda::tls
