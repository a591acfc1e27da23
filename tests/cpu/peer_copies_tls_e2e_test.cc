// Copies between two servers that the client reaches over TLS
// (server/copies/peer_copies.h): the source's session reaches the destination over
// TLS too, checks that it shows the certificate the client's handshake saw
// there, and the bytes go from server to server, not through the client.
// Built a second time with SCUDA_TEST_PLAIN_SOURCE, the source server is
// reached over plain TCP: the request to it would carry the destination's
// token and secret in clear, so the copy goes through the client.
#include <cuda.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server_process.h"
#include "test_certs.h"

namespace scuda::test {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kCopy = 16 * kMiB;  // the least a client copies directly

struct World {
  std::string dir;
  Certs certs;
  ServerProcess* first = nullptr;
  ServerProcess* second = nullptr;
};
World g;

// Two TLS servers of one device each on the driver double, with one
// certificate, reached as tls:// addresses with its CA.
class TwoTlsServers : public ::testing::Environment {
 public:
  void SetUp() override {
    char pattern[] = "/tmp/scuda-peer-tls-test-XXXXXX";
    g.dir = mkdtemp(pattern);
    g.certs = make_certs(g.dir, "certs", {"127.0.0.1"});
    setenv("SCUDA_DOUBLE_DEVICES", "1", 1);
    g.second = new ServerProcess(tls_args(g.certs));
#ifdef SCUDA_TEST_PLAIN_SOURCE
    g.first = new ServerProcess();
    // No CA of scuda's own, so that the first server is reached without
    // TLS; OpenSSL's default trust comes from this file instead.
    setenv("SCUDA_SERVER", (g.first->address() + ",tls://" + g.second->address()).c_str(), 1);
    unsetenv("SCUDA_TLS_CA");
    setenv("SSL_CERT_FILE", g.certs.file("ca.pem").c_str(), 1);
#else
    g.first = new ServerProcess(tls_args(g.certs));
    setenv("SCUDA_SERVER",
           ("tls://" + g.first->address() + ",tls://" + g.second->address()).c_str(), 1);
    setenv("SCUDA_TLS_CA", g.certs.file("ca.pem").c_str(), 1);
#endif
    unsetenv("SCUDA_TLS_CERT");
    unsetenv("SCUDA_TLS_KEY");
    unsetenv("SCUDA_PEER_COPIES");
  }
  void TearDown() override {
    delete g.first;
    delete g.second;
    std::filesystem::remove_all(g.dir);
  }
};

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new TwoTlsServers);

// The bytes the sessions of the TLS server `server` received from their
// clients, from its status; none if the status could not be read.
std::optional<uint64_t> received_from_clients(const ServerProcess& server) {
  const Output o = run_program({SCUDA_BIN, "status", "--json", "--server",
                                "tls://" + server.address(), "--tls-ca", g.certs.file("ca.pem")});
  const nlohmann::json j = nlohmann::json::parse(o.out, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  uint64_t received = 0;
  for (const auto& session : j["sessions"]) received += session["bytes_received"].get<uint64_t>();
  return received;
}

std::vector<uint8_t> random_bytes(size_t size, unsigned seed) {
  std::vector<uint8_t> bytes(size);
  std::mt19937 random(seed);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(random());
  return bytes;
}

#ifdef SCUDA_TEST_PLAIN_SOURCE
TEST(PeerCopiesFromAPlainServerToATlsServer, GoThroughTheClient) {
#else
TEST(PeerCopiesBetweenTlsServers, GoFromServerToServer) {
#endif
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  int count = 0;
  ASSERT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  ASSERT_EQ(count, 2) << "one device on each server";
  CUcontext ctx[2] = {};
  CUdeviceptr buf[2] = {};
  for (CUdevice dev = 0; dev < 2; ++dev) {
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx[dev], dev), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(ctx[dev]), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAlloc(&buf[dev], kCopy), CUDA_SUCCESS);
    // Random, so that no copy on the client's connections shrinks with lz4.
    const std::vector<uint8_t> before = random_bytes(kCopy, 41 + dev);
    ASSERT_EQ(cuMemcpyHtoD(buf[dev], before.data(), kCopy), CUDA_SUCCESS);
  }
  const std::vector<uint8_t> bytes = random_bytes(kCopy, 43);
  ASSERT_EQ(cuCtxSetCurrent(ctx[0]), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoD(buf[0], bytes.data(), kCopy), CUDA_SUCCESS);

  const std::optional<uint64_t> before = received_from_clients(*g.second);
  ASSERT_TRUE(before) << "scuda status of the second server";
  ASSERT_EQ(cuMemcpyPeer(buf[1], ctx[1], buf[0], ctx[0], kCopy), CUDA_SUCCESS);
  // A staged copy's last piece goes one-way: the count waits for it.
  ASSERT_EQ(cuCtxSetCurrent(ctx[1]), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  const std::optional<uint64_t> after = received_from_clients(*g.second);
  ASSERT_TRUE(after) << "scuda status of the second server";
#ifdef SCUDA_TEST_PLAIN_SOURCE
  EXPECT_GE(*after - *before, kCopy) << "a copy from a plain server went server to server";
#else
  EXPECT_LT(*after - *before, kMiB) << "the second server got the copy from the client";
#endif

  ASSERT_EQ(cuCtxSetCurrent(ctx[1]), CUDA_SUCCESS);
  std::vector<uint8_t> arrived(kCopy);
  ASSERT_EQ(cuMemcpyDtoH(arrived.data(), buf[1], kCopy), CUDA_SUCCESS);
  EXPECT_EQ(arrived, bytes);
  EXPECT_EQ(g.second->log().find("TLS handshake of a join"), std::string::npos) << g.second->log();
  for (CUdevice dev = 0; dev < 2; ++dev) {
    cuCtxSetCurrent(ctx[dev]);
    EXPECT_EQ(cuMemFree(buf[dev]), CUDA_SUCCESS);
  }
  cuCtxSetCurrent(nullptr);
  for (CUdevice dev = 0; dev < 2; ++dev) cuDevicePrimaryCtxRelease(dev);
}

}  // namespace
}  // namespace scuda::test
