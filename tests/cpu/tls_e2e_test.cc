// End to end over TLS 1.3 (docs/protocol.md, "TLS"): the stand-in libcuda
// through a real `scuda server --tls-cert` to the driver test double, on
// loopback. Certificates are made at test time with `scuda cert` (OpenSSL's
// API), in a directory of the test's own; refusals are checked through
// client_tool and the CLI, whose messages a user would read.
#include <cuda.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <vector>

#include "common/socket.h"
#include "common/tls.h"
#include "lanes_opened.h"
#include "primary_context_test.h"
#include "protocol/ops.h"
#include "server_process.h"
#include "test_certs.h"

extern "C" int scuda_set_compression(const char* mode);
extern "C" uint64_t scuda_lane_bytes();

namespace scuda::test {
namespace {

// The certificates, and one TLS server that the in-process client library
// reaches (SCUDA_SERVER, SCUDA_TLS_CA), for every test of this binary.
struct World {
  std::string dir;
  Certs good, other, misnamed;
  ServerProcess* server = nullptr;
};
World g;

class TlsEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    char pattern[] = "/tmp/scuda-tls-test-XXXXXX";
    g.dir = mkdtemp(pattern);
    g.good = make_certs(g.dir, "good", {"127.0.0.1", "localhost"});
    g.other = make_certs(g.dir, "other", {"127.0.0.1"});
    g.misnamed = make_certs(g.dir, "misnamed", {"gpu.example"});
    g.server = new ServerProcess(tls_args(g.good));
    setenv("SCUDA_SERVER", ("tls://" + g.server->address()).c_str(), 1);
    setenv("SCUDA_TLS_CA", g.good.file("ca.pem").c_str(), 1);
  }
  void TearDown() override {
    delete g.server;
    std::filesystem::remove_all(g.dir);
  }
};

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new TlsEnvironment);

// client_tool's cuInit against `address`, with the environment given (an
// empty value unsets a TLS variable for the client).
Output init_at(const std::string& address, std::vector<std::string> env) {
  env.push_back("SCUDA_SERVER=" + address);
  env.push_back("SCUDA_CONNECT_RETRY=0");
  env.push_back("SCUDA_WAIT_TIMEOUT=0");
  return run_program({CLIENT_TOOL, "init"}, env);
}

std::vector<uint8_t> random_bytes(size_t size) {
  std::vector<uint8_t> v(size);
  std::mt19937_64 rng(7);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

class TlsSession : public PrimaryContextTest {};

// The lanes and the callback channel are connections of their own, each
// routed to the session in the clear and then run over TLS by it.
TEST_F(TlsSession, LargeCopiesCrossTheLanesAndHostCallbacksRun) {
  ASSERT_EQ(scuda_set_compression("off"), 0);
  const size_t size = 17 * protocol::kLaneStripe + 4321;  // every lane, one twice
  CUdeviceptr dev = 0;
  ASSERT_EQ(cuMemAlloc(&dev, size), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(scuda::test::open_lanes(dev, size));
  ASSERT_EQ(scuda_lanes_open(), 8u);  // TLS's default: twice plain TCP's
  // The smallest lane copies cross in stripes under 4 MiB, one or two a lane.
  for (const size_t n : {size_t{16} << 20, (size_t{16} << 20) + 4321, size}) {
    const std::vector<uint8_t> data = random_bytes(n);
    const uint64_t before = scuda_lane_bytes();
    ASSERT_EQ(cuMemcpyHtoD(dev, data.data(), n), CUDA_SUCCESS);
    std::vector<uint8_t> back(n);
    ASSERT_EQ(cuMemcpyDtoH(back.data(), dev, n), CUDA_SUCCESS);
    EXPECT_TRUE(back == data) << n;
    EXPECT_EQ(scuda_lane_bytes() - before, 2 * n);
  }

  static std::atomic<int> ran{0};
  static int five = 5;
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(
                stream, [](void* n) { ran += *static_cast<int*>(n); }, &five),
            CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_EQ(ran.load(), 5);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(dev), CUDA_SUCCESS);
}

TEST(Tls, OpensslSeesTls13) {
  const Output o =
      run_program({"/bin/sh", "-c",
                   "openssl s_client -connect " + g.server->address() + " -CAfile " +
                       g.good.file("ca.pem") + " -verify_return_error </dev/null 2>&1"});
  EXPECT_NE(o.out.find("TLSv1.3"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("Verify return code: 0 (ok)"), std::string::npos) << o.out;
}

// A TCP connection to the test's server; fails the test if there is none.
Socket connect_to_server() {
  HostPort hp;
  std::string error;
  EXPECT_TRUE(parse_host_port(g.server->address(), &hp, &error)) << error;
  Socket s = connect_tcp(hp, &error);
  EXPECT_TRUE(s.valid()) << error;
  return s;
}

// What a server's session does to reach another server for a copy: no CA,
// only the certificate the client saw there (tls::connect_pinned).
TEST(Tls, APinnedConnectionTakesOnlyTheCertificateSeen) {
  std::string error;
  const auto context = tls::client_context({g.good.file("ca.pem"), "", ""}, &error);
  ASSERT_TRUE(context) << error;
  Socket checked = connect_to_server();
  ASSERT_TRUE(tls::connect(checked, *context, "127.0.0.1", std::chrono::seconds(10), &error))
      << error;
  const std::string seen = checked.peer_certificate();
  ASSERT_EQ(seen.size(), 32u) << "a SHA-256 of the server's certificate";

  Socket pinned = connect_to_server();
  EXPECT_TRUE(tls::connect_pinned(pinned, seen, std::chrono::seconds(10), &error)) << error;
  EXPECT_TRUE(pinned.valid());

  std::string other = seen;
  other[0] = static_cast<char>(other[0] ^ 1);
  Socket refused = connect_to_server();
  EXPECT_FALSE(tls::connect_pinned(refused, other, std::chrono::seconds(10), &error));
  EXPECT_NE(error.find("not the one its client checked"), std::string::npos) << error;
  EXPECT_FALSE(refused.valid()) << "a connection to an unexpected certificate is closed";
}

TEST(Tls, PlainClientIsToldTheServerTakesTlsOnly) {
  const Output o = init_at(g.server->address(), {"SCUDA_TLS_CA="});
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.err.find("takes TLS connections only"), std::string::npos) << o.err;
}

TEST(Tls, TlsClientIsToldThePlainServerHasNoTls) {
  ServerProcess plain;
  const Output o = init_at("tls://" + plain.address(), {});
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.err.find("answered without TLS"), std::string::npos) << o.err;
}

TEST(Tls, AServerCertificateFromAnotherCaIsRefused) {
  const Output o =
      init_at("tls://" + g.server->address(), {"SCUDA_TLS_CA=" + g.other.file("ca.pem")});
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.err.find("certificate is not trusted"), std::string::npos) << o.err;
}

TEST(Tls, ACertificateForAnotherNameIsRefused) {
  ServerProcess server(tls_args(g.misnamed));
  const Output o =
      init_at("tls://" + server.address(), {"SCUDA_TLS_CA=" + g.misnamed.file("ca.pem")});
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.err.find("does not name '127.0.0.1'"), std::string::npos) << o.err;
}

TEST(Tls, MutualTlsTakesOnlyClientsWithACertificateFromItsCa) {
  std::vector<std::string> args = tls_args(g.good);
  args.insert(args.end(), {"--tls-client-ca", g.good.file("ca.pem")});
  ServerProcess server(args);
  const std::string at = "tls://" + server.address();
  const Output none = init_at(at, {});
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("requires a client certificate"), std::string::npos) << none.err;
  const Output foreign = init_at(at, {"SCUDA_TLS_CERT=" + g.other.file("client.pem"),
                                      "SCUDA_TLS_KEY=" + g.other.file("client.key")});
  EXPECT_NE(foreign.exit_code, 0) << foreign.out;
  const Output good = init_at(at, {"SCUDA_TLS_CERT=" + g.good.file("client.pem"),
                                   "SCUDA_TLS_KEY=" + g.good.file("client.key")});
  EXPECT_EQ(good.exit_code, 0) << good.out << good.err;
}

TEST(Tls, StatusCrossesTls) {
  const Output o = run_program({SCUDA_BIN, "status", "--server", "tls://" + g.server->address()});
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
}

// `scuda status` takes the CA as `scuda run` does, with no environment.
TEST(Tls, StatusTakesTheCaAsAFlag) {
  const std::string at = "tls://" + g.server->address();
  const Output foreign = run_program(
      {SCUDA_BIN, "status", "--server", at, "--tls-ca", g.other.file("ca.pem")}, {"SCUDA_TLS_CA="});
  EXPECT_NE(foreign.exit_code, 0);
  EXPECT_NE(foreign.err.find("certificate is not trusted"), std::string::npos) << foreign.err;
  const Output good = run_program(
      {SCUDA_BIN, "status", "--server", at, "--tls-ca", g.good.file("ca.pem")}, {"SCUDA_TLS_CA="});
  EXPECT_EQ(good.exit_code, 0) << good.out << good.err;
}

TEST(Tls, ANonLoopbackAddressNeedsTlsOrInsecure) {
  const std::string listen = "0.0.0.0:" + std::to_string(free_port());
  const Output o = run_program({SCUDA_BIN, "server", "-l", listen, "--driver", DOUBLE_LIB});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("refusing to listen on " + listen + " without TLS"), std::string::npos)
      << o.err;
  for (const char* flag : {"--tls-cert", "--tls-key", "--insecure"})
    EXPECT_NE(o.err.find(flag), std::string::npos) << flag << ": " << o.err;
}

}  // namespace
}  // namespace scuda::test
