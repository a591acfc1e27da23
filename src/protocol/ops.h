// Op codes and what the ops share. Hand-written ops are listed in
// op_list.h, below kFirstGeneratedOp; the generator numbers one op per
// forwarded driver function from there (api_ops.h).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "api_ops.h"
#include "nvml_ops.h"  // NVML's generated ops, from 5000
#include "protocol/op_list.h"

namespace scuda::protocol {

// The ops' codes: the hand-written ones (op_list.h), then the generated ones
// from kFirstGeneratedOp.
enum Op : uint32_t {
#define SCUDA_OP_CODE(op, code, name, way) op = code,
  SCUDA_HAND_WRITTEN_OPS(SCUDA_OP_CODE)
#undef SCUDA_OP_CODE
      kFirstGeneratedOp = 1000,
};

// Which way an op travels (op_list.h says what each means).
enum class OpWay : uint8_t { kAnswered, kOneWay, kEither, kHandshake, kToClient, kOnChannel };

// A name for logs: the driver function of a generated op, else the
// hand-written op's own name.
const char* op_name(uint32_t op);

// The way a hand-written op travels; nullopt for any other code.
std::optional<OpWay> op_way(uint32_t op);

// Mode bits of the copy ops.
enum CopyMode : uint8_t {
  kCopyAsync = 1 << 0,       // on a stream, ordered with its other work
  kCopyPerThread = 1 << 1,   // the _ptds/_ptsz entry point: stream 0 is per-thread
  kCopyCompressed = 1 << 2,  // lz4: the host-to-device data is; device-to-host data may be
  // memcpy-htod-lanes sent one-way: the session finishes the copy before
  // its next request, as for a copy the client waits for (managed pages).
  kCopySettled = 1 << 3,
};

// A batch memory operation node carries at most this many operations (the
// driver takes far fewer).
constexpr uint32_t kMaxBatchMemOps = 1u << 16;

// mem-map-array and mem-batch-decompress carry at most this many entries.
constexpr uint32_t kMaxArrayMaps = 1u << 16;
constexpr uint64_t kMaxDecompressions = 1u << 16;

// ctx-create carries at most this many execution-affinity parameters: the
// driver knows one affinity type (SM count), so a longer list is malformed.
constexpr uint32_t kMaxCtxAffinityParams = 16;
// Launch attributes of one launch configuration, at most.
constexpr uint32_t kMaxLaunchAttributes = 64;

// function-names answers for at most this many functions or kernels.
constexpr uint32_t kMaxModuleFunctions = 1u << 16;

// Lanes (docs/protocol.md, "Lanes"): at most this many, and a copy's bytes
// cross them in stripes, stripe i on lane i % lanes. A stripe is at most
// kLaneStripe; a copy too small to give every lane one of that size takes
// smaller ones (in kLaneStripeUnit, at least kLaneStripeLeast), so that it
// still crosses every lane.
constexpr uint32_t kMaxLanes = 16;
constexpr size_t kLaneStripe = 4u << 20;
constexpr size_t kLaneStripeLeast = 1u << 20;
constexpr size_t kLaneStripeUnit = 64u << 10;

// The stripe size of a copy of `size` bytes over `lanes` lanes, which both
// ends compute from the request.
constexpr uint64_t lane_stripe(uint64_t size, uint32_t lanes) {
  const uint64_t share = lanes ? (size + lanes - 1) / lanes : size;
  const uint64_t units = (share + kLaneStripeUnit - 1) / kLaneStripeUnit;
  return std::clamp<uint64_t>(units * kLaneStripeUnit, kLaneStripeLeast, kLaneStripe);
}

// Calls move(offset, length) for each stripe of a copy of `size` bytes that
// crosses lane `index` of `lanes`, in order, while it returns true.
template <class Move>
bool each_stripe(size_t index, uint32_t lanes, uint64_t size, Move&& move) {
  const uint64_t stripe = lane_stripe(size, lanes);
  for (uint64_t at = index * stripe; at < size; at += uint64_t{lanes} * stripe)
    if (!move(at, static_cast<size_t>(std::min<uint64_t>(stripe, size - at)))) return false;
  return true;
}

// Which kind of object kOpResourceDesc asks about.
enum ResourceOwner : uint8_t {
  kTextureObject = 0,
  kSurfaceObject = 1,
};

// Each pointer attribute's value travels in this many bytes, zero padded.
constexpr uint32_t kPointerValueBytes = 16;
// The most attributes one pointer-attributes request asks for.
constexpr uint32_t kMaxPointerAttributes = 64;

// Module and library loads name their image by its SHA-256, so that the
// server's cache can spare sending it (docs/protocol.md).
using ImageHash = std::array<uint8_t, 32>;
ImageHash image_hash(const void* data, size_t size);

// The result of a hash-only load the server has no image for; the client then
// sends the image.
constexpr uint32_t kImageNotHeld = 301;  // CUDA_ERROR_FILE_NOT_FOUND

// A kernel's parameters: (offset, size) of each, in order.
struct ParamSlot {
  uint64_t offset;
  uint64_t size;
};

}  // namespace scuda::protocol
