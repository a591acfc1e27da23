// Op codes. Hand-written ops live below kFirstGeneratedOp; the generator
// numbers one op per forwarded driver function from there (api_ops.h).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "api_ops.h"
#include "nvml_ops.h"  // NVML's generated ops, from 5000

namespace scuda::protocol {

enum Op : uint32_t {
  kOpHello = 1,          // handshake; must be the first frame
  kOpCtxSetCurrent,      // one-way: the calling client thread's context
  kOpMemcpyHtoD,         // one chunk of a host-to-device copy
  kOpMemcpyDtoH,         // one chunk of a device-to-host copy
  kOpModuleLoad,         // a module image (cubin, fatbin or PTX), or only its hash
  kOpLibraryLoad,        // a library image, or only its hash
  kOpModuleGetFunction,  // a function and its description (layout, attributes)
  kOpLibraryGetKernel,   // a kernel under a client-chosen id, and its description
  kOpKernelGetFunction,  // a kernel's function under a client-chosen id, and its description
  kOpPrimaryContext,     // a device's primary context, without retaining it
  kOpCtxCreate,          // cuCtxCreate, with its execution-affinity parameters
  kOpLaunch,             // cuLaunchKernel / cuLaunchKernelEx
  kOpOccupancyClusters,  // cuOccupancyMaxActiveClusters / MaxPotentialClusterSize
  kOpPointerAttributes,  // cuPointerGetAttribute(s)
  kOpFunctionInfo,       // a function's or kernel's description, when its lookup's lacks it
  kOpHostCallback,       // one-way: a host callback's place in a stream (and the callback channel's
                         // frames)
  kOpCallbackChannel,    // the name and secret with which a callback channel joins the session
  kOpLanes,              // the name and secret with which lanes join the session
  kOpMemcpyHtoDLanes,    // a host-to-device copy whose bytes cross the lanes
  kOpMemcpyDtoHLanes,    // a device-to-host copy whose bytes cross the lanes
  kOpLink,               // the JIT linker: every input at once, the linked image back
  kOpFunctionNames,      // the names of a module's functions or a library's kernels
  kOpUserObjectCreate,   // cuUserObjectCreate: its destructor runs on the client
  kOpStatus,  // instead of the handshake: the server's GPUs and sessions (`scuda status`)
  // A join's first frame, in the clear and ahead of any TLS: the join point
  // that the connection is for (docs/protocol.md, "TLS"; 450-469).
  kOpJoinRoute = 450,
  // While a HELLO waits in the server's admission queue: the client's place
  // in line, answering the HELLO ahead of its reply (docs/protocol.md,
  // "Admission queue"; 470-489).
  kOpQueuePosition = 470,
  // Graphs and stream capture (docs/protocol.md, "Graphs").
  kOpGraphAddNode = 200,                // cuGraphAddNode_v2 and the typed adds with struct params
  kOpGraphNodeSetParams = 201,          // cuGraphNodeSetParams and the typed sets
  kOpGraphExecNodeSetParams = 202,      // cuGraphExecNodeSetParams and the typed exec sets
  kOpGraphKernelNodeGetParams = 203,    // a kernel node's parameters, arguments packed
  kOpGraphInstantiate = 204,            // cuGraphInstantiateWithParams
  kOpGraphExecUpdate = 205,             // cuGraphExecUpdate_v2
  kOpStreamCaptureInfo = 206,           // cuStreamGetCaptureInfo_v3 of an active capture
  kOpGraphDot = 207,                    // cuGraphDebugDotPrint: the DOT text, for the client's file
  kOpGraphKernelNodeAttribute = 208,    // cuGraphKernelNodeGet/SetAttribute
  kOpGraphMemAllocNodeGetParams = 209,  // a memory allocation node's parameters and access
  // Managed and mapped host memory (docs/managed-memory.md).
  kOpPagePush = 300,         // one-way: bytes the host changed, into device memory
  kOpPagePull = 301,         // device memory the host reads
  kOpHostRegister = 302,     // cuMemHostRegister: a mirror of client memory in the session
  kOpHostUnregister = 303,   // cuMemHostUnregister
  kOpMirrorPush = 304,       // one-way: bytes of registered memory the host changed
  kOpMirrorPull = 305,       // the bytes of registered memory the device changed
  kOpPagePullChanged = 306,  // the blocks of device memory that differ from the host's copy
  // 2D/3D copies, texture and surface objects (250-299).
  kOpMemcpy3D = 250,          // one box of a 2D/3D or host<->array copy
  kOpTexObjectCreate = 251,   // cuTexObjectCreate
  kOpSurfObjectCreate = 252,  // cuSurfObjectCreate
  kOpResourceDesc = 253,      // cuTex/SurfObjectGetResourceDesc
  // Device memory at addresses the client chooses (docs/protocol.md, "Device
  // memory"; 400-409).
  kOpVaReserve = 400,  // a range of device addresses for the client to place allocations in
  kOpVaMap = 401,      // one-way unless near capacity: device memory at a reserved address
  kOpVaFree = 402,     // one-way: waits for the context's work, then unmaps what kOpVaMap mapped
  kOpVaSync = 403,     // one-way: waits for the context's work (a small allocation was freed)
  // IPC between sessions of one server (docs/protocol.md, "IPC"; 410-419).
  kOpIpcExportMemory = 410,  // cuIpcGetMemHandle: a handle for device memory
  kOpIpcOpenMemory = 411,    // cuIpcOpenMemHandle: another session's memory, mapped here
  kOpShareableExport = 412,  // cuMemExportToShareableHandle / cuMemPoolExportToShareableHandle
  kOpShareableImport = 413,  // cuMemImportFromShareableHandle / cuMemPoolImportFromShareableHandle
  // The driver's error log (docs/protocol.md, "Driver logs"; 420-429).
  kOpLogsDump = 420,  // cuLogsDumpToMemory / cuLogsDumpToFile: the session's log lines
  kOpLogsRegister =
      421,              // cuLogsRegisterCallback: the driver's messages, over the callback channel
  kOpLogMessage = 422,  // on the callback channel: one message for a registered callback
  // Arrays of structs holding handles or pointers (430-449).
  kOpGraphBatchMemOpNodeGetParams =
      430,               // a batch memory operation node's parameters and operations
  kOpMemMapArray = 431,  // cuMemMapArrayAsync: sparse array mappings, their arrays as ids
  kOpMemBatchDecompress =
      432,  // cuMemBatchDecompressAsync: its result and error index, even on failure
  kOpAsyncNotificationRegister =
      433,  // cuDeviceRegisterAsyncNotification, over the callback channel
  kOpAsyncNotification =
      434,  // on the callback channel: one notification for a registered callback
  // Copies between the sessions of two servers (docs/protocol.md, "Copies
  // between servers"; 490-499).
  kOpPeerInbox = 490,    // the name and secret with which another server's session sends bytes here
  kOpPeerSend = 491,     // device memory's bytes, sent to another server's session
  kOpPeerReceive = 492,  // device memory written with the bytes another server's session sends
  kFirstGeneratedOp = 1000,
};

// A name for logs: the driver function of a generated op, else the
// hand-written op's own name.
const char* op_name(uint32_t op);

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

// function-names answers for at most this many functions or kernels.
constexpr uint32_t kMaxModuleFunctions = 1u << 16;

// Lanes (docs/protocol.md, "Lanes"): at most this many, and a copy's bytes
// cross them in stripes of this size, stripe i on lane i % lanes.
constexpr uint32_t kMaxLanes = 16;
constexpr size_t kLaneStripe = 4u << 20;

// Calls move(offset, length) for each stripe of a copy of `size` bytes that
// crosses lane `index` of `lanes`, in order, while it returns true.
template <class Move>
bool each_stripe(size_t index, uint32_t lanes, uint64_t size, Move&& move) {
  for (uint64_t at = index * kLaneStripe; at < size; at += uint64_t{lanes} * kLaneStripe)
    if (!move(at, static_cast<size_t>(std::min<uint64_t>(kLaneStripe, size - at)))) return false;
  return true;
}

// Which kind of object kOpResourceDesc asks about.
enum ResourceOwner : uint8_t {
  kTextureObject = 0,
  kSurfaceObject = 1,
};

// Each pointer attribute's value travels in this many bytes, zero padded.
constexpr uint32_t kPointerValueBytes = 16;

// Module and library loads name their image by its SHA-256, so that the
// server's cache can spare sending it (docs/protocol.md).
using ImageHash = std::array<uint8_t, 32>;
ImageHash image_hash(const void* data, size_t size);

// What follows the hash in a load request.
enum ImageSource : uint8_t {
  kImageFollows = 0,  // the image, as a blob
  kHashOnly = 1,      // nothing: the server finds the image by its hash
};

// The result of a hash-only load the server has no image for; the client then
// sends the image.
constexpr uint32_t kImageNotHeld = 301;  // CUDA_ERROR_FILE_NOT_FOUND

// A layout's count when the driver could not tell it (a kernel looked up
// before any context was current): the client asks again (function-info) at
// first launch.
constexpr uint32_t kUnknownLayout = 0xFFFFFFFFu;

// A kernel's parameters: (offset, size) of each, in order.
struct ParamSlot {
  uint64_t offset;
  uint64_t size;
};

}  // namespace scuda::protocol
