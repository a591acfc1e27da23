#include "protocol/live_turns.h"

#include <algorithm>
#include <string_view>

#include "protocol/codec.h"
#include "protocol/frame.h"
#include "protocol/frame_io.h"

namespace scuda::protocol {

namespace {

// Bytes of words a frame carries at most, under the frame's payload limit
// with room for the runs' headers.
constexpr size_t kTurnFrameBytes = kChunkSize / 2;

bool send_frame(Socket& s, op::LiveChanges& frame) {
  const Writer w = encode(frame);
  FrameHeader h;
  h.op = kOpLiveChanges;
  return write_frame(s, h, w.data().data(), w.size());
}

}  // namespace

bool send_turn(Socket& s, const std::vector<live::Run>& runs) {
  op::LiveChanges frame;
  frame.last = 0;
  size_t bytes = 0;
  for (const live::Run& run : runs) {
    // A run longer than a frame goes in pieces of whole words, in order.
    for (size_t at = 0; at < run.bytes.size();) {
      if (bytes == kTurnFrameBytes) {
        if (!send_frame(s, frame)) return false;
        frame.runs.clear();
        bytes = 0;
      }
      const size_t n = std::min(run.bytes.size() - at, kTurnFrameBytes - bytes);
      frame.runs.push_back({run.address + at, std::string_view(run.bytes).substr(at, n)});
      bytes += n;
      at += n;
    }
  }
  frame.last = 1;
  return send_frame(s, frame);
}

TurnStatus read_turn(Socket& s, std::vector<live::Run>* runs, std::string* error) {
  for (;;) {
    Frame f;
    switch (read_frame(s, &f, error)) {
      case ReadStatus::kClosed: return TurnStatus::kClosed;
      case ReadStatus::kBad: return TurnStatus::kBad;
      case ReadStatus::kOk: break;
    }
    Reader in(f.payload);
    op::LiveChanges frame;
    if (f.header.op != kOpLiveChanges || !read(in, &frame) || frame.last > 1) {
      *error = "a frame on the live mirrors' channel is not a well-formed live-changes";
      return TurnStatus::kBad;
    }
    // Runs stay as sent, even where one ends at the next's address: they
    // may lie in two blocks that happen to touch.
    for (const op::ChangedRun& run : frame.runs)
      runs->push_back({run.address, std::string(run.bytes)});
    if (frame.last) return TurnStatus::kOk;
  }
}

}  // namespace scuda::protocol
