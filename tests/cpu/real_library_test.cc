// The server and the pass-through client look for NVIDIA's libraries by name;
// scuda's own stand-ins share those names and must be skipped.
#include "common/real_library.h"

#include <gtest/gtest.h>

#include <string>

namespace scuda {
namespace {

TEST(RealLibrary, StandInsAreRecognisedAndSkipped) {
  for (const char* stand_in : {CUDA_STAND_IN, NVML_STAND_IN}) {
    std::string opened, tried;
    const char* const candidates[] = {stand_in};
    EXPECT_EQ(open_real_library("", candidates, &opened, &tried), nullptr) << stand_in;
    EXPECT_NE(tried.find("scuda stand-in"), std::string::npos) << tried;
  }
}

TEST(RealLibrary, OtherLibrariesLoad) {
  std::string opened, tried;
  const char* const candidates[] = {"/nonexistent/libcuda.so.1", DOUBLE_LIB};
  EXPECT_NE(open_real_library("", candidates, &opened, &tried), nullptr) << tried;
  EXPECT_EQ(opened, DOUBLE_LIB);
}

}  // namespace
}  // namespace scuda
