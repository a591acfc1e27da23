#include "common/job_tokens.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cctype>
#include <charconv>
#include <fstream>

#include <fmt/format.h>

namespace scuda {

namespace {

constexpr char kPrefix[] = "job.";
constexpr size_t kMacHex = 64;
constexpr size_t kMaxJobId = 48;
constexpr size_t kMinKey = 32;

bool valid_job_id(const std::string& job) {
  if (job.empty() || job.size() > kMaxJobId) return false;
  for (char c : job)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  return true;
}

std::string mac_hex(const std::string& key, const std::string& text) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(text.data()), text.size(), mac, &n);
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) hex += fmt::format("{:02x}", mac[i]);
  return hex;
}

}  // namespace

std::string mint_job_token(const std::string& key, const std::string& job, int64_t expires) {
  if (key.empty() || !valid_job_id(job)) return "";
  const std::string body = fmt::format("{}{}.{}", kPrefix, job, expires);
  return body + "." + mac_hex(key, body);
}

bool looks_like_job_token(const std::string& text) { return text.rfind(kPrefix, 0) == 0; }

bool verify_job_token(const std::string& key, const std::string& text, int64_t now, JobToken* token,
                      std::string* why) {
  const size_t mac_at = text.rfind('.');
  const size_t expiry_at = mac_at == std::string::npos ? mac_at : text.rfind('.', mac_at - 1);
  if (!looks_like_job_token(text) || expiry_at == std::string::npos ||
      expiry_at < sizeof kPrefix - 1 || text.size() - mac_at - 1 != kMacHex) {
    *why = "malformed job token";
    return false;
  }
  const std::string job = text.substr(sizeof kPrefix - 1, expiry_at - (sizeof kPrefix - 1));
  int64_t expires = 0;
  const char* first = text.data() + expiry_at + 1;
  const char* last = text.data() + mac_at;
  const auto [end, ec] = std::from_chars(first, last, expires);
  if (!valid_job_id(job) || ec != std::errc() || end != last) {
    *why = "malformed job token";
    return false;
  }
  const std::string expected = mac_hex(key, text.substr(0, mac_at));
  if (key.empty() || CRYPTO_memcmp(expected.data(), text.data() + mac_at + 1, kMacHex) != 0) {
    *why = fmt::format("job {}'s token was not minted with this server's job key", job);
    return false;
  }
  if (expires <= now) {
    *why = fmt::format("job {}'s token expired", job);
    return false;
  }
  *token = JobToken{job, expires};
  return true;
}

bool read_job_key(const std::string& path, std::string* key, std::string* error) {
  std::ifstream in(path);
  if (!in || !std::getline(in, *key)) {
    *error = fmt::format("cannot read the job key file '{}'", path);
    return false;
  }
  if (!key->empty() && key->back() == '\r') key->pop_back();
  if (key->size() < kMinKey) {
    *error = fmt::format(
        "the job key in '{}' is shorter than {} characters (make one with: head -c 32 "
        "/dev/urandom | base64 > FILE)",
        path, kMinKey);
    return false;
  }
  return true;
}

}  // namespace scuda
