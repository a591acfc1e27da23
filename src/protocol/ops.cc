#include "protocol/ops.h"

// The one-shot SHA256() of OpenSSL 3 goes through EVP and its providers,
// which would pull megabytes into the static client library; the deprecated
// low-level calls pull in only the hash.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

namespace scuda::protocol {

const char* op_name(uint32_t op) {
  switch (op) {
    case kOpHello: return "hello";
    case kOpCtxSetCurrent: return "ctx-set-current";
    case kOpMemcpyHtoD: return "memcpy-htod";
    case kOpMemcpyDtoH: return "memcpy-dtoh";
    case kOpModuleLoad: return "module-load";
    case kOpLibraryLoad: return "library-load";
    case kOpModuleGetFunction: return "module-get-function";
    case kOpLibraryGetKernel: return "library-get-kernel";
    case kOpKernelGetFunction: return "kernel-get-function";
    case kOpPrimaryContext: return "primary-context";
    case kOpCtxCreate: return "ctx-create";
    case kOpLaunch: return "launch";
    case kOpOccupancyClusters: return "occupancy-clusters";
    case kOpPointerAttributes: return "pointer-attributes";
    case kOpFunctionInfo: return "function-info";
    case kOpHostCallback: return "host-callback";
    case kOpCallbackChannel: return "callback-channel";
    case kOpJoinRoute: return "join-route";
    case kOpQueuePosition: return "queue-position";
    case kOpLanes: return "lanes";
    case kOpMemcpyHtoDLanes: return "memcpy-htod-lanes";
    case kOpMemcpyDtoHLanes: return "memcpy-dtoh-lanes";
    case kOpLink: return "link";
    case kOpFunctionNames: return "function-names";
    case kOpUserObjectCreate: return "user-object-create";
    case kOpGraphAddNode: return "graph-add-node";
    case kOpGraphNodeSetParams: return "graph-node-set-params";
    case kOpGraphExecNodeSetParams: return "graph-exec-node-set-params";
    case kOpGraphKernelNodeGetParams: return "graph-kernel-node-get-params";
    case kOpGraphInstantiate: return "graph-instantiate";
    case kOpGraphExecUpdate: return "graph-exec-update";
    case kOpStreamCaptureInfo: return "stream-capture-info";
    case kOpGraphDot: return "graph-dot";
    case kOpGraphKernelNodeAttribute: return "graph-kernel-node-attribute";
    case kOpGraphMemAllocNodeGetParams: return "graph-mem-alloc-node-get-params";
    case kOpPagePush: return "page-push";
    case kOpPagePull: return "page-pull";
    case kOpHostRegister: return "host-register";
    case kOpHostUnregister: return "host-unregister";
    case kOpMirrorPush: return "mirror-push";
    case kOpMirrorPull: return "mirror-pull";
    case kOpPagePullChanged: return "page-pull-changed";
    case kOpMemcpy3D: return "memcpy-3d";
    case kOpTexObjectCreate: return "tex-object-create";
    case kOpSurfObjectCreate: return "surf-object-create";
    case kOpResourceDesc: return "resource-desc";
    case kOpVaReserve: return "va-reserve";
    case kOpVaMap: return "va-map";
    case kOpVaFree: return "va-free";
    case kOpVaSync: return "va-sync";
    case kOpPeerInbox: return "peer-inbox";
    case kOpPeerSend: return "peer-send";
    case kOpPeerReceive: return "peer-receive";
    case kOpIpcExportMemory: return "ipc-export-memory";
    case kOpIpcOpenMemory: return "ipc-open-memory";
    case kOpShareableExport: return "shareable-export";
    case kOpShareableImport: return "shareable-import";
    case kOpLogsDump: return "logs-dump";
    case kOpLogsRegister: return "logs-register";
    case kOpLogMessage: return "log-message";
    case kOpGraphBatchMemOpNodeGetParams: return "graph-batch-mem-op-node-get-params";
    case kOpMemMapArray: return "mem-map-array";
    case kOpMemBatchDecompress: return "mem-batch-decompress";
    case kOpAsyncNotificationRegister: return "async-notification-register";
    case kOpAsyncNotification: return "async-notification";
  }
  const char* name = generated_op_name(op);
  if (!name) name = nvml_op_name(op);
  return name ? name : "unknown";
}

ImageHash image_hash(const void* data, size_t size) {
  ImageHash hash;
  SHA256_CTX ctx;
  SHA256_Init(&ctx);
  SHA256_Update(&ctx, data, size);
  SHA256_Final(hash.data(), &ctx);
  return hash;
}

}  // namespace scuda::protocol
