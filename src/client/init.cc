// cuInit opens the session with the server; the driver version is the
// server's, since that is the driver doing the work.
#include "client/runtime.h"
#include "client/transport/session.h"
#include "custom.h"

// Lets the server (and anyone else) tell a scuda stand-in from NVIDIA's driver.
extern "C" __attribute__((visibility("default"))) const char scuda_stand_in_marker[] = "scuda";

CUresult scuda::client::custom::cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return scuda::client::open_session();
}

CUresult scuda::client::custom::cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  // Before cuInit the driver still answers; so do we, with our headers'.
  *version = scuda::client::connection() ? scuda::client::snapshot().driver_version : CUDA_VERSION;
  return CUDA_SUCCESS;
}
