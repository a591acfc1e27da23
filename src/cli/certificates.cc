#include "cli/certificates.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <utility>

#include <fmt/format.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "common/tls.h"

namespace scuda::cli {

namespace {

using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using Cert = std::unique_ptr<X509, decltype(&X509_free)>;
using Extensions = std::vector<std::pair<int, std::string>>;

struct Signer {
  X509* cert;  // null: the certificate signs itself
  EVP_PKEY* key;
};

Key new_key() { return Key(EVP_EC_gen("P-256"), EVP_PKEY_free); }

bool add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  const bool ok = ext && X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// A random 64-bit serial: certificates of two runs never share one.
bool set_serial(X509* cert) {
  BIGNUM* bn = BN_new();
  const bool ok = bn && BN_rand(bn, 64, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 &&
                  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != nullptr;
  BN_free(bn);
  return ok;
}

Cert new_cert(EVP_PKEY* key, const std::string& cn, Signer signer, const Extensions& extensions,
              int days) {
  Cert c(X509_new(), X509_free);
  X509_NAME* name = X509_get_subject_name(c.get());
  bool ok =
      X509_set_version(c.get(), 2) && set_serial(c.get()) &&
      X509_gmtime_adj(X509_getm_notBefore(c.get()), -3600) &&
      X509_gmtime_adj(X509_getm_notAfter(c.get()), days * 86400L) &&
      X509_set_pubkey(c.get(), key) &&
      X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                 reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0) &&
      X509_set_issuer_name(c.get(), signer.cert ? X509_get_subject_name(signer.cert) : name);
  X509* issuer = signer.cert ? signer.cert : c.get();
  for (const auto& [nid, value] : extensions) ok = ok && add_extension(c.get(), issuer, nid, value);
  if (!ok || !X509_sign(c.get(), signer.key, EVP_sha256())) return Cert(nullptr, X509_free);
  return c;
}

// "DNS:name" or "IP:address" for each name.
std::string alt_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    in6_addr ip;
    const bool is_ip =
        inet_pton(AF_INET, n.c_str(), &ip) == 1 || inet_pton(AF_INET6, n.c_str(), &ip) == 1;
    out += fmt::format("{}{}:{}", out.empty() ? "" : ",", is_ip ? "IP" : "DNS", n);
  }
  return out;
}

// Writes with `mode` from the start: a key is never readable by others.
template <class Write>
bool write_pem(const std::string& path, mode_t mode, Write write) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  FILE* f = fd < 0 ? nullptr : fdopen(fd, "w");
  if (!f) {
    if (fd >= 0) ::close(fd);
    return false;
  }
  const bool ok = write(f) == 1;
  return std::fclose(f) == 0 && ok;
}

bool write_pair(const std::string& dir, const char* name, X509* cert, EVP_PKEY* key,
                std::string* error) {
  const std::string base = dir + "/" + name;
  if (write_pem(base + ".pem", 0644, [&](FILE* f) { return PEM_write_X509(f, cert); }) &&
      write_pem(base + ".key", 0600, [&](FILE* f) {
        return PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
      }))
    return true;
  *error = fmt::format("cannot write {}.pem and {}.key in {}", name, name, dir);
  return false;
}

const Extensions kCa = {{NID_basic_constraints, "critical,CA:TRUE"},
                        {NID_key_usage, "critical,keyCertSign,cRLSign"},
                        {NID_subject_key_identifier, "hash"}};

Extensions leaf(const char* usage) {
  return {{NID_basic_constraints, "critical,CA:FALSE"},
          {NID_key_usage, "critical,digitalSignature"},
          {NID_ext_key_usage, usage},
          {NID_authority_key_identifier, "keyid"}};
}

}  // namespace

bool make_certificates(const CertificateSet& set, std::string* error) {
  Key ca_key = new_key(), server_key = new_key(), client_key = new_key();
  if (!ca_key || !server_key || !client_key) {
    *error = "cannot make keys: " + tls::last_error();
    return false;
  }
  Cert ca = new_cert(ca_key.get(), "scuda CA", {nullptr, ca_key.get()}, kCa, set.days);
  Extensions server_ext = leaf("serverAuth");
  server_ext.push_back({NID_subject_alt_name, alt_names(set.server_names)});
  Cert server = ca ? new_cert(server_key.get(), set.server_names.front(), {ca.get(), ca_key.get()},
                              server_ext, set.days)
                   : Cert(nullptr, X509_free);
  Cert client = ca ? new_cert(client_key.get(), "scuda client", {ca.get(), ca_key.get()},
                              leaf("clientAuth"), set.days)
                   : Cert(nullptr, X509_free);
  if (!ca || !server || !client) {
    *error = "cannot make the certificates: " + tls::last_error();
    return false;
  }
  return write_pair(set.dir, "ca", ca.get(), ca_key.get(), error) &&
         write_pair(set.dir, "server", server.get(), server_key.get(), error) &&
         write_pair(set.dir, "client", client.get(), client_key.get(), error);
}

}  // namespace scuda::cli
