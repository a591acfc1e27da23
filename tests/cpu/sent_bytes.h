// What this process has sent through sendmsg, the system call through which
// scuda's client writes to its server: the executable that links
// sent_bytes.cc stands in for libc's sendmsg, so the client library's calls
// reach its count first.
#pragma once

#include <cstdint>

namespace scuda::test {

// Bytes every thread of the process has sent.
uint64_t bytes_sent();
// sendmsg calls the calling thread has made.
uint64_t sends_on_this_thread();

}  // namespace scuda::test
