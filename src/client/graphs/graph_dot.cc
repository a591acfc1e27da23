// cuGraphDebugDotPrint: the session's driver writes the DOT text, and the
// file is written here, where the program named it.
#include <vector>

#include "client/program_files.h"
#include "client/runtime.h"
#include "custom.h"
#include "protocol/ops.h"

CUresult scuda::client::custom::cuGraphDebugDotPrint(CUgraph graph, const char* path,
                                                     unsigned int flags) {
  if (!graph || !path) return CUDA_ERROR_INVALID_VALUE;
  scuda::protocol::Writer w;
  w.u64(scuda::client::handle_id(graph));
  w.u32(flags);
  std::vector<uint8_t> reply;
  if (CUresult rc = scuda::client::call(scuda::protocol::kOpGraphDot, w, &reply);
      rc != CUDA_SUCCESS)
    return rc;
  scuda::protocol::Reader r(reply);
  const std::string_view text = r.blob();
  if (!r.done()) return scuda::client::bad_reply("cuGraphDebugDotPrint");
  return scuda::client::write_program_file(path, text, "cuGraphDebugDotPrint");
}
