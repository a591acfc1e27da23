#include "server/listener/tokens.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cctype>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>
#include <toml++/toml.h>

namespace scuda::server {

namespace {

// Binary units: device memory comes in powers of two.
uint64_t unit_factor(std::string unit) {
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (unit.empty() || unit == "b") return 1;
  const std::string prefixes = "kmgt";
  if (unit.size() > 3 || prefixes.find(unit[0]) == std::string::npos) return 0;
  if (unit.size() > 1 && unit.substr(1) != "ib" && unit.substr(1) != "b") return 0;
  return uint64_t{1} << (10 * (prefixes.find(unit[0]) + 1));
}

bool hex_digest(const std::string& hex, SecretDigest* out) {
  if (hex.size() != 2 * out->size()) return false;
  for (size_t i = 0; i < out->size(); ++i) {
    char* end = nullptr;
    const std::string byte = hex.substr(2 * i, 2);
    (*out)[i] = static_cast<uint8_t>(std::strtoul(byte.c_str(), &end, 16));
    if (end != byte.c_str() + 2) return false;
  }
  return true;
}

// The secret, as given or as its hash; "" when the entry is good, else why not.
std::string read_secret(const toml::table& t, Token* token) {
  const auto secret = t["secret"].value<std::string>();
  const auto hash = t["sha256"].value<std::string>();
  if (secret.has_value() == hash.has_value()) return "give one of secret or sha256";
  if (secret && secret->empty()) return "an empty secret";
  if (secret) token->digest = digest_of(*secret);
  else if (!hex_digest(*hash, &token->digest)) return "sha256 is not 64 hex digits";
  return "";
}

std::string read_limits(const toml::table& t, Token* token) {
  token->max_sessions = static_cast<int>(t["max_sessions"].value_or(int64_t{0}));
  token->priority = static_cast<int>(t["priority"].value_or(int64_t{0}));
  if (token->max_sessions < 0) return "max_sessions below 0";
  const toml::node_view<const toml::node> memory = t["memory"];
  if (!memory) return "";
  if (auto bytes = memory.value<int64_t>(); bytes && *bytes >= 0) token->memory = *bytes;
  else if (!memory.is_string() || !parse_size(*memory.value<std::string>(), &token->memory))
    return "memory is not a size (bytes, or a number with KiB, MiB, GiB or TiB)";
  return "";
}

// One [tokens.NAME] table; "" when it is good, else why not.
std::string read_token(const std::string& name, const toml::node& node, Token* token) {
  const toml::table* t = node.as_table();
  if (!t) return "not a table";
  if (is_job_token_name(name)) return "names starting with 'job:' are the job tokens'";
  for (const auto& [key, value] : *t)
    if (key != "secret" && key != "sha256" && key != "max_sessions" && key != "memory" &&
        key != "priority")
      return fmt::format("unknown key '{}'", key.str());
  token->name = name;
  if (std::string why = read_secret(*t, token); !why.empty()) return why;
  return read_limits(*t, token);
}

}  // namespace

// What a job token's name starts with.
constexpr std::string_view kJobName = "job:";

std::string job_token_name(const std::string& job) { return std::string(kJobName) + job; }

bool is_job_token_name(const std::string& name) { return name.rfind(kJobName, 0) == 0; }

std::string job_of_token_name(const std::string& name) {
  return is_job_token_name(name) ? name.substr(kJobName.size()) : std::string();
}

SecretDigest digest_of(const std::string& secret) {
  SecretDigest d{};
  unsigned int n = 0;
  EVP_Digest(secret.data(), secret.size(), d.data(), &n, EVP_sha256(), nullptr);
  return d;
}

bool parse_size(const std::string& text, uint64_t* bytes) {
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || number < 0) return false;
  std::string unit(end);
  unit.erase(0, unit.find_first_not_of(' '));
  const uint64_t factor = unit_factor(unit);
  if (factor == 0) return false;
  *bytes = static_cast<uint64_t>(number * static_cast<double>(factor));
  return true;
}

bool Tokens::load(const std::string& path, Tokens* out, std::string* error) {
  toml::table file;
  try {
    file = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    *error =
        fmt::format("tokens file '{}', line {}: {}", path, e.source().begin.line, e.description());
    return false;
  }
  const toml::table* tokens = file["tokens"].as_table();
  if (!tokens || tokens->empty() || file.size() != 1) {
    *error = fmt::format("tokens file '{}' must hold [tokens.NAME] tables and nothing else", path);
    return false;
  }
  Tokens loaded;
  for (const auto& [name, node] : *tokens) {
    Token token;
    if (std::string why = read_token(std::string(name.str()), node, &token); !why.empty()) {
      *error = fmt::format("tokens file '{}', token '{}': {}", path, name.str(), why);
      return false;
    }
    loaded.list_.push_back(std::move(token));
  }
  *out = std::move(loaded);
  return true;
}

Tokens Tokens::single(const std::string& secret) {
  Tokens t;
  t.list_.push_back(Token{.name = "", .digest = digest_of(secret)});
  return t;
}

// Every token is compared, whichever matches: how long it takes says nothing
// about which one did, or how much of a secret was right.
const Token* Tokens::match(const std::string& presented) const {
  const SecretDigest d = digest_of(presented);
  const Token* found = nullptr;
  for (const Token& t : list_)
    if (CRYPTO_memcmp(d.data(), t.digest.data(), d.size()) == 0) found = &t;
  return found;
}

const Token* Tokens::find(const std::string& name) const {
  for (const Token& t : list_)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace scuda::server
