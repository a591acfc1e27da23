// cuGraphDebugDotPrint: the session's driver writes the DOT text, and the
// file is written here, where the program named it.
#include <string_view>

#include "client/op_calls.h"
#include "client/program_files.h"
#include "client/runtime.h"
#include "custom.h"
#include "protocol/op_layouts.h"

CUresult scuda::client::custom::cuGraphDebugDotPrint(CUgraph graph, const char* path,
                                                     unsigned int flags) {
  if (!graph || !path) return CUDA_ERROR_INVALID_VALUE;
  scuda::protocol::op::GraphDot::Reply reply;
  if (CUresult rc = scuda::client::ask<scuda::protocol::op::GraphDot>(
          {scuda::client::handle_id(graph), flags}, &reply);
      rc != CUDA_SUCCESS)
    return rc;
  const std::string_view text = reply.text;
  return scuda::client::write_program_file(path, text, "cuGraphDebugDotPrint");
}
