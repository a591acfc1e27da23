// A large module image uploaded through a slow link tells the user how its
// upload goes; a fast one says nothing. Real client and server processes,
// with the link emulator between them.
#include <gtest/gtest.h>

#include <string>

#include "server_process.h"

namespace scuda {
namespace {

using test::Output;
using test::ServerProcess;

constexpr char kLoaded[] = "cuModuleGetFunction: CUDA_SUCCESS\n";

// 48 MiB at 20 MB/s, with a link that holds only a megabyte: the sockets'
// buffers on the way hold a few megabytes more, and the client's writes
// follow the link's pace for the rest, about 2 s.
TEST(UploadProgress, ALargeImageBehindASlowLinkSaysHowItsUploadGoes) {
  ServerProcess server;
  Output o;
  {
    test::SlowLink link(LINK_BIN, server, {"--gbit", "0.16", "--queue-mib", "1"});
    o = test::run_program({CLIENT_TOOL, "load-module", "48"},
                          {"SCUDA_SERVER=" + link.address(), "SCUDA_CONNECT_RETRY=5"});
  }
  EXPECT_EQ(o.out, kLoaded) << o.err;
  EXPECT_NE(o.err.find("uploading a module image (48 MiB) to 127.0.0.1:"), std::string::npos)
      << o.err;
  EXPECT_NE(o.err.find(" of 48 MiB ("), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("uploaded a module image (48 MiB) to 127.0.0.1:"), std::string::npos)
      << o.err;
}

TEST(UploadProgress, AnUploadThatEndsWithinASecondSaysNothing) {
  ServerProcess server;
  const Output o =
      test::run_program({CLIENT_TOOL, "load-module", "12"}, {"SCUDA_SERVER=" + server.address()});
  EXPECT_EQ(o.out, kLoaded) << o.err;
  EXPECT_EQ(o.err.find("upload"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace scuda
