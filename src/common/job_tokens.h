// Job tokens (docs/protocol.md, "Job tokens"): a token a scheduler's prolog
// mints for one job from a key the server holds too, so that a server takes
// it without being told of it, and takes it no longer once the job's epilog
// has dropped it or its time is up. The text is
// "job.<id>.<expiry>.<mac>": the job's id (letters, digits, '-' and '_'),
// the Unix second it ends at, and HMAC-SHA256 over "job.<id>.<expiry>" with
// the key, as 64 hex digits.
#pragma once

#include <cstdint>
#include <string>

namespace scuda {

struct JobToken {
  std::string job;      // the scheduler's job id
  int64_t expires = 0;  // Unix seconds
};

// Mints the token of `job`, valid until `expires`; "" when the id has
// characters a token cannot carry, or the key is empty.
std::string mint_job_token(const std::string& key, const std::string& job, int64_t expires);

// True when `text` has a job token's shape: it may be one, and no other kind
// of token is tried for it.
bool looks_like_job_token(const std::string& text);

// Checks `text` against `key` (the MAC compared in constant time) and fills
// *token; false with *why (which names no secret) when it is malformed, was
// minted with another key, or expired before `now`.
bool verify_job_token(const std::string& key, const std::string& text, int64_t now, JobToken* token,
                      std::string* why);

// Reads a job key file: its first line, which must hold at least 32
// characters; false with *error naming the file.
bool read_job_key(const std::string& path, std::string* key, std::string* error);

}  // namespace scuda
