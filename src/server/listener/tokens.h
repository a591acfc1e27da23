// The server's tokens (`--tokens FILE`, docs/architecture.md, "Tokens and
// the admission queue"): each names a user of the server, with its secret
// (kept as its SHA-256 only), how many sessions it may run at once, how much
// device memory its sessions may hold, and its place in the queue. The
// single `--token-file` is one unnamed token without limits.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace scuda::server {

using SecretDigest = std::array<uint8_t, 32>;

struct Token {
  std::string name;       // "" for --token-file's token
  SecretDigest digest{};  // SHA-256 of the secret
  int max_sessions = 0;   // 0: no limit
  uint64_t memory = 0;    // bytes of device memory across its sessions; 0: no cap
  int priority = 0;       // higher waits less
  int64_t expires = 0;    // a job's token (job_token_name): its expiry, Unix seconds
};

class Tokens {
 public:
  // Reads a tokens file (TOML); false with *error naming the file and what is wrong.
  static bool load(const std::string& path, Tokens* out, std::string* error);
  // One unnamed token with no limits, for --token-file.
  static Tokens single(const std::string& secret);

  // True when no token is required.
  bool open() const { return list_.empty(); }
  // The token whose secret `presented` is, compared with each in constant
  // time; nullptr when none is.
  const Token* match(const std::string& presented) const;
  // The token named `name`, nullptr when there is none.
  const Token* find(const std::string& name) const;
  const std::vector<Token>& list() const { return list_; }

 private:
  std::vector<Token> list_;
};

// The name a job's token (common/job_tokens.h) goes by in logs, status and
// the queue: "job:<id>". No name in a tokens file starts with "job:".
std::string job_token_name(const std::string& job);
bool is_job_token_name(const std::string& name);
// The job id a job token's name holds; "" for any other name.
std::string job_of_token_name(const std::string& name);

// SHA-256 of `secret`.
SecretDigest digest_of(const std::string& secret);

// "8GiB", "512 MiB", "1024", 4096 → bytes; false when the text names no size.
bool parse_size(const std::string& text, uint64_t* bytes);

}  // namespace scuda::server
