#include "client/module_functions.h"

#include <algorithm>
#include <string>

#include "client/runtime.h"
#include "protocol/ops.h"

namespace scuda::client {

CUresult module_functions(CUmodule mod, std::vector<CUfunction>* out) {
  protocol::Writer w;
  w.u64(handle_id(mod));
  std::vector<uint8_t> reply;
  if (CUresult rc = call(protocol::kOpModuleFunctionNames, w, &reply); rc != CUDA_SUCCESS) return rc;
  protocol::Reader r(reply);
  const uint32_t count = r.u32();
  if (count > protocol::kMaxModuleFunctions) return bad_reply("module-function-names");
  std::vector<std::string> names(count);
  for (std::string& name : names) name = r.str();
  if (!r.done()) return bad_reply("module-function-names");
  out->clear();
  for (const std::string& name : names) {
    CUfunction fn = nullptr;
    if (CUresult rc = cuModuleGetFunction(&fn, mod, name.c_str()); rc != CUDA_SUCCESS) return rc;
    out->push_back(fn);
  }
  return CUDA_SUCCESS;
}

}  // namespace scuda::client

extern "C" {

CUresult CUDAAPI cuModuleEnumerateFunctions(CUfunction* functions, unsigned int n, CUmodule mod) {
  SCUDA_PASSTHROUGH(cuModuleEnumerateFunctions, functions, n, mod);
  if (!functions || !mod) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUfunction> all;
  if (CUresult rc = scuda::client::module_functions(mod, &all); rc != CUDA_SUCCESS) return rc;
  std::copy_n(all.begin(), std::min<size_t>(n, all.size()), functions);
  return CUDA_SUCCESS;
}

}  // extern "C"
