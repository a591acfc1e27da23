// End to end against the driver double: the JIT linker (cuLink*), whose
// inputs cross in one request at cuLinkComplete. Nothing here runs on a GPU.
#include <cuda.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "primary_context_test.h"
#include "shared_server.h"

namespace {

const char kFirst[] = "scuda-double-module\nkernel vadd 8 8 8 4\n";
const char kSecond[] = "scuda-double-module\nkernel fill 8 4 4\n";

class LinkerTest : public scuda::test::PrimaryContextTest {
 protected:
  void TearDown() override {
    if (state_) cuLinkDestroy(state_);
    PrimaryContextTest::TearDown();
  }
  CUlinkState state_ = nullptr;
};

// One input as data, one as a file of the client's; the image loads and
// holds both inputs' kernels; the logs and wall time reach the program.
TEST_F(LinkerTest, LinksDataAndClientFilesIntoALoadableImage) {
  char path[] = "/tmp/scuda-link-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, kSecond, sizeof kSecond - 1), static_cast<ssize_t>(sizeof kSecond - 1));
  close(fd);
  char info[64] = "unchanged", error[64] = "unchanged";
  CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER,  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_WALL_TIME,        CU_JIT_OPTIMIZATION_LEVEL};
  void* values[] = {info,    reinterpret_cast<void*>(sizeof info),
                    error,   reinterpret_cast<void*>(sizeof error),
                    nullptr, reinterpret_cast<void*>(3)};
  ASSERT_EQ(cuLinkCreate(6, options, values, &state_), CUDA_SUCCESS);
  ASSERT_EQ(cuLinkAddData(state_, CU_JIT_INPUT_PTX, const_cast<char*>(kFirst), sizeof kFirst,
                          "first", 0, nullptr, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(cuLinkAddFile(state_, CU_JIT_INPUT_PTX, path, 0, nullptr, nullptr), CUDA_SUCCESS);
  unlink(path);
  void* image = nullptr;
  size_t size = 0;
  ASSERT_EQ(cuLinkComplete(state_, &image, &size), CUDA_SUCCESS);
  EXPECT_STREQ(info, "linked 2 inputs");
  EXPECT_STREQ(error, "");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(values[1]), std::strlen("linked 2 inputs") + 1);
  float wall = 0;
  std::memcpy(&wall, &values[4], sizeof wall);
  EXPECT_EQ(wall, 1.5f);
  CUmodule module = nullptr;
  ASSERT_EQ(cuModuleLoadData(&module, image), CUDA_SUCCESS);
  CUfunction f = nullptr;
  EXPECT_EQ(cuModuleGetFunction(&f, module, "vadd"), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleGetFunction(&f, module, "fill"), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
}

// The driver's refusal comes back with its error log.
TEST_F(LinkerTest, ABadInputFailsWithTheDriversLog) {
  char error[128] = "unchanged";
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error, reinterpret_cast<void*>(sizeof error)};
  ASSERT_EQ(cuLinkCreate(2, options, values, &state_), CUDA_SUCCESS);
  char junk[] = "not an image";
  ASSERT_EQ(
      cuLinkAddData(state_, CU_JIT_INPUT_CUBIN, junk, sizeof junk, "junk", 0, nullptr, nullptr),
      CUDA_SUCCESS);
  void* image = nullptr;
  size_t size = 0;
  EXPECT_EQ(cuLinkComplete(state_, &image, &size), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_NE(std::string(error).find("junk"), std::string::npos) << error;
}

// Options that name arrays of client pointers cannot reach the driver.
TEST_F(LinkerTest, PointerArrayOptionsAreRefused) {
  const char* names[] = {"g"};
  CUjit_option options[] = {CU_JIT_GLOBAL_SYMBOL_NAMES};
  void* values[] = {names};
  EXPECT_EQ(cuLinkCreate(1, options, values, &state_), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(cuLinkAddFile(state_, CU_JIT_INPUT_PTX, "/nonexistent", 0, nullptr, nullptr),
            CUDA_ERROR_FILE_NOT_FOUND);
}

}  // namespace
