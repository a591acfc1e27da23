// Every hand-written op, once: its code, its name in logs and stats, and
// which way it travels. ops.h makes the Op enum of it, ops.cc the names and
// ways, and the server refuses an answered op sent one-way
// (server/session/session.cc). Generated ops come from codegen/ (api_ops.h).
//
// X(enumerator, code, "name", way), where way is one of
//   kAnswered   the client waits for a reply (at once or later);
//   kOneWay     the client expects none, and learns of a failure at its next
//               synchronizing call (the server answers a request that asks);
//   kEither     the request's flags say;
//   kHandshake  a connection's first frame, before any session op;
//   kToClient   sent by the server, on the main connection or the callback
//               channel, never by the client;
//   kOnChannel  sent either way on a channel of its own (the live mirrors'),
//               never on the main connection.
// A code appears once: a row that repeats one fails the build (ops.cc).
#pragma once

// clang-format off
#define SCUDA_HAND_WRITTEN_OPS(X)                                                               \
  X(kOpHello, 1, "hello", kHandshake)                    /* the session's first frame */        \
  X(kOpCtxSetCurrent, 2, "ctx-set-current", kOneWay)     /* a client thread's context */        \
  X(kOpMemcpyHtoD, 3, "memcpy-htod", kEither)            /* a host-to-device copy's chunk */    \
  X(kOpMemcpyDtoH, 4, "memcpy-dtoh", kAnswered)          /* a device-to-host copy's chunk */    \
  X(kOpModuleLoad, 5, "module-load", kEither)            /* an image, or only its hash */       \
  X(kOpLibraryLoad, 6, "library-load", kEither)          /* an image, or only its hash */       \
  X(kOpModuleGetFunction, 7, "module-get-function", kAnswered) /* and its description */        \
  X(kOpLibraryGetKernel, 8, "library-get-kernel", kAnswered)   /* under a client-chosen id */   \
  X(kOpKernelGetFunction, 9, "kernel-get-function", kAnswered) /* under a client-chosen id */   \
  X(kOpPrimaryContext, 10, "primary-context", kAnswered) /* without retaining it */             \
  X(kOpCtxCreate, 11, "ctx-create", kAnswered)           /* with execution affinity */          \
  X(kOpLaunch, 12, "launch", kOneWay)                    /* cuLaunchKernel(Ex) */               \
  X(kOpOccupancyClusters, 13, "occupancy-clusters", kAnswered)                                  \
  X(kOpPointerAttributes, 14, "pointer-attributes", kAnswered)                                  \
  X(kOpFunctionInfo, 15, "function-info", kAnswered)     /* when a lookup's lacks it */         \
  X(kOpHostCallback, 16, "host-callback", kOneWay)       /* its place in a stream */            \
  X(kOpCallbackChannel, 17, "callback-channel", kAnswered) /* the channel's name and secret */  \
  X(kOpLanes, 18, "lanes", kAnswered)                    /* the lanes' name and secret */       \
  X(kOpMemcpyHtoDLanes, 19, "memcpy-htod-lanes", kEither) /* bytes over the lanes */            \
  X(kOpMemcpyDtoHLanes, 20, "memcpy-dtoh-lanes", kEither) /* bytes over the lanes */            \
  X(kOpLink, 21, "link", kAnswered)                      /* the JIT linker, all inputs */       \
  X(kOpFunctionNames, 22, "function-names", kAnswered)   /* a module's or library's */          \
  X(kOpUserObjectCreate, 23, "user-object-create", kAnswered) /* destructor on the client */    \
  X(kOpStatus, 24, "status", kHandshake)                 /* `scuda status`, no session */       \
  X(kOpTokenDrop, 25, "token-drop", kHandshake)          /* a job's token, at its end */        \
  /* Graphs and stream capture (docs/protocol.md, "Graphs"). */                                 \
  X(kOpGraphAddNode, 200, "graph-add-node", kAnswered)                                          \
  X(kOpGraphNodeSetParams, 201, "graph-node-set-params", kAnswered)                             \
  X(kOpGraphExecNodeSetParams, 202, "graph-exec-node-set-params", kAnswered)                    \
  X(kOpGraphKernelNodeGetParams, 203, "graph-kernel-node-get-params", kAnswered)                \
  X(kOpGraphInstantiate, 204, "graph-instantiate", kAnswered)                                   \
  X(kOpGraphExecUpdate, 205, "graph-exec-update", kAnswered)                                    \
  X(kOpStreamCaptureInfo, 206, "stream-capture-info", kAnswered)                                \
  X(kOpGraphDot, 207, "graph-dot", kAnswered)            /* the DOT text, for the client */     \
  X(kOpGraphKernelNodeAttribute, 208, "graph-kernel-node-attribute", kAnswered)                 \
  X(kOpGraphMemAllocNodeGetParams, 209, "graph-mem-alloc-node-get-params", kAnswered)           \
  /* 2D/3D copies, texture and surface objects. */                                              \
  X(kOpMemcpy3D, 250, "memcpy-3d", kEither)              /* one box of a 2D/3D copy */          \
  X(kOpTexObjectCreate, 251, "tex-object-create", kAnswered)                                    \
  X(kOpSurfObjectCreate, 252, "surf-object-create", kAnswered)                                  \
  X(kOpResourceDesc, 253, "resource-desc", kAnswered)                                           \
  /* Managed and mapped host memory (docs/managed-memory.md). */                                \
  X(kOpPagePush, 300, "page-push", kOneWay)              /* bytes the host changed */           \
  X(kOpPagePull, 301, "page-pull", kAnswered)            /* device memory the host reads */     \
  X(kOpHostRegister, 302, "host-register", kAnswered)    /* a mirror of client memory */        \
  X(kOpHostUnregister, 303, "host-unregister", kAnswered)                                       \
  X(kOpMirrorPush, 304, "mirror-push", kOneWay)          /* registered bytes the host changed */\
  X(kOpMirrorPull, 305, "mirror-pull", kAnswered)        /* registered bytes the device changed */\
  X(kOpPagePullChanged, 306, "page-pull-changed", kAnswered) /* blocks unlike the host's */     \
  X(kOpLiveChannel, 307, "live-channel", kAnswered)     /* live mirrors' join point */         \
  X(kOpLiveChanges, 308, "live-changes", kOnChannel)    /* live mirrors' words, either way */  \
  /* Device memory at addresses the client chooses (docs/protocol.md). */                       \
  X(kOpVaReserve, 400, "va-reserve", kAnswered)          /* addresses to place allocations */   \
  X(kOpVaMap, 401, "va-map", kEither)                    /* answered only near capacity */      \
  X(kOpVaFree, 402, "va-free", kOneWay)                  /* after the context's work */         \
  X(kOpVaSync, 403, "va-sync", kOneWay)                  /* waits for the context's work */     \
  /* IPC between sessions of one server (docs/protocol.md, "IPC"). */                           \
  X(kOpIpcExportMemory, 410, "ipc-export-memory", kAnswered)                                    \
  X(kOpIpcOpenMemory, 411, "ipc-open-memory", kAnswered)                                        \
  X(kOpShareableExport, 412, "shareable-export", kAnswered)                                     \
  X(kOpShareableImport, 413, "shareable-import", kAnswered)                                     \
  /* The driver's error log (docs/protocol.md, "Driver logs"). */                               \
  X(kOpLogsDump, 420, "logs-dump", kAnswered)            /* the session's log lines */          \
  X(kOpLogsRegister, 421, "logs-register", kAnswered)    /* messages over the callback channel */\
  X(kOpLogMessage, 422, "log-message", kToClient)        /* one message, on the channel */      \
  /* Arrays of structs holding handles or pointers. */                                          \
  X(kOpGraphBatchMemOpNodeGetParams, 430, "graph-batch-mem-op-node-get-params", kAnswered)      \
  X(kOpMemMapArray, 431, "mem-map-array", kAnswered)     /* sparse array mappings */            \
  X(kOpMemBatchDecompress, 432, "mem-batch-decompress", kAnswered) /* even on failure */        \
  X(kOpAsyncNotificationRegister, 433, "async-notification-register", kAnswered)                \
  X(kOpAsyncNotification, 434, "async-notification", kToClient) /* one, on the channel */       \
  /* A join's first frame, in the clear ahead of any TLS (docs/protocol.md, "TLS"). */          \
  X(kOpJoinRoute, 450, "join-route", kHandshake)                                                \
  /* A HELLO's place in the admission queue (docs/protocol.md, "Admission queue"). */           \
  X(kOpQueuePosition, 470, "queue-position", kToClient)                                         \
  /* Copies between the sessions of two servers (docs/protocol.md). */                          \
  X(kOpPeerInbox, 490, "peer-inbox", kAnswered)          /* where another session sends */      \
  X(kOpPeerSend, 491, "peer-send", kAnswered)            /* bytes to another server's session */\
  X(kOpPeerReceive, 492, "peer-receive", kAnswered)      /* bytes another session sends */
// clang-format on
