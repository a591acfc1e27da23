// A self-signed CA and the certificates it signs, for a first TLS setup
// (`scuda cert`): EC P-256 keys, SHA-256 signatures, with OpenSSL.
#pragma once

#include <string>
#include <vector>

namespace scuda::cli {

struct CertificateSet {
  std::string dir;
  std::vector<std::string> server_names;  // DNS names or IP addresses the server answers to
  int days = 825;
};

// Writes ca.pem, ca.key, server.pem, server.key, client.pem and client.key
// into `dir` (keys readable by their owner only); false, saying why, if it
// cannot.
bool make_certificates(const CertificateSet& set, std::string* error);

}  // namespace scuda::cli
