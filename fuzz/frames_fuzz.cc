// The frame reader over an untrusted byte stream: headers are checked and
// payloads read (or skipped) frame after frame until the stream ends or a
// header is refused.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>

#include "common/socket.h"
#include "protocol/frame_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fds[2];
  if (pipe(fds) != 0) return 0;
  std::thread writer([&] {
    scuda::Socket out(fds[1]);
    out.write_all(data, size);
  });
  scuda::Socket in(fds[0]);
  scuda::protocol::FrameReader reader(in);
  for (int n = 0; n < 64; ++n) {
    scuda::protocol::FrameHeader h;
    std::string error;
    if (reader.header(&h, &error) != scuda::protocol::ReadStatus::kOk) break;
    // Alternate the two ways a payload is consumed.
    if (n % 2 == 0 ? !reader.skip(h.length) : [&] {
          std::string payload(h.length, '\0');
          return reader.read(payload.data(), payload.size());
        }())
      break;
  }
  in.close();  // a writer still writing gets EPIPE, not a hang
  writer.join();
  return 0;
}
