#include "common/tls_client.h"

#include <cstdlib>
#include <mutex>

#include "common/config.h"

namespace scuda::tls {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

std::string with_default_port(const std::string& address) {
  const size_t host = address.rfind(kScheme, 0) == 0 ? sizeof kScheme - 1 : 0;
  return address.find(':', host) == std::string::npos ? address + ":" + kDefaultPort : address;
}

Target target_of(const std::string& address) {
  Target t;
  const bool scheme = address.rfind(kScheme, 0) == 0;
  t.address = scheme ? address.substr(sizeof kScheme - 1) : address;
  t.tls = scheme || !env("SCUDA_TLS_CA").empty() || !env("SCUDA_TLS_CERT").empty() ||
          !env("SCUDA_TLS_KEY").empty();
  return t;
}

bool client_certificate_given() {
  return !env("SCUDA_TLS_CERT").empty() || !env("SCUDA_TLS_KEY").empty();
}

std::shared_ptr<const Context> client_context_from_env(std::string* error) {
  static std::once_flag once;
  static std::shared_ptr<const Context> context;
  static std::string why;
  std::call_once(once, [] {
    context =
        client_context({env("SCUDA_TLS_CA"), env("SCUDA_TLS_CERT"), env("SCUDA_TLS_KEY")}, &why);
  });
  if (!context) *error = why;
  return context;
}

}  // namespace scuda::tls
