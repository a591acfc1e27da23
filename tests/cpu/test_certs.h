// Certificates for tests over TLS, made at test time with `scuda cert`
// (OpenSSL's API) in a directory of the test's own, and the server flags
// that use them.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "server_process.h"

namespace scuda::test {

// A certificate set from `scuda cert`: ca.pem, server.pem, server.key.
struct Certs {
  std::string dir;
  std::string file(const char* name) const { return dir + "/" + name; }
};

// A set in `under`/`name` for the given server names; throws if `scuda
// cert` fails.
inline Certs make_certs(const std::string& under, const char* name,
                        const std::vector<std::string>& names) {
  Certs c{under + "/" + name};
  std::vector<std::string> argv = {SCUDA_BIN, "cert", "--out", c.dir};
  for (const std::string& n : names) argv.insert(argv.end(), {"--name", n});
  const Output o = run_program(argv);
  if (o.exit_code != 0) throw std::runtime_error("scuda cert failed: " + o.err);
  return c;
}

// `scuda server`'s flags that serve TLS with the set's certificate.
inline std::vector<std::string> tls_args(const Certs& c) {
  return {"--tls-cert", c.file("server.pem"), "--tls-key", c.file("server.key")};
}

}  // namespace scuda::test
