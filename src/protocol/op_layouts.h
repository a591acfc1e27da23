// The bytes of hand-written ops, each described once (layout.h): the
// client writes a Request and reads a Reply with them, the server reads the
// Request and writes the Reply with them, and the tests build their frames
// from them. The op's code, name and way stay in op_list.h. Ops not yet
// here still spell their bytes out at both ends (docs/protocol.md).
#pragma once

#include <cuda.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "protocol/ipc_handle.h"
#include "protocol/layout.h"
#include "protocol/ops.h"

namespace scuda::protocol::op {

// Device memory of the current context's device, as cuMemGetInfo says.
struct MemoryInfo {
  uint64_t free = 0;
  uint64_t total = 0;
  auto fields() { return std::tie(free, total); }
};

// Where a join must go and what it must carry (callback channel, lanes).
struct JoinPoint {
  std::string name;
  std::string secret;
  auto fields() { return std::tie(name, secret); }
};

// A value the driver made that the client uses as it is (a texture or
// surface object).
struct ObjectValue {
  uint64_t object = 0;
  auto fields() { return std::tie(object); }
};

// A context on `device` with cuCtxCreate's flags and, when the program gave
// parameters (`has_params`), their execution affinities; bound to the
// client's id.
struct CtxCreate {
  static constexpr Op kOp = kOpCtxCreate;
  struct Affinity {
    uint32_t type = 0;  // CUexecAffinityType
    uint32_t sm_count = 0;
  };
  struct Request {
    uint64_t proposed = 0;
    uint32_t flags = 0;
    int32_t device = 0;
    uint8_t has_params = 0;
    std::vector<Affinity> affinity;  // at most kMaxCtxAffinityParams
    auto fields() { return std::tie(proposed, flags, device, has_params, affinity); }
  };
  struct Reply {
    uint64_t context = 0;
    auto fields() { return std::tie(context); }
  };
};

// A launch configuration: the function, the grid and block, the dynamic
// shared memory, the stream, `mode` (kCopyPerThread for the per-thread
// default stream) and the launch attributes (at most kMaxLaunchAttributes;
// event handles inside are client ids).
struct LaunchConfig {
  uint64_t function = 0;
  std::array<uint32_t, 6> dims{};  // grid x, y, z, block x, y, z
  uint32_t shared_memory = 0;
  uint64_t stream = 0;
  uint8_t mode = 0;
  std::vector<CUlaunchAttribute> attributes;
  auto fields() { return std::tie(function, dims, shared_memory, stream, mode, attributes); }
};

// One-way: a launch. The arguments, packed in the kernel's layout, follow the
// configuration as one blob, written and read apart so that neither end
// copies them into a struct.
struct Launch {
  static constexpr Op kOp = kOpLaunch;
  using Request = LaunchConfig;
  using Reply = Empty;
};

// cuOccupancyMaxActiveClusters (`which` 0) or
// cuOccupancyMaxPotentialClusterSize (1) of a launch configuration.
struct OccupancyClusters {
  static constexpr Op kOp = kOpOccupancyClusters;
  struct Request {
    uint8_t which = 0;
    LaunchConfig config;
    auto fields() { return std::tie(which, config); }
  };
  struct Reply {
    int32_t value = 0;
    auto fields() { return std::tie(value); }
  };
};

// One-way: the context the next requests run in.
struct CtxSetCurrent {
  static constexpr Op kOp = kOpCtxSetCurrent;
  struct Request {
    uint64_t context = 0;
    auto fields() { return std::tie(context); }
  };
  using Reply = Empty;
};

// A device's primary context, bound to the client's id, without retaining it.
struct PrimaryContext {
  static constexpr Op kOp = kOpPrimaryContext;
  struct Request {
    int32_t device = 0;
    uint64_t proposed = 0;
    auto fields() { return std::tie(device, proposed); }
  };
  struct Reply {
    uint64_t context = 0;
    auto fields() { return std::tie(context); }
  };
};

// Addresses of the current device the client places allocations in, at
// `hint` (0: where the driver likes).
struct VaReserve {
  static constexpr Op kOp = kOpVaReserve;
  struct Request {
    uint64_t hint = 0;
    auto fields() { return std::tie(hint); }
  };
  struct Reply {
    uint64_t base = 0;
    uint64_t size = 0;
    uint64_t granularity = 0;
    MemoryInfo memory;
    auto fields() { return std::tie(base, size, granularity, memory.free, memory.total); }
  };
};

// Memory at [address, address + size) of a reservation; answered (with the
// device's memory, also when the map failed) only when the client asks.
struct VaMap {
  static constexpr Op kOp = kOpVaMap;
  struct Request {
    uint64_t address = 0;
    uint64_t size = 0;
    auto fields() { return std::tie(address, size); }
  };
  using Reply = MemoryInfo;
};

// One-way: unmaps what a va-map mapped at `address`, after the context's work.
struct VaFree {
  static constexpr Op kOp = kOpVaFree;
  struct Request {
    uint64_t address = 0;
    auto fields() { return std::tie(address); }
  };
  using Reply = Empty;
};

// One-way: waits for the context's work.
struct VaSync {
  static constexpr Op kOp = kOpVaSync;
  using Request = Empty;
  using Reply = Empty;
};

// `wanted` lanes, each joining at the answer's join point.
struct Lanes {
  static constexpr Op kOp = kOpLanes;
  struct Request {
    uint32_t wanted = 0;
    auto fields() { return std::tie(wanted); }
  };
  using Reply = JoinPoint;
};

// The callback channel's join point.
struct CallbackChannel {
  static constexpr Op kOp = kOpCallbackChannel;
  using Request = Empty;
  using Reply = JoinPoint;
};

// A user object whose destructor the client runs (over the callback
// channel, as callback `callback`), bound to the client's id.
struct UserObjectCreate {
  static constexpr Op kOp = kOpUserObjectCreate;
  struct Request {
    uint64_t proposed = 0;
    uint64_t callback = 0;
    uint32_t references = 0;
    uint32_t flags = 0;
    auto fields() { return std::tie(proposed, callback, references, flags); }
  };
  struct Reply {
    uint64_t object = 0;
    auto fields() { return std::tie(object); }
  };
};

// The session's driver log lines from `iterator` (all of them without one),
// in at most `capacity` bytes.
struct LogsDump {
  static constexpr Op kOp = kOpLogsDump;
  struct Request {
    uint8_t has_iterator = 0;
    uint32_t iterator = 0;
    uint64_t capacity = 0;
    uint32_t flags = 0;
    auto fields() { return std::tie(has_iterator, iterator, capacity, flags); }
  };
  struct Reply {
    uint32_t iterator = 0;
    std::string lines;
    auto fields() { return std::tie(iterator, lines); }
  };
};

// Driver log messages to the client's callback `proposed`, over the
// callback channel.
struct LogsRegister {
  static constexpr Op kOp = kOpLogsRegister;
  struct Request {
    uint64_t proposed = 0;
    auto fields() { return std::tie(proposed); }
  };
  struct Reply {
    uint64_t handle = 0;
    auto fields() { return std::tie(handle); }
  };
};

// A mirror of the client's [address, address + size), registered with the
// driver; the device address it got (the client's own where it could).
struct HostRegister {
  static constexpr Op kOp = kOpHostRegister;
  struct Request {
    uint64_t address = 0;
    uint64_t size = 0;
    uint32_t flags = 0;
    auto fields() { return std::tie(address, size, flags); }
  };
  struct Reply {
    uint64_t device = 0;
    auto fields() { return std::tie(device); }
  };
};

// The mirror registered at `address`, unregistered and freed.
struct HostUnregister {
  static constexpr Op kOp = kOpHostUnregister;
  struct Request {
    uint64_t address = 0;
    auto fields() { return std::tie(address); }
  };
  using Reply = Empty;
};

// A handle's 64 bytes, the driver's or scuda's own (ipc_handle.h).
using IpcBytes = std::array<uint8_t, kIpcHandleBytes>;

// The handle another session opens `address`'s memory with.
struct IpcExportMemory {
  static constexpr Op kOp = kOpIpcExportMemory;
  struct Request {
    uint64_t address = 0;
    auto fields() { return std::tie(address); }
  };
  struct Reply {
    IpcBytes handle{};
    auto fields() { return std::tie(handle); }
  };
};

// Opens a handle: at `at`, which the client chose, for scuda's handles, or
// where the driver likes (at 0) for the driver's; the pointer it got.
struct IpcOpenMemory {
  static constexpr Op kOp = kOpIpcOpenMemory;
  struct Request {
    uint64_t at = 0;
    uint32_t flags = 0;
    IpcBytes handle{};
    auto fields() { return std::tie(at, flags, handle); }
  };
  struct Reply {
    uint64_t address = 0;
    auto fields() { return std::tie(address); }
  };
};

// An allocation handle or a pool's id (`kind`, IpcKind), exported: the bytes
// the client's stand-in descriptor holds.
struct ShareableExport {
  static constexpr Op kOp = kOpShareableExport;
  struct Request {
    uint8_t kind = 0;
    uint64_t handle = 0;
    auto fields() { return std::tie(kind, handle); }
  };
  using Reply = IpcExportMemory::Reply;
};

// A stand-in descriptor's bytes, imported: the allocation handle, or the
// pool's id (bound to `proposed`).
struct ShareableImport {
  static constexpr Op kOp = kOpShareableImport;
  struct Request {
    uint8_t kind = 0;
    IpcBytes handle{};
    uint64_t proposed = 0;
    auto fields() { return std::tie(kind, handle, proposed); }
  };
  struct Reply {
    uint64_t handle = 0;
    auto fields() { return std::tie(handle); }
  };
};

// The driver's asynchronous notifications of `device`, to the client's
// callback `proposed` over the callback channel.
struct AsyncNotificationRegister {
  static constexpr Op kOp = kOpAsyncNotificationRegister;
  struct Request {
    uint32_t device = 0;
    uint64_t proposed = 0;
    auto fields() { return std::tie(device, proposed); }
  };
  struct Reply {
    uint64_t handle = 0;
    auto fields() { return std::tie(handle); }
  };
};

// A kernel's parameters, each one's offset and size in order; none when the
// driver cannot tell (a kernel looked up before any context).
using ParamSlots = std::optional<std::vector<ParamSlot>>;

struct AttributeValue {
  int32_t attribute = 0;  // CUfunction_attribute
  int32_t value = 0;
};

// What the client packs a function's or kernel's launch arguments by and
// answers its attribute queries from: its parameters, and every attribute
// the driver answers for `device` (-1: a function's own, or a kernel's with
// no current context, which has none).
struct FunctionDescription {
  ParamSlots params;
  int32_t device = -1;
  std::vector<AttributeValue> attributes;
  auto fields() { return std::tie(params, device, attributes); }
};

// A function or kernel by name in module or library `owner`, bound to the
// client's id (which the client may have handed out before it reads the
// reply).
struct NameLookup {
  uint64_t proposed = 0;
  uint64_t owner = 0;
  std::string name;
  auto fields() { return std::tie(proposed, owner, name); }
};

struct ModuleGetFunction {
  static constexpr Op kOp = kOpModuleGetFunction;
  using Request = NameLookup;
  using Reply = FunctionDescription;
};

struct LibraryGetKernel {
  static constexpr Op kOp = kOpLibraryGetKernel;
  using Request = NameLookup;
  using Reply = FunctionDescription;
};

// A kernel's function in the current context, bound as a library kernel is.
struct KernelGetFunction {
  static constexpr Op kOp = kOpKernelGetFunction;
  struct Request {
    uint64_t proposed = 0;
    uint64_t kernel = 0;
    auto fields() { return std::tie(proposed, kernel); }
  };
  using Reply = FunctionDescription;
};

// A function's or kernel's description again, with a kernel's attributes
// for `device` (-1: the current context's), when its lookup's lacked what
// the client needs.
struct FunctionInfo {
  static constexpr Op kOp = kOpFunctionInfo;
  struct Request {
    uint64_t id = 0;
    int32_t device = -1;
    auto fields() { return std::tie(id, device); }
  };
  using Reply = FunctionDescription;
};

// The names of a module's functions (`library` 0) or a library's kernels,
// in the driver's order.
struct FunctionNames {
  static constexpr Op kOp = kOpFunctionNames;
  struct Request {
    uint8_t library = 0;
    uint64_t id = 0;
    auto fields() { return std::tie(library, id); }
  };
  struct Reply {
    std::vector<std::string> names;  // at most kMaxModuleFunctions
    auto fields() { return std::tie(names); }
  };
};

// A texture object. The resource names an array by the client's id; a
// linear or pitched resource's device pointer passes as it is.
struct TexObjectCreate {
  static constexpr Op kOp = kOpTexObjectCreate;
  struct Request {
    CUDA_RESOURCE_DESC resource{};
    CUDA_TEXTURE_DESC texture{};
    std::optional<CUDA_RESOURCE_VIEW_DESC> view;
    auto fields() { return std::tie(resource, texture, view); }
  };
  using Reply = ObjectValue;
};

// A surface object, its resource as a texture object's.
struct SurfObjectCreate {
  static constexpr Op kOp = kOpSurfObjectCreate;
  struct Request {
    CUDA_RESOURCE_DESC resource{};
    auto fields() { return std::tie(resource); }
  };
  using Reply = ObjectValue;
};

// The resource of a texture or surface object (`owner`, ResourceOwner),
// with arrays named by the client's ids.
struct ResourceDesc {
  static constexpr Op kOp = kOpResourceDesc;
  struct Request {
    uint8_t owner = 0;
    uint64_t object = 0;
    auto fields() { return std::tie(owner, object); }
  };
  struct Reply {
    CUDA_RESOURCE_DESC resource{};
    auto fields() { return std::tie(resource); }
  };
};

// The attributes of the memory at `address`, each value in
// kPointerValueBytes bytes, zero padded; handles among them (a context, a
// memory pool) as client ids.
struct PointerAttributes {
  static constexpr Op kOp = kOpPointerAttributes;
  using Value = std::array<uint8_t, kPointerValueBytes>;
  struct Request {
    uint64_t address = 0;
    std::vector<CUpointer_attribute> attributes;  // at most kMaxPointerAttributes
    auto fields() { return std::tie(address, attributes); }
  };
  struct Reply {
    std::vector<Value> values;  // one per attribute asked
    auto fields() { return std::tie(values); }
  };
};

// One-way: the client's host callback `callback` takes its place in
// `stream` (`mode`'s per-thread bit: the per-thread default stream).
struct HostCallback {
  static constexpr Op kOp = kOpHostCallback;
  struct Request {
    uint64_t stream = 0;
    uint8_t mode = 0;
    uint64_t callback = 0;
    auto fields() { return std::tie(stream, mode, callback); }
  };
  using Reply = Empty;
};

// A graph node, by the client's id.
struct NodeRequest {
  uint64_t node = 0;
  auto fields() { return std::tie(node); }
};

// A kernel node's launch attribute: set when the request carries a value
// (event handles inside as client ids), else read; a read's reply carries
// the value, a set's none.
struct GraphKernelNodeAttribute {
  static constexpr Op kOp = kOpGraphKernelNodeAttribute;
  struct Request {
    uint64_t node = 0;
    uint32_t attribute = 0;  // CUkernelNodeAttrID
    std::optional<CUlaunchAttributeValue> value;
    auto fields() { return std::tie(node, attribute, value); }
  };
  struct Reply {
    std::optional<CUlaunchAttributeValue> value;
    auto fields() { return std::tie(value); }
  };
};

// A graph node's parameters (add-node and both set-params): the driver's
// struct with its handles as the client's ids and its pointers zeroed, then
// what those pointers pointed to. Each list is empty unless the node's type
// has it, and then holds as many items as the struct's count says.
struct NodeParams {
  CUgraphNodeParams params{};
  std::string_view args;                          // a kernel's, packed by its layout
  std::vector<CUmemAccessDesc> access;            // an allocation's access descriptors
  std::vector<CUstreamBatchMemOpParams> mem_ops;  // a batch memory operation's
  std::vector<uint64_t> bodies;                   // a conditional's proposed body graphs, adding
  auto fields() { return std::tie(params, args, access, mem_ops, bodies); }
};

// A node added to `graph` after `deps` (with their edge data, as many, when
// present), bound to the id proposed; the reply names a conditional node's
// body graphs (the ids proposed) and an allocation node's address.
struct GraphAddNode {
  static constexpr Op kOp = kOpGraphAddNode;
  struct Request {
    uint64_t graph = 0;
    uint64_t proposed = 0;
    std::optional<std::vector<uint64_t>> deps;
    std::optional<std::vector<CUgraphEdgeData>> edges;
    NodeParams node;
    auto fields() { return std::tie(graph, proposed, deps, edges, node); }
  };
  struct Reply {
    uint64_t node = 0;
    std::vector<uint64_t> bodies;
    uint64_t address = 0;
    auto fields() { return std::tie(node, bodies, address); }
  };
};

// New parameters for a node of a graph.
struct GraphNodeSetParams {
  static constexpr Op kOp = kOpGraphNodeSetParams;
  struct Request {
    uint64_t node = 0;
    NodeParams params;
    auto fields() { return std::tie(node, params); }
  };
  using Reply = Empty;
};

// New parameters for a node's copy in an executable graph.
struct GraphExecNodeSetParams {
  static constexpr Op kOp = kOpGraphExecNodeSetParams;
  struct Request {
    uint64_t exec = 0;
    uint64_t node = 0;
    NodeParams params;
    auto fields() { return std::tie(exec, node, params); }
  };
  using Reply = Empty;
};

// A kernel node's parameters, handles as the client's ids (a function new
// to the session takes the id proposed) and pointers zeroed; its arguments
// packed by the kernel's layout (always present: an unknown one has no
// slots); and the function's name ("" when the driver has none), which the
// client may never have looked up.
struct GraphKernelNodeGetParams {
  static constexpr Op kOp = kOpGraphKernelNodeGetParams;
  struct Request {
    uint64_t node = 0;
    uint64_t proposed = 0;
    auto fields() { return std::tie(node, proposed); }
  };
  struct Reply {
    CUDA_KERNEL_NODE_PARAMS params{};
    std::string args;
    ParamSlots layout;
    std::string name;
    auto fields() { return std::tie(params, args, layout, name); }
  };
};

// A node's parameters by value, pointers zeroed, and the array they point
// to, which the client keeps for the pointer it returns.
template <class Params, class Item>
struct ParamsWithArray {
  Params params{};
  std::vector<Item> items;
  auto fields() { return std::tie(params, items); }
};

// A memory allocation node's parameters and access descriptors.
struct GraphMemAllocNodeGetParams {
  static constexpr Op kOp = kOpGraphMemAllocNodeGetParams;
  using Request = NodeRequest;
  using Reply = ParamsWithArray<CUDA_MEM_ALLOC_NODE_PARAMS, CUmemAccessDesc>;
};

// A batch memory operation node's parameters (its context as the client's
// id) and operations.
struct GraphBatchMemOpNodeGetParams {
  static constexpr Op kOp = kOpGraphBatchMemOpNodeGetParams;
  using Request = NodeRequest;
  using Reply = ParamsWithArray<CUDA_BATCH_MEM_OP_NODE_PARAMS, CUstreamBatchMemOpParams>;
};

// Sparse array mappings (cuMemMapArrayAsync) on `stream`, at most
// kMaxArrayMaps: each entry's array is the client's id, its memory handle
// the server's own value.
struct MemMapArray {
  static constexpr Op kOp = kOpMemMapArray;
  struct Request {
    uint8_t per_thread = 0;
    uint64_t stream = 0;
    std::vector<CUarrayMapInfo> maps;
    auto fields() { return std::tie(per_thread, stream, maps); }
  };
  using Reply = Empty;
};

// A decompression batch (cuMemBatchDecompressAsync) on `stream`, at most
// kMaxDecompressions entries of device addresses. The driver's result and
// the failing entry's index come in the reply, also when the batch failed.
struct MemBatchDecompress {
  static constexpr Op kOp = kOpMemBatchDecompress;
  struct Request {
    uint8_t per_thread = 0;
    uint64_t stream = 0;
    uint32_t flags = 0;
    uint8_t want_index = 0;
    std::vector<CUmemDecompressParams> params;
    auto fields() { return std::tie(per_thread, stream, flags, want_index, params); }
  };
  struct Reply {
    uint32_t result = 0;  // CUresult
    uint64_t index = 0;
    auto fields() { return std::tie(result, index); }
  };
};

// A graph's DOT text, as cuGraphDebugDotPrint writes it with `flags`; the
// client writes the file.
struct GraphDot {
  static constexpr Op kOp = kOpGraphDot;
  struct Request {
    uint64_t graph = 0;
    uint32_t flags = 0;
    auto fields() { return std::tie(graph, flags); }
  };
  struct Reply {
    std::string text;
    auto fields() { return std::tie(text); }
  };
};

// Instantiates `graph` with cuGraphInstantiateWithParams's flags and upload
// stream (`mode`: kCopyPerThread for the per-thread default stream); the
// executable graph and a node new to the session take the ids proposed. The
// reply comes also when the driver failed: its result and error node say why.
struct GraphInstantiate {
  static constexpr Op kOp = kOpGraphInstantiate;
  struct Request {
    uint64_t proposed = 0;
    uint64_t graph = 0;
    uint64_t flags = 0;
    uint64_t upload_stream = 0;
    uint8_t mode = 0;
    uint64_t proposed_node = 0;
    auto fields() { return std::tie(proposed, graph, flags, upload_stream, mode, proposed_node); }
  };
  struct Reply {
    uint64_t exec = 0;    // 0 when the driver failed
    uint32_t result = 0;  // CUgraphInstantiateResult
    uint64_t error_node = 0;
    auto fields() { return std::tie(exec, result, error_node); }
  };
};

// A stream's capture: its status, id and graph, and its dependency nodes
// when they fit the ids proposed for them (else only their count, and the
// client asks again with room for them). Graph and nodes new to the
// session take the ids proposed.
struct StreamCaptureInfo {
  static constexpr Op kOp = kOpStreamCaptureInfo;
  struct Request {
    uint64_t stream = 0;
    uint8_t mode = 0;  // kCopyPerThread: the per-thread default stream
    uint64_t proposed_graph = 0;
    std::vector<uint64_t> proposed_nodes;  // the room for dependencies
    auto fields() { return std::tie(stream, mode, proposed_graph, proposed_nodes); }
  };
  struct Reply {
    uint32_t status = 0;  // CUstreamCaptureStatus
    uint64_t id = 0;
    uint64_t graph = 0;
    uint64_t count = 0;           // the dependencies, also when they did not fit
    std::vector<uint64_t> nodes;  // empty when they did not fit
    std::optional<std::vector<CUgraphEdgeData>> edges;  // one per node, when the driver has them
    auto fields() { return std::tie(status, id, graph, count, nodes, edges); }
  };
};

// Updates executable graph `exec` from `graph`; nodes new to the session take
// the ids proposed. The reply comes also when the driver failed: the update's
// result and the nodes it names say why.
struct GraphExecUpdate {
  static constexpr Op kOp = kOpGraphExecUpdate;
  struct Request {
    uint64_t exec = 0;
    uint64_t graph = 0;
    uint64_t proposed_node = 0;
    uint64_t proposed_from_node = 0;
    auto fields() { return std::tie(exec, graph, proposed_node, proposed_from_node); }
  };
  struct Reply {
    uint32_t result = 0;  // CUgraphExecUpdateResult
    uint64_t error_node = 0;
    uint64_t error_from_node = 0;
    auto fields() { return std::tie(result, error_node, error_from_node); }
  };
};

// The join point where another server's session sends copies to this one.
struct PeerInbox {
  static constexpr Op kOp = kOpPeerInbox;
  using Request = Empty;
  using Reply = JoinPoint;
};

// Sends [src, src + size) of the current context's device, as copy `id`,
// to the session at `address` (with its token) through its inbox `inbox`;
// after the work queued before it.
struct PeerSend {
  static constexpr Op kOp = kOpPeerSend;
  struct Request {
    uint64_t src = 0;
    uint64_t size = 0;
    uint64_t id = 0;
    std::string address;
    std::string token;
    JoinPoint inbox;
    auto fields() { return std::tie(src, size, id, address, token, inbox.name, inbox.secret); }
  };
  using Reply = Empty;
};

// Waits for copy `id` from another session and writes its bytes to
// [dst, dst + size) of the current context's device.
struct PeerReceive {
  static constexpr Op kOp = kOpPeerReceive;
  struct Request {
    uint64_t dst = 0;
    uint64_t size = 0;
    uint64_t id = 0;
    auto fields() { return std::tie(dst, size, id); }
  };
  using Reply = Empty;
};

// JIT options as they cross: the driver's keys, and one number each (a log
// size, a count; options that name client memory never cross).
struct JitOptions {
  std::vector<uint32_t> keys;    // CUjit_option, at most kMaxJitOptions
  std::vector<uint64_t> values;  // one per key
  auto fields() { return std::tie(keys, values); }
};

// One input of a link: its bytes are read in place.
struct LinkInput {
  uint32_t type = 0;  // CUjitInputType
  std::string name;
  std::string_view data;
  JitOptions options;
  auto fields() { return std::tie(type, name, data, options); }
};

// A whole JIT link in one request (at most kMaxLinkInputs inputs): the
// session links with its driver and replies the image and the logs, also
// when the link failed (then `result` says why and the image is empty).
struct Link {
  static constexpr Op kOp = kOpLink;
  struct Request {
    JitOptions options;
    std::vector<LinkInput> inputs;
    auto fields() { return std::tie(options, inputs); }
  };
  struct Reply {
    uint32_t result = 0;  // CUresult of the link
    std::string image;
    std::string info_log;
    std::string error_log;
    uint32_t wall_ms = 0;  // CU_JIT_WALL_TIME, when asked
    auto fields() { return std::tie(result, image, info_log, error_log, wall_ms); }
  };
};

// An op whose request is `Req` and whose reply carries no outputs (its
// result alone, or bytes its handler writes itself).
template <Op kNumber, class Req>
struct NoOutputs {
  static constexpr Op kOp = kNumber;
  using Request = Req;
  using Reply = Empty;
};

// Bytes written at `address`, read in place (the data paths' requests).
struct DataAt {
  uint64_t address = 0;
  std::string_view bytes;
  auto fields() { return std::tie(address, bytes); }
};

// A window of `size` bytes (at most kChunkSize) at `address`.
struct Window {
  uint64_t address = 0;
  uint64_t size = 0;
  auto fields() { return std::tie(address, size); }
};

// Bytes the client's host changed in managed memory, into device memory at
// `address` (one-way).
struct PagePush : NoOutputs<kOpPagePush, DataAt> {};

// Device memory into the client's host pages: the reply carries the
// window's bytes as they are, after the result.
struct PagePull : NoOutputs<kOpPagePull, Window> {};

// The runs of a window of registered memory that the device changed: the
// reply holds (u64 address, blob) per run to its end, the layout the
// changes sent ahead of synchronizing replies share (docs/protocol.md).
struct MirrorPull {
  static constexpr Op kOp = kOpMirrorPull;
  using Request = Window;
};

// Bytes the client's host changed in registered memory, into its mirror in
// the session at the client's `address` (one-way).
struct MirrorPush : NoOutputs<kOpMirrorPush, DataAt> {};

// A chunk of a copy into device memory (at most kChunkSize bytes): the
// request is its head, and the bytes (or, with kCopyCompressed, their lz4
// block) follow as the frame's tail, which the handler reads itself.
struct MemcpyHtoD {
  static constexpr Op kOp = kOpMemcpyHtoD;
  struct Request {
    uint64_t dst = 0;
    uint64_t stream = 0;
    uint8_t mode = 0;   // kCopy* bits
    uint64_t size = 0;  // the bytes' raw length
    auto fields() { return std::tie(dst, stream, mode, size); }
  };
  using Reply = Empty;
  static constexpr uint32_t kHeadBytes = 8 + 8 + 1 + 8;
};
static_assert(min_wire_size<MemcpyHtoD::Request>() == MemcpyHtoD::kHeadBytes);

// A chunk of a copy out of device memory (at most kChunkSize bytes): the
// reply carries the bytes after the result (compressed pieces with
// kCopyCompressed), written by the handler as they come.
struct MemcpyDtoH {
  static constexpr Op kOp = kOpMemcpyDtoH;
  struct Request {
    uint64_t src = 0;
    uint64_t size = 0;
    uint64_t stream = 0;
    uint8_t mode = 0;
    auto fields() { return std::tie(src, size, stream, mode); }
  };
  using Reply = Empty;
};

// A copy whose bytes cross `lanes` lanes while its request keeps its place
// on the connection; mode is kCopyAsync, and kCopySettled one-way.
struct LaneCopy {
  uint64_t device = 0;
  uint64_t stream = 0;
  uint8_t mode = 0;
  uint64_t size = 0;
  uint32_t lanes = 0;
  auto fields() { return std::tie(device, stream, mode, size, lanes); }
};

struct MemcpyHtoDLanes : NoOutputs<kOpMemcpyHtoDLanes, LaneCopy> {};

struct MemcpyDtoHLanes : NoOutputs<kOpMemcpyDtoHLanes, LaneCopy> {};

// An image to load as a module or library, named by its SHA-256: sent
// with it, or without it, when the server's cache should hold it (else the
// load fails with kImageNotHeld and the client sends the image).
struct ImageLoad {
  uint64_t proposed = 0;
  ImageHash hash{};
  uint64_t size = 0;
  std::optional<std::string_view> image;
  auto fields() { return std::tie(proposed, hash, size, image); }
};

// The loaded object's id, and whether the server's cache holds the image
// now (so that later loads send its hash alone).
struct ImageLoaded {
  uint64_t id = 0;
  uint8_t cached = 0;
  auto fields() { return std::tie(id, cached); }
};

struct ModuleLoad {
  static constexpr Op kOp = kOpModuleLoad;
  using Request = ImageLoad;
  using Reply = ImageLoaded;
};

struct LibraryLoad {
  static constexpr Op kOp = kOpLibraryLoad;
  using Request = ImageLoad;
  using Reply = ImageLoaded;
};

}  // namespace scuda::protocol::op
