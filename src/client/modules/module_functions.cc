#include "client/modules/module_functions.h"

#include <algorithm>
#include <string>

#include "client/modules/library_loads.h"
#include "client/op_calls.h"
#include "client/runtime.h"
#include "custom.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

// The names the session gives for a module's functions or a library's kernels.
CUresult names_of(bool library, uint64_t id, std::vector<std::string>* names) {
  protocol::op::FunctionNames::Reply reply;
  const CUresult rc = ask<protocol::op::FunctionNames>({library, id}, &reply);
  if (rc != CUDA_SUCCESS) return rc;
  if (reply.names.size() > protocol::kMaxModuleFunctions) return bad_reply("function-names");
  *names = std::move(reply.names);
  return CUDA_SUCCESS;
}

// Each name looked up with `get` (cuModuleGetFunction or cuLibraryGetKernel).
template <class Owner, class Item>
CUresult look_up_all(Owner owner, bool library, CUresult (*get)(Item*, Owner, const char*),
                     std::vector<Item>* out) {
  std::vector<std::string> names;
  if (CUresult rc = names_of(library, handle_id(owner), &names); rc != CUDA_SUCCESS) return rc;
  out->clear();
  for (const std::string& name : names) {
    Item item = nullptr;
    if (CUresult rc = get(&item, owner, name.c_str()); rc != CUDA_SUCCESS) return rc;
    out->push_back(item);
  }
  return CUDA_SUCCESS;
}

}  // namespace

CUresult module_functions(CUmodule mod, std::vector<CUfunction>* out) {
  return look_up_all(mod, false, &cuModuleGetFunction, out);
}

CUresult library_kernels(CUlibrary library, std::vector<CUkernel>* out) {
  if (CUresult rc = library_ready(handle_id(library)); rc != CUDA_SUCCESS) return rc;
  return look_up_all(library, true, &cuLibraryGetKernel, out);
}

}  // namespace scuda::client

namespace {

// Fills `out` with at most `n` of what `all_of` finds in `owner`.
template <class Owner, class Item>
CUresult enumerate(Item* out, unsigned n, Owner owner,
                   CUresult (*all_of)(Owner, std::vector<Item>*)) {
  if (!out || !owner) return CUDA_ERROR_INVALID_VALUE;
  std::vector<Item> all;
  if (CUresult rc = all_of(owner, &all); rc != CUDA_SUCCESS) return rc;
  std::copy_n(all.begin(), std::min<size_t>(n, all.size()), out);
  return CUDA_SUCCESS;
}

}  // namespace

CUresult scuda::client::custom::cuModuleEnumerateFunctions(CUfunction* functions, unsigned int n,
                                                           CUmodule mod) {
  return enumerate(functions, n, mod, &scuda::client::module_functions);
}

CUresult scuda::client::custom::cuLibraryEnumerateKernels(CUkernel* kernels, unsigned int n,
                                                          CUlibrary library) {
  return enumerate(kernels, n, library, &scuda::client::library_kernels);
}
