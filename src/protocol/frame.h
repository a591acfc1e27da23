// The frame: the unit of everything on a scuda connection (docs/protocol.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace scuda::protocol {

constexpr uint32_t kMagic = 0x41444353;  // "SCDA" on the wire
constexpr uint16_t kProtocolVersion = 15;
constexpr size_t kHeaderSize = 24;
// Largest payload either side accepts; bulk copies are split to fit.
constexpr uint32_t kMaxPayload = 64u << 20;
// Bulk copies are cut into chunks of this size so that each frame stays small
// enough to pipeline.
constexpr size_t kChunkSize = 8u << 20;

enum FrameFlags : uint16_t {
  kOneWay = 1 << 0,         // request: the sender expects no reply
  kReply = 1 << 1,          // this frame answers request_id
  kError = 1 << 2,          // reply: payload is a protocol error message; the session ends
  kSynchronizing = 1 << 3,  // request: also report the first error of earlier one-way requests
  kOutput = 1 << 4,         // server to client, answering nothing: the session's standard output
  // Synchronizing request: the client keeps registered memory in step, so
  // the reply comes after the changes of the mirrors it pulled before.
  kWantChanges = 1 << 5,
};

// An ERROR frame's op says what kind of refusal it is.
enum ErrorKind : uint32_t {
  kErrorFatal = 0,  // the connection is refused for good
  kErrorBusy = 1,   // the server is at its limit of sessions: the client may try again
};

struct FrameHeader {
  uint32_t magic = kMagic;
  uint16_t version = kProtocolVersion;
  uint16_t flags = 0;
  uint32_t op = 0;
  uint32_t length = 0;  // payload bytes that follow the header
  uint64_t request_id = 0;
};

struct Frame {
  FrameHeader header;
  std::vector<uint8_t> payload;
};

void encode_header(const FrameHeader& h, uint8_t out[kHeaderSize]);
// Decodes and validates a header; on failure returns false and says why.
bool decode_header(const uint8_t in[kHeaderSize], FrameHeader* h, std::string* error);

}  // namespace scuda::protocol
