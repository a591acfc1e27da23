// The second process of the IPC tests (ipc_e2e_test.cc): a client of its
// own, with a session of its own, that opens memory the test's process
// exported, checks it holds the test's pattern, and writes into it.
//   ipc_tool open-memory HANDLE_HEX SIZE   cuIpcOpenMemHandle
//   ipc_tool import-fd FD SIZE             cuMemImportFromShareableHandle, mapped
// Both check that byte i of the SIZE bytes is pattern(i), write kWritten to
// the first kWrittenBytes, and print the result of the first call that
// failed, or "ok". Exit 0 only on "ok".
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ipc_pattern.h"

namespace {

int report(const char* what, CUresult rc) {
  const char* name = nullptr;
  cuGetErrorName(rc, &name);
  std::printf("%s: %s\n", what, name ? name : "?");
  return 1;
}

bool from_hex(const char* hex, void* out, size_t size) {
  if (std::strlen(hex) != 2 * size) return false;
  auto* bytes = static_cast<unsigned char*>(out);
  for (size_t i = 0; i < size; ++i) bytes[i] = std::stoi(std::string(hex + 2 * i, 2), nullptr, 16);
  return true;
}

// Checks the pattern at p and leaves kWritten over its first bytes.
int check_and_write(CUdeviceptr p, size_t size) {
  std::vector<unsigned char> host(size);
  if (CUresult rc = cuMemcpyDtoH(host.data(), p, size)) return report("cuMemcpyDtoH", rc);
  for (size_t i = 0; i < size; ++i)
    if (host[i] != scuda::test::ipc_pattern(i)) {
      std::printf("byte %zu is %u, not the pattern's %u\n", i, host[i],
                  scuda::test::ipc_pattern(i));
      return 1;
    }
  if (CUresult rc = cuMemsetD8(p, scuda::test::kWritten, scuda::test::kWrittenBytes))
    return report("cuMemsetD8", rc);
  if (CUresult rc = cuCtxSynchronize()) return report("cuCtxSynchronize", rc);
  return 0;
}

int open_memory(const char* hex, size_t size) {
  CUipcMemHandle handle;
  if (!from_hex(hex, &handle, sizeof handle)) return 2;
  CUdeviceptr p = 0;
  if (CUresult rc = cuIpcOpenMemHandle(&p, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
    return report("cuIpcOpenMemHandle", rc);
  if (int failed = check_and_write(p, size)) return failed;
  if (CUresult rc = cuIpcCloseMemHandle(p)) return report("cuIpcCloseMemHandle", rc);
  return 0;
}

int import_fd(int fd, size_t size) {
  CUmemGenericAllocationHandle memory = 0;
  void* os_handle = reinterpret_cast<void*>(static_cast<intptr_t>(fd));
  if (CUresult rc = cuMemImportFromShareableHandle(&memory, os_handle,
                                                   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return report("cuMemImportFromShareableHandle", rc);
  CUdeviceptr p = 0;
  if (CUresult rc = cuMemAddressReserve(&p, size, 0, 0, 0))
    return report("cuMemAddressReserve", rc);
  if (CUresult rc = cuMemMap(p, size, 0, memory, 0)) return report("cuMemMap", rc);
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (CUresult rc = cuMemSetAccess(p, size, &access, 1)) return report("cuMemSetAccess", rc);
  if (int failed = check_and_write(p, size)) return failed;
  if (CUresult rc = cuMemUnmap(p, size)) return report("cuMemUnmap", rc);
  if (CUresult rc = cuMemRelease(memory)) return report("cuMemRelease", rc);
  if (CUresult rc = cuMemAddressFree(p, size)) return report("cuMemAddressFree", rc);
  return 0;
}

int run(const char* scenario, const char* what, size_t size) {
  CUdevice dev;
  CUcontext ctx;
  if (CUresult rc = cuInit(0)) return report("cuInit", rc);
  if (CUresult rc = cuDeviceGet(&dev, 0)) return report("cuDeviceGet", rc);
  if (CUresult rc = cuDevicePrimaryCtxRetain(&ctx, dev))
    return report("cuDevicePrimaryCtxRetain", rc);
  if (CUresult rc = cuCtxSetCurrent(ctx)) return report("cuCtxSetCurrent", rc);
  if (std::strcmp(scenario, "open-memory") == 0) return open_memory(what, size);
  if (std::strcmp(scenario, "import-fd") == 0) return import_fd(std::atoi(what), size);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const int failed = run(argv[1], argv[2], std::strtoull(argv[3], nullptr, 10));
  if (failed == 0) std::printf("ok\n");
  return failed;
}
