// IPC between two client processes of one server (docs/protocol.md, "IPC"):
// this process exports memory, and ipc_tool, a client with a session of its
// own, opens it, checks what this process wrote, and writes into it; this
// process then sees that write. The double backs VMM memory with memfds, so
// the two session processes share bytes as two processes share a GPU's.
#include <cuda.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "ipc_pattern.h"
#include "primary_context_test.h"
#include "server_process.h"
#include "shared_server.h"

namespace {

constexpr size_t kMiB = size_t{1} << 20;

std::string hex(const void* data, size_t size) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < size; ++i) {
    const unsigned char b = static_cast<const unsigned char*>(data)[i];
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

std::vector<unsigned char> pattern(size_t size) {
  std::vector<unsigned char> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = scuda::test::ipc_pattern(i);
  return bytes;
}

scuda::test::Output run_tool(const std::string& scenario, const std::string& what, size_t size) {
  return scuda::test::run_program({IPC_TOOL, scenario, what, std::to_string(size)},
                                  {"SCUDA_SERVER=" + scuda::test::shared_server().address()});
}

class IpcTest : public scuda::test::PrimaryContextTest {
 protected:
  // Fills `size` bytes at p with the pattern.
  void fill(CUdeviceptr p, size_t size) {
    const auto bytes = pattern(size);
    ASSERT_EQ(cuMemcpyHtoD(p, bytes.data(), size), CUDA_SUCCESS);
  }
  // True when the other process's write is at p and the pattern after it.
  void expect_written(CUdeviceptr p, size_t size) {
    std::vector<unsigned char> bytes(size);
    ASSERT_EQ(cuMemcpyDtoH(bytes.data(), p, size), CUDA_SUCCESS);
    const auto expected = pattern(size);
    for (size_t i = 0; i < size; ++i) {
      const unsigned char want =
          i < scuda::test::kWrittenBytes ? scuda::test::kWritten : expected[i];
      ASSERT_EQ(bytes[i], want) << "byte " << i;
    }
  }
  void open_in_other_process(CUdeviceptr p, size_t size) {
    CUipcMemHandle handle;
    ASSERT_EQ(cuIpcGetMemHandle(&handle, p), CUDA_SUCCESS);
    const auto o = run_tool("open-memory", hex(&handle, sizeof handle), size);
    ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
    expect_written(p, size);
  }
};

TEST_F(IpcTest, PlacedAllocationIsSharedWithAnotherSession) {
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc(&p, 3 * kMiB), CUDA_SUCCESS);
  fill(p, 3 * kMiB);
  open_in_other_process(p, 3 * kMiB);
  EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
}

// A small allocation lies at an offset in a chunk: the handle keeps it.
TEST_F(IpcTest, SmallAllocationKeepsItsOffsetInItsChunk) {
  CUdeviceptr first = 0, second = 0;
  ASSERT_EQ(cuMemAlloc(&first, 4096), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&second, 4096), CUDA_SUCCESS);
  fill(second, 4096);
  open_in_other_process(second, 4096);
  EXPECT_EQ(cuMemFree(first), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(second), CUDA_SUCCESS);
}

// A handle whose secret is not the one given out opens nothing, and the
// exporting session goes on serving.
TEST_F(IpcTest, ForgedHandleIsRefused) {
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc(&p, 2 * kMiB), CUDA_SUCCESS);
  fill(p, 2 * kMiB);
  CUipcMemHandle handle;
  ASSERT_EQ(cuIpcGetMemHandle(&handle, p), CUDA_SUCCESS);
  handle.reserved[30] ^= 1;  // inside the secret
  const auto o = run_tool("open-memory", hex(&handle, sizeof handle), 2 * kMiB);
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.out.find("cuIpcOpenMemHandle: CUDA_ERROR_INVALID_HANDLE"), std::string::npos)
      << o.out << o.err;
  open_in_other_process(p, 2 * kMiB);
  EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
}

// cuMemExportToShareableHandle gives a descriptor the program can hand to
// another process, which imports and maps it.
TEST_F(IpcTest, ShareableHandleCrossesAsADescriptor) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  const size_t size = 2 * kMiB;
  CUmemGenericAllocationHandle memory = 0;
  ASSERT_EQ(cuMemCreate(&memory, size, &prop, 0), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAddressReserve(&p, size, 0, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(p, size, 0, memory, 0), CUDA_SUCCESS);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  ASSERT_EQ(cuMemSetAccess(p, size, &access, 1), CUDA_SUCCESS);
  fill(p, size);
  int fd = -1;
  ASSERT_EQ(cuMemExportToShareableHandle(&fd, memory, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_SUCCESS);
  ASSERT_GE(fd, 0);
  const auto o = run_tool("import-fd", std::to_string(fd), size);  // the child inherits fd
  close(fd);
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  expect_written(p, size);
  EXPECT_EQ(cuMemUnmap(p, size), CUDA_SUCCESS);
  EXPECT_EQ(cuMemRelease(memory), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAddressFree(p, size), CUDA_SUCCESS);
}

// A descriptor that is not one of scuda's stand-ins is refused on the client.
TEST_F(IpcTest, ForeignDescriptorIsRefused) {
  CUmemGenericAllocationHandle memory = 0;
  const int fd = memfd_create("not-a-stand-in", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  EXPECT_EQ(cuMemImportFromShareableHandle(&memory, reinterpret_cast<void*>(intptr_t{fd}),
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
            CUDA_ERROR_INVALID_VALUE);
  close(fd);
}

}  // namespace
