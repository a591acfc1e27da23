#include "stub_driver.h"

namespace scuda::fuzz {

namespace {

CUresult g_answer = CUDA_SUCCESS;

// One function per signature: the arguments are never looked at.
template <class F>
struct Stub;
template <class... A>
struct Stub<CUresult(CUDAAPI*)(A...)> {
  static CUresult CUDAAPI answer(A...) { return g_answer; }
};

}  // namespace

DriverTable stub_driver(CUresult answer) {
  g_answer = answer;
  DriverTable t;
#define SCUDA_DRIVER_FN(name, params, args) t.name = &Stub<decltype(t.name)>::answer;
#include "driver_api.inc"
#undef SCUDA_DRIVER_FN
  t.path = "fuzz stub driver";
  return t;
}

}  // namespace scuda::fuzz
