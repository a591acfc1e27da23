// The handshake's payloads, decoded from untrusted bytes: the Hello a
// server reads from any client, the job token it may carry, and the Welcome
// and admission-queue position a client reads from a server.
#include <cstddef>
#include <cstdint>

#include <string>

#include "common/job_tokens.h"
#include "protocol/codec.h"
#include "protocol/handshake.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    scuda::protocol::Reader r(data, size);
    scuda::protocol::Hello hello;
    scuda::protocol::decode(r, &hello);
    scuda::JobToken job;
    std::string why;
    const std::string key = "fuzz-job-key-0123456789abcdef0123";
    scuda::verify_job_token(key, hello.token, 0, &job, &why);
    scuda::verify_job_token(key, std::string(reinterpret_cast<const char*>(data), size), 0, &job,
                            &why);
  }
  {
    scuda::protocol::Reader r(data, size);
    scuda::protocol::Welcome welcome;
    scuda::protocol::decode(r, &welcome);
  }
  {
    scuda::protocol::Reader r(data, size);
    scuda::protocol::QueuePosition position;
    scuda::protocol::decode(r, &position);
  }
  return 0;
}
