// Sessions seen from outside: handshakes, refusals, malformed frames and
// clients that die, each against a real `scuda server` with the test double.
#include <cuda.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/compression.h"
#include "common/socket.h"
#include "protocol/copy_desc.h"
#include "protocol/frame_io.h"
#include "protocol/handshake.h"
#include "protocol/op_layouts.h"
#include "protocol/ops.h"
#include "server_process.h"

namespace scuda {
namespace {

using test::all_ended;
using test::Child;
using test::children_of;
using test::Output;
using test::ServerProcess;

std::string write_token(const std::string& name, const std::string& token) {
  const std::string path = "/tmp/scuda-test-" + std::to_string(getpid()) + "-" + name;
  std::ofstream(path) << token << "\n";
  return path;
}

Output client(const ServerProcess& s, const std::string& scenario,
              std::vector<std::string> env = {}) {
  env.push_back("SCUDA_SERVER=" + s.address());
  return test::run_program({CLIENT_TOOL, scenario}, env);
}

Socket raw_connect(const ServerProcess& s) {
  HostPort hp;
  std::string error;
  parse_host_port(s.address(), &hp, &error);
  return connect_tcp(hp, &error);
}

// Sends a frame and returns the server's answer (an error message if it
// refused), or "" when the connection closed without one.
std::string exchange(Socket& sock, protocol::FrameHeader h, const protocol::Writer& w) {
  protocol::write_frame(sock, h, w.data().data(), w.size());
  protocol::Frame f;
  std::string error;
  if (read_frame(sock, &f, &error) != protocol::ReadStatus::kOk) return "";
  return std::string(f.payload.begin(), f.payload.end());
}

std::string hello(Socket& sock, protocol::Hello h) {
  protocol::Writer w;
  protocol::encode(h, w);
  protocol::FrameHeader fh;
  fh.op = protocol::kOpHello;
  return exchange(sock, fh, w);
}

protocol::Hello good_hello() { return {protocol::kApiHash, CUDA_VERSION, "", "session_test"}; }

// True once the server has closed its end (a reset counts: unread bytes of
// ours may still have been in its buffer).
bool closed_by_server(Socket& sock) {
  char byte;
  return read(sock.fd(), &byte, 1) <= 0;
}

TEST(Session, TokenMustMatch) {
  const std::string token = write_token("server", "s3cret-token");
  ServerProcess server({"--token-file", token});
  Output missing = client(server, "init");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("authentication failed"), std::string::npos) << missing.err;
  Output wrong = client(server, "init", {"SCUDA_TOKEN_FILE=" + write_token("wrong", "guess")});
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_NE(wrong.err.find("authentication failed"), std::string::npos) << wrong.err;
  EXPECT_EQ(wrong.err.find("running there?"), std::string::npos)
      << "a server that answered is running: " << wrong.err;
  Output right = client(server, "init", {"SCUDA_TOKEN_FILE=" + token});
  EXPECT_EQ(right.exit_code, 0) << right.err;
}

// cudart's look at the primary context, at its start, makes nothing on the
// GPU: the session asks its driver as cudart would, and the context stays
// inactive (retaining and releasing it would make it and destroy it again).
TEST(Session, CudartsPrimaryContextLookActivatesNothing) {
  ServerProcess server;
  Output o = client(server, "cudart-primary");
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  std::ifstream log(server.launch_log());
  const std::string lines((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_EQ(lines.find("primary context activated"), std::string::npos) << lines;
}

// Nothing answers: the error says where to look (the server, the address).
TEST(Session, AnAddressNothingAnswersOnSaysWhereToLook) {
  const std::string address = "127.0.0.1:" + std::to_string(test::free_port());
  Output o = test::run_program({CLIENT_TOOL, "init"},
                               {"SCUDA_SERVER=" + address, "SCUDA_CONNECT_RETRY=0"});
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.err.find("cannot connect to " + address), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("is `scuda server` running there?"), std::string::npos) << o.err;
}

// A server with no usable driver does not start: it would refuse every client.
TEST(Session, AServerWithoutAUsableDriverDoesNotStart) {
  Output o = test::run_program(
      {SCUDA_BIN, "server", "-l", "127.0.0.1:0", "--driver", "/nonexistent/libcuda.so.1"});
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("no usable GPU driver"), std::string::npos) << o.err;
  EXPECT_EQ(o.out.find("listening"), std::string::npos) << o.out;
}

TEST(Session, PublicAddressNeedsTlsOrInsecure) {
  Output o = test::run_program(
      {SCUDA_BIN, "server", "-l", "0.0.0.0:" + std::to_string(test::free_port())});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--tls-cert"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("--insecure"), std::string::npos) << o.err;
}

TEST(Session, MismatchedBuildsAndDriversAreRefused) {
  ServerProcess server;
  Socket a = raw_connect(server);
  protocol::Hello h = good_hello();
  h.api_hash ^= 1;
  EXPECT_NE(hello(a, h).find("different driver API tables"), std::string::npos);
  Socket b = raw_connect(server);
  h = good_hello();
  h.cuda_version = 99000;
  EXPECT_NE(hello(b, h).find("update the driver"), std::string::npos);
  Socket c = raw_connect(server);
  protocol::FrameHeader fh;
  fh.version = protocol::kProtocolVersion + 1;
  EXPECT_NE(exchange(c, fh, protocol::Writer()).find("protocol version"), std::string::npos);
}

TEST(Session, MalformedFramesEndOnlyThatSession) {
  ServerProcess server;
  Socket garbage = raw_connect(server);
  garbage.write_all("GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
  protocol::Frame f;
  std::string error;
  ASSERT_EQ(read_frame(garbage, &f, &error), protocol::ReadStatus::kOk);
  EXPECT_NE(std::string(f.payload.begin(), f.payload.end()).find("bad frame magic"),
            std::string::npos);
  EXPECT_TRUE(closed_by_server(garbage));

  Socket oversize = raw_connect(server);
  uint8_t header[protocol::kHeaderSize];
  protocol::FrameHeader big;
  big.length = protocol::kMaxPayload + 1;
  protocol::encode_header(big, header);
  oversize.write_all(header, sizeof header);
  ASSERT_EQ(read_frame(oversize, &f, &error), protocol::ReadStatus::kOk);
  EXPECT_NE(std::string(f.payload.begin(), f.payload.end()).find("exceeds the maximum"),
            std::string::npos);

  Socket truncated = raw_connect(server);
  ASSERT_EQ(hello(truncated, good_hello()).size() > 0, true);
  protocol::FrameHeader partial;
  partial.op = protocol::kOpMemcpyHtoD;
  partial.length = 100;
  protocol::encode_header(partial, header);
  truncated.write_all(header, sizeof header);
  truncated.write_all("0123456789", 10);
  truncated.close();

  Socket short_request = raw_connect(server);
  hello(short_request, good_hello());
  protocol::Writer three_bytes;
  three_bytes.bytes("abc", 3);
  protocol::FrameHeader req;
  req.op = protocol::kOpMemcpyHtoD;
  req.request_id = 7;
  EXPECT_NE(exchange(short_request, req, three_bytes).find("malformed memcpy-htod"),
            std::string::npos);

  // An answered op sent one-way would lose its reply.
  for (uint32_t op : {protocol::kOpMemcpyDtoH, protocol::kOpPointerAttributes}) {
    Socket wrong_way = raw_connect(server);
    hello(wrong_way, good_hello());
    protocol::FrameHeader one_way;
    one_way.op = op;
    one_way.flags = protocol::kOneWay;
    one_way.request_id = 8;
    const std::string answer = exchange(wrong_way, one_way, protocol::Writer());
    EXPECT_NE(answer.find(std::string("malformed ") + protocol::op_name(op) +
                          " request: sent one-way, but it is answered"),
              std::string::npos)
        << answer;
  }

  Socket unknown = raw_connect(server);
  hello(unknown, good_hello());
  req.op = 999;
  EXPECT_NE(exchange(unknown, req, protocol::Writer()).find("unknown op 999"), std::string::npos);

  Socket no_hello = raw_connect(server);
  req.op = protocol::kOpLaunch;
  EXPECT_NE(exchange(no_hello, req, protocol::Writer()).find("first frame must be the handshake"),
            std::string::npos);

  Output after = client(server, "init");
  EXPECT_EQ(after.exit_code, 0) << after.err;
}

// Device addresses come from the client: a map outside what the session
// reserved is refused and the session goes on; one that does not decode
// ends it.
TEST(Session, VaMapsOutsideTheSessionsReservationsAreRefused) {
  ServerProcess server;
  Socket sock = raw_connect(server);
  hello(sock, good_hello());
  protocol::FrameHeader req;
  req.op = protocol::kOpVaMap;
  req.request_id = 2;
  auto result = [](const std::string& reply) {
    uint32_t rc = 0;
    if (reply.size() >= sizeof rc) std::memcpy(&rc, reply.data(), sizeof rc);
    return rc;
  };
  for (uint64_t address : {uint64_t{0}, uint64_t{0x200000}, ~uint64_t{0} - 0x1fffff}) {
    const protocol::Writer w = protocol::encode(protocol::op::VaMap::Request{address, 0x200000});
    EXPECT_EQ(result(exchange(sock, req, w)), uint32_t{CUDA_ERROR_INVALID_VALUE}) << address;
  }
  protocol::FrameHeader reserve;
  reserve.op = protocol::kOpVaReserve;
  reserve.request_id = 3;
  EXPECT_NE(result(exchange(sock, reserve, protocol::encode(protocol::op::VaReserve::Request{}))),
            uint32_t{CUDA_SUCCESS})
      << "no context is current";
  protocol::Writer short_map;
  short_map.u64(0x200000);
  EXPECT_NE(exchange(sock, req, short_map).find("malformed va-map"), std::string::npos);
  EXPECT_TRUE(closed_by_server(sock));

  Output after = client(server, "init");
  EXPECT_EQ(after.exit_code, 0) << after.err;
}

// Ops whose reply carries the driver's outputs also when it failed send them
// only once the driver was reached: a request refused before it (an unknown
// graph) is answered with its result alone, nothing made up beside it.
TEST(Session, OutputsOfAFailureComeOnlyFromTheDriver) {
  ServerProcess server;
  Socket sock = raw_connect(server);
  hello(sock, good_hello());
  protocol::FrameHeader req;
  req.request_id = 2;
  auto result = [](const std::string& reply) {
    uint32_t rc = 0;
    if (reply.size() >= sizeof rc) std::memcpy(&rc, reply.data(), sizeof rc);
    return rc;
  };
  const uint64_t unknown = 0x7000;
  req.op = protocol::kOpGraphInstantiate;
  const std::string instantiate = exchange(
      sock, req,
      protocol::encode(protocol::op::GraphInstantiate::Request{0x5001, unknown, 0, 0, 0, 0x5002}));
  EXPECT_EQ(result(instantiate), uint32_t{CUDA_ERROR_INVALID_HANDLE});
  EXPECT_EQ(instantiate.size(), sizeof(uint32_t)) << "outputs beside an early failure";
  req.op = protocol::kOpGraphExecUpdate;
  const std::string update = exchange(
      sock, req,
      protocol::encode(protocol::op::GraphExecUpdate::Request{unknown, unknown, 0x5003, 0x5004}));
  EXPECT_EQ(result(update), uint32_t{CUDA_ERROR_INVALID_HANDLE});
  EXPECT_EQ(update.size(), sizeof(uint32_t)) << "outputs beside an early failure";

  // A map the session refuses still tells the device's memory when answered:
  // the driver's own figures, which keep the client's estimate fresh.
  req.op = protocol::kOpCtxCreate;
  protocol::op::CtxCreate::Request create;
  create.proposed = 0x5005;
  ASSERT_EQ(result(exchange(sock, req, protocol::encode(create))), uint32_t{CUDA_SUCCESS});
  req.op = protocol::kOpVaMap;
  const std::string map =
      exchange(sock, req, protocol::encode(protocol::op::VaMap::Request{0x200000, 0x200000}));
  EXPECT_EQ(result(map), uint32_t{CUDA_ERROR_INVALID_VALUE});
  ASSERT_EQ(map.size(), sizeof(uint32_t) + sizeof(protocol::op::MemoryInfo));
  protocol::op::MemoryInfo info;
  protocol::Reader r(reinterpret_cast<const uint8_t*>(map.data()) + sizeof(uint32_t),
                     map.size() - sizeof(uint32_t));
  ASSERT_TRUE(protocol::read(r, &info));
  EXPECT_GT(info.total, 0u);
  EXPECT_LE(info.free, info.total);
}

// whose shape is not one the server knows, end the session.
TEST(Session, CopyDescriptorsThatDoNotMatchTheirDataEndTheSession) {
  ServerProcess server;
  CUDA_MEMCPY3D_PEER c{};
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = 0x1000;
  c.dstPitch = 64;
  c.WidthInBytes = 16, c.Height = 4, c.Depth = 1;
  struct Case {
    uint8_t shape;
    size_t bytes;
  };
  for (Case k : {Case{protocol::kShape2D, 63}, Case{protocol::kShape2D, 65},
                 Case{protocol::kShapeCount, 64}}) {
    Socket sock = raw_connect(server);
    hello(sock, good_hello());
    const std::string data(k.bytes, 'x');
    const protocol::Writer w = protocol::encode(
        protocol::op::Memcpy3D::Request{k.shape, 0, 0, protocol::to_desc(c), data});
    protocol::FrameHeader req;
    req.op = protocol::kOpMemcpy3D;
    req.request_id = 2;
    EXPECT_NE(exchange(sock, req, w).find("malformed memcpy-3d"), std::string::npos)
        << int{k.shape} << " " << k.bytes;
  }
  Output after = client(server, "init");
  EXPECT_EQ(after.exit_code, 0) << after.err;
}

// A compressed host-to-device chunk whose lz4 block is not what it says
// ends the session, with the reason, before any byte reaches the device.
TEST(Session, MalformedCompressedChunksEndTheSession) {
  ServerProcess server;
  const std::vector<uint8_t> zeros(1000, 0);
  std::vector<uint8_t> valid(compression::bound(zeros.size()));
  valid.resize(compression::compress(zeros.data(), zeros.size(), valid.data()));
  ASSERT_FALSE(valid.empty());
  struct Case {
    const char* what;
    uint64_t raw;
    std::vector<uint8_t> block;
    const char* refusal;
  };
  const Case cases[] = {
      {"garbage", 4096, std::vector<uint8_t>(100, 0xff), "does not decode to the 4096 bytes"},
      {"raw size too large", protocol::kChunkSize + 1, valid, "more than a chunk"},
      {"raw size larger than the block's", 2000, valid, "does not decode to the 2000 bytes"},
      {"raw size smaller than the block's", 500, valid, "does not decode to the 500 bytes"},
      {"block larger than any of its size", 10, std::vector<uint8_t>(1000, 0),
       "cannot hold only 10"},
  };
  for (const Case& c : cases) {
    Socket sock = raw_connect(server);
    hello(sock, good_hello());
    protocol::Writer w = protocol::encode(
        protocol::op::MemcpyHtoD::Request{0x1000, 0, protocol::kCopyCompressed, c.raw});
    w.bytes(c.block.data(), c.block.size());
    protocol::FrameHeader req;
    req.op = protocol::kOpMemcpyHtoD;
    req.request_id = 3;
    const std::string answer = exchange(sock, req, w);
    EXPECT_NE(answer.find("malformed memcpy-htod request"), std::string::npos) << c.what;
    EXPECT_NE(answer.find(c.refusal), std::string::npos) << c.what << ": " << answer;
    EXPECT_TRUE(closed_by_server(sock)) << c.what;
  }
  Output after = client(server, "init");
  EXPECT_EQ(after.exit_code, 0) << after.err;
}

TEST(Session, ClientKilledMidCopyLeavesTheServerServing) {
  ServerProcess server;
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    setenv("SCUDA_SERVER", server.address().c_str(), 1);
    execl(CLIENT_TOOL, CLIENT_TOOL, "copy-loop", nullptr);
    _exit(127);
  }
  close(out[1]);
  FILE* from_child = fdopen(out[0], "r");
  char line[64] = {};
  ASSERT_NE(fgets(line, sizeof line, from_child), nullptr);  // one copy done
  EXPECT_STREQ(line, "copied\n");
  usleep(20000);  // most likely mid-way through the next 64 MiB
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  fclose(from_child);
  Output next = client(server, "init");
  EXPECT_EQ(next.exit_code, 0) << next.err;
}

TEST(Session, SessionLimitIsEnforcedWithAMessage) {
  ServerProcess server({"--max-sessions", "1"});
  Socket holder = raw_connect(server);
  ASSERT_FALSE(hello(holder, good_hello()).empty());
  Output refused = client(server, "init", {"SCUDA_WAIT_TIMEOUT=0"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("limit of 1 sessions"), std::string::npos) << refused.err;
  holder.close();
  usleep(200000);  // let the session process exit
  Output later = client(server, "init");
  EXPECT_EQ(later.exit_code, 0) << later.err;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(Session, StatsShowOneWayLaunchesAndCachedAttributes) {
  ServerProcess server;
  const std::string json = "/tmp/scuda-test-" + std::to_string(getpid()) + "-stats.json";
  Output o = client(server, "submit", {"SCUDA_STATS_JSON=" + json});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::string stats = read_all(json);
  // Launches never wait; only the synchronize does.
  EXPECT_NE(stats.find("{\"function\":\"launch\",\"calls\":0,\"one_way\":3,\"round_trips\":0,"),
            std::string::npos)
      << stats;
  EXPECT_NE(stats.find("{\"function\":\"cuLaunchKernel\",\"calls\":3,"), std::string::npos)
      << stats;
  EXPECT_NE(
      stats.find("{\"function\":\"cuCtxSynchronize\",\"calls\":1,\"one_way\":0,\"round_trips\":1,"),
      std::string::npos)
      << stats;
  // Attributes come with the function's lookup: no query waits.
  EXPECT_NE(
      stats.find(
          "{\"function\":\"cuFuncGetAttribute\",\"calls\":2,\"one_way\":0,\"round_trips\":0,"),
      std::string::npos)
      << stats;
}

// The bytes a row of SCUDA_STATS_JSON counts in `field`, or -1 without it.
long long stats_field(const std::string& stats, const std::string& function,
                      const std::string& field) {
  const size_t row = stats.find("{\"function\":\"" + function + "\"");
  if (row == std::string::npos) return -1;
  const size_t at = stats.find("\"" + field + "\":", row);
  return at == std::string::npos ? -1 : std::stoll(stats.substr(at + field.size() + 3));
}

// Zeros cross compressed with SCUDA_COMPRESS=on: the op rows count the bytes
// on the wire, the "lz4" rows those before compression. Lanes are off: with
// lz4 off, a copy could take them once they open, and count in their rows.
TEST(Session, CompressedCopiesPutFewerBytesOnTheWire) {
  ServerProcess server;
  const size_t size = 24u << 20;
  std::map<std::string, std::string> stats;
  for (const char* mode : {"off", "on"}) {
    const std::string json =
        "/tmp/scuda-test-" + std::to_string(getpid()) + "-lz4-" + mode + ".json";
    Output o = client(
        server, "zeros-round-trip",
        {"SCUDA_STATS_JSON=" + json, std::string("SCUDA_COMPRESS=") + mode, "SCUDA_LANES=1"});
    ASSERT_EQ(o.exit_code, 0) << o.err;
    stats[mode] = read_all(json);
  }
  EXPECT_GT(stats_field(stats["off"], "memcpy-htod", "bytes_out"), static_cast<long long>(size));
  EXPECT_LT(stats_field(stats["on"], "memcpy-htod", "bytes_out"),
            static_cast<long long>(size / 100));
  EXPECT_GT(stats_field(stats["off"], "memcpy-dtoh", "bytes_in"), static_cast<long long>(size));
  EXPECT_LT(stats_field(stats["on"], "memcpy-dtoh", "bytes_in"),
            static_cast<long long>(size / 100));
  EXPECT_EQ(stats_field(stats["off"], "memcpy-htod lz4", "calls"), -1) << stats["off"];
  EXPECT_EQ(stats_field(stats["on"], "memcpy-htod lz4", "calls"), 3) << stats["on"];
  EXPECT_EQ(stats_field(stats["on"], "memcpy-htod lz4", "bytes_out"), static_cast<long long>(size));
  EXPECT_EQ(stats_field(stats["on"], "memcpy-dtoh lz4", "bytes_in"), static_cast<long long>(size));
}

// A call scuda cannot serve has a row of its own, so that --stats says
// what a program asked for in vain.
TEST(Session, StatsCountUnsupportedCalls) {
  ServerProcess server;
  const std::string json = "/tmp/scuda-test-" + std::to_string(getpid()) + "-unsupported.json";
  Output o = client(server, "unsupported", {"SCUDA_STATS_JSON=" + json});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::string stats = read_all(json);
  EXPECT_EQ(stats_field(stats, "cuImportExternalMemory (not supported)", "calls"), 2) << stats;
  // The log line names the call and why it cannot be served.
  EXPECT_NE(o.err.find("cuImportExternalMemory is not supported by scuda: external memory"),
            std::string::npos)
      << o.err;
}

std::string tail(const std::string& s) {
  return s.substr(s.size() - std::min<size_t>(s.size(), 2000));
}

// cudart and cuBLAS call the driver from exit handlers registered before it
// was loaded, so they run after the client's statics are destroyed (spdlog's
// registry among them): such calls get CUDA_ERROR_DEINITIALIZED, as NVIDIA's
// driver answers once shut down, and touch nothing. (The GPU sample
// cublas_batched_managed died so, with SIGSEGV after its last cudaFree.)
TEST(Session, CallsFromExitHandlersAfterTheTeardownAreDeinitialized) {
  ServerProcess server;
  Output o = client(server, "runtime-exit", {"SCUDA_LOG_LEVEL=trace"});
  EXPECT_EQ(o.exit_code, 0) << tail(o.err);
  const std::string deinit = std::to_string(CUDA_ERROR_DEINITIALIZED);
  EXPECT_NE(o.out.find("runtime exit handler: " + deinit + " " + deinit), std::string::npos)
      << o.out;
}

// A program's own exit handler, registered after its first driver call,
// runs before the client's teardown but after this thread's thread-local
// objects are destroyed: the context stack must still work.
TEST(Session, ProgramExitHandlersStillHaveAContextStack) {
  ServerProcess server;
  Output o = client(server, "program-exit");
  EXPECT_EQ(o.exit_code, 0) << tail(o.err);
  EXPECT_NE(o.out.find("program exit handler: ok"), std::string::npos) << o.out;
}

TEST(Session, StoppedServerGivesAClearError) {
  ServerProcess server;
  const std::string address = server.address();
  server.stop();
  Output o = test::run_program({CLIENT_TOOL, "init"},
                               {"SCUDA_SERVER=" + address, "SCUDA_CONNECT_RETRY=0"});
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.err.find("cannot connect to " + address), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("scuda server"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace scuda

namespace scuda {
namespace {

uint32_t result_of(const std::string& reply) {
  uint32_t rc = 0;
  if (reply.size() >= sizeof rc) std::memcpy(&rc, reply.data(), sizeof rc);
  return rc;
}

// A count that promises the driver more room than the request carries would
// let the driver write past the server's buffer: the request is malformed.
TEST(Session, ArrayCountsBeyondTheRoomSentAreMalformed) {
  ServerProcess server;
  Socket sock = raw_connect(server);
  hello(sock, good_hello());
  protocol::Writer w;
  w.u64(0);    // hGraph
  w.u8(1);     // nodes: present,
  w.u64(0);    // with room for none
  w.u8(1);     // numNodes: present,
  w.u64(100);  // claiming 100
  protocol::FrameHeader req;
  req.op = protocol::kOp_cuGraphGetNodes;
  req.request_id = 1;
  EXPECT_NE(exchange(sock, req, w).find("malformed cuGraphGetNodes"), std::string::npos);
}

// A node's lists must hold what its struct counts, and only the lists its
// type has: anything else would hand the driver a count the server's
// buffers do not back.
TEST(Session, NodeParamsWhoseListsDisagreeWithTheirStructAreMalformed) {
  ServerProcess server;
  protocol::op::NodeParams alloc;
  alloc.params.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  alloc.params.alloc.accessDescCount = 2;
  alloc.access.resize(1);
  protocol::op::NodeParams memset_with_args;
  memset_with_args.params.type = CU_GRAPH_NODE_TYPE_MEMSET;
  memset_with_args.args = "abcd";
  protocol::op::NodeParams batch;
  batch.params.type = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP;
  batch.params.memOp.count = 1;
  protocol::op::NodeParams conditional_set;
  conditional_set.params.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  conditional_set.params.conditional.size = 1;
  conditional_set.bodies = {77};
  const std::pair<uint32_t, protocol::Writer> cases[] = {
      {protocol::kOpGraphAddNode, protocol::encode(protocol::op::GraphAddNode::Request{
                                      1, 2, std::nullopt, std::nullopt, alloc})},
      {protocol::kOpGraphAddNode, protocol::encode(protocol::op::GraphAddNode::Request{
                                      1, 2, std::nullopt, std::nullopt, memset_with_args})},
      {protocol::kOpGraphNodeSetParams,
       protocol::encode(protocol::op::GraphNodeSetParams::Request{1, batch})},
      {protocol::kOpGraphExecNodeSetParams,
       protocol::encode(protocol::op::GraphExecNodeSetParams::Request{1, 2, conditional_set})},
  };
  for (const auto& [op, request] : cases) {
    Socket sock = raw_connect(server);
    hello(sock, good_hello());
    protocol::FrameHeader req;
    req.op = op;
    req.request_id = 1;
    const std::string answer = exchange(sock, req, request);
    EXPECT_NE(answer.find(std::string("malformed ") + protocol::op_name(op)), std::string::npos)
        << answer;
  }
}

// The same for buffers whose size a parameter gives: the server checks the
// buffer against its own reading of that parameter.
TEST(Session, BufferSizesBeyondTheRoomSentAreMalformed) {
  ServerProcess server;
  Socket sock = raw_connect(server);
  hello(sock, good_hello());
  protocol::Writer w;
  w.u8(1);          // data: present,
  w.u64(8);         // 8 bytes of room
  w.u64(1u << 20);  // dataSize: claiming 1 MiB
  w.put<CUmem_range_attribute>(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY);
  w.u64(0x1000);  // devPtr
  w.u64(4);       // count
  protocol::FrameHeader req;
  req.op = protocol::kOp_cuMemRangeGetAttribute;
  req.request_id = 1;
  EXPECT_NE(exchange(sock, req, w).find("malformed cuMemRangeGetAttribute"), std::string::npos);
}

}  // namespace
}  // namespace scuda

namespace scuda {
namespace {

struct Channel {
  std::string name;
  std::string secret;
};

// The name and secret that request `op` (callback-channel or lanes) gets
// for a join.
Channel ask_to_join(Socket& sock, uint32_t op, uint64_t request_id, const protocol::Writer& w) {
  protocol::FrameHeader req;
  req.op = op;
  req.request_id = request_id;
  const std::string reply = exchange(sock, req, w);
  protocol::Reader r(reply.data(), reply.size());
  EXPECT_EQ(r.u32(), uint32_t{CUDA_SUCCESS});
  Channel c{r.str(), r.str()};
  EXPECT_TRUE(r.done());
  return c;
}

Channel ask_for_channel(Socket& sock, uint64_t request_id) {
  return ask_to_join(sock, protocol::kOpCallbackChannel, request_id,
                     protocol::encode(protocol::op::CallbackChannel::Request{}));
}

// The server's answer to a callback channel's join, which sends its route
// (docs/protocol.md, "TLS") and then its HELLO: its result word, or the
// message it refused with.
std::string join(Socket& sock, const std::string& token, const Channel& c) {
  protocol::Writer route;
  route.str(c.name);
  protocol::FrameHeader rh;
  rh.op = protocol::kOpJoinRoute;
  protocol::write_frame(sock, rh, route.data().data(), route.size());
  protocol::Hello h = good_hello();
  h.token = token;
  h.join = c.name;
  h.secret = c.secret;
  return hello(sock, h);
}

const std::string kJoined(sizeof(uint32_t), '\0');

// Joins are checked like sessions (the server's token), then by the
// session itself (its secret); refusals leave the session serving, and
// waiting for the right join.
TEST(Session, CallbackChannelJoinsNeedTheTokenAndTheSessionsSecret) {
  ServerProcess server({"--token-file", write_token("join", "join-token")});
  Socket main = raw_connect(server);
  protocol::Hello h = good_hello();
  h.token = "join-token";
  ASSERT_EQ(result_of(hello(main, h)), uint32_t{CUDA_SUCCESS});
  const Channel channel = ask_for_channel(main, 1);
  EXPECT_EQ(channel.secret.size(), 32u);

  Socket no_token = raw_connect(server);
  EXPECT_NE(join(no_token, "", channel).find("authentication failed"), std::string::npos);
  Channel wrong = channel;
  wrong.secret[0] ^= 1;
  Socket wrong_secret = raw_connect(server);
  EXPECT_NE(join(wrong_secret, "join-token", wrong).find("wrong secret"), std::string::npos);
  EXPECT_TRUE(closed_by_server(wrong_secret));
  Socket unknown = raw_connect(server);
  EXPECT_NE(join(unknown, "join-token", {"scuda-join-1-callbacks-00", channel.secret})
                .find("no session is waiting"),
            std::string::npos);

  EXPECT_EQ(ask_for_channel(main, 2).name, channel.name);
  Socket joined = raw_connect(server);
  EXPECT_EQ(join(joined, "join-token", channel), kJoined);
}

// On the joined channel the session says when the stream reaches a
// callback, and the stream waits for "done".
TEST(Session, CallbackChannelCarriesReachedAndDone) {
  ServerProcess server;
  Socket main = raw_connect(server);
  ASSERT_EQ(result_of(hello(main, good_hello())), uint32_t{CUDA_SUCCESS});
  Socket channel = raw_connect(server);
  ASSERT_EQ(join(channel, "", ask_for_channel(main, 1)), kJoined);
  const timeval patience{10, 0};  // a failure below must not hang the test
  setsockopt(channel.fd(), SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
  // On device 0, no flags, no creation parameters.
  const protocol::Writer ctx =
      protocol::encode(protocol::op::CtxCreate::Request{0x5000, 0, 0, 0, {}});
  protocol::FrameHeader req;
  req.op = protocol::op::CtxCreate::kOp;
  req.request_id = 2;
  ASSERT_EQ(result_of(exchange(main, req, ctx)), uint32_t{CUDA_SUCCESS});
  protocol::Writer current = protocol::encode(protocol::op::CtxSetCurrent::Request{0x5000});
  protocol::Writer callback;
  callback.u64(0);  // the NULL stream
  callback.u8(0);
  callback.u64(0x77);
  req.flags = protocol::kOneWay;
  for (auto [op, w] : {std::pair{protocol::kOpCtxSetCurrent, &current},
                       std::pair{protocol::kOpHostCallback, &callback}}) {
    req.op = op;
    ++req.request_id;
    protocol::write_frame(main, req, w->data().data(), w->size());
  }
  protocol::Frame reached;
  std::string error;
  ASSERT_EQ(protocol::read_frame(channel, &reached, &error), protocol::ReadStatus::kOk);
  protocol::Reader r(reached.payload);
  EXPECT_EQ(reached.header.op, uint32_t{protocol::kOpHostCallback});
  EXPECT_EQ(r.u64(), 0x77u);
  EXPECT_TRUE(r.done());
  protocol::FrameHeader done;
  done.op = protocol::kOpHostCallback;
  done.flags = protocol::kReply;
  ASSERT_TRUE(protocol::write_frame(channel, done, reached.payload.data(), reached.payload.size()));
  ask_for_channel(main, 10);  // the session went on past the callback
}

// A program that exits while its stream waits for its callback: the program
// does not hang, its session ends cleanly (the listener logs any session
// that does not), and the server serves on.
TEST(Session, ExitWithACallbackRunningEndsTheSessionCleanly) {
  ServerProcess server({"-v"});
  Output o = client(server, "callback-exit");
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_EQ(o.out, "callback running\n");
  for (int i = 0; i < 250 && !children_of(server.pid()).empty(); ++i) usleep(20000);
  EXPECT_TRUE(children_of(server.pid()).empty());
  const std::string log = server.log();
  EXPECT_NE(log.find("session"), std::string::npos) << log;
  EXPECT_EQ(log.find("died of signal"), std::string::npos) << log;
  EXPECT_EQ(log.find("ended with exit code"), std::string::npos) << log;
  EXPECT_EQ(client(server, "init").exit_code, 0);
}

// A server at its limit of sessions still lets a session's callback channel
// join: it belongs to a session already counted.
Channel ask_for_lanes(Socket& sock, uint64_t request_id, uint32_t lanes) {
  return ask_to_join(sock, protocol::kOpLanes, request_id,
                     protocol::encode(protocol::op::Lanes::Request{lanes}));
}

// A synchronous host-to-device copy of `size` bytes over `lanes` lanes, to
// device address 0 (the bytes never reach a device), with copy `mode` bits.
void write_lane_copy(Socket& sock, uint64_t request_id, uint64_t size, uint32_t lanes,
                     uint8_t mode = 0) {
  const protocol::Writer w = protocol::encode(protocol::op::LaneCopy{0, 0, mode, size, lanes});
  protocol::FrameHeader req;
  req.op = protocol::kOpMemcpyHtoDLanes;
  req.flags = protocol::kSynchronizing;
  req.request_id = request_id;
  protocol::write_frame(sock, req, w.data().data(), w.size());
}

// A session whose client asked for `wanted` lanes and joined one.
struct OneLane {
  Socket main, lane;
};

void open_one_lane(ServerProcess& server, uint32_t wanted, OneLane* s) {
  s->main = raw_connect(server);
  ASSERT_EQ(result_of(hello(s->main, good_hello())), uint32_t{CUDA_SUCCESS});
  s->lane = raw_connect(server);
  ASSERT_EQ(join(s->lane, "", ask_for_lanes(s->main, 1, wanted)), kJoined);
}

// The session's answer to a lane copy it cannot take: an ERROR frame that
// names the request malformed.
void expect_malformed_lane_copy(Socket& main) {
  protocol::Frame f;
  std::string error;
  ASSERT_EQ(protocol::read_frame(main, &f, &error), protocol::ReadStatus::kOk);
  EXPECT_TRUE(f.header.flags & protocol::kError);
  EXPECT_NE(std::string(f.payload.begin(), f.payload.end()).find("malformed memcpy-htod-lanes"),
            std::string::npos);
}

TEST(Session, LaneCopiesOverLanesThatNeverJoinedEndTheSession) {
  ServerProcess server;
  OneLane s;
  ASSERT_NO_FATAL_FAILURE(open_one_lane(server, 2, &s));
  write_lane_copy(s.main, 2, 1000, 2);
  expect_malformed_lane_copy(s.main);
}

// A settled lane copy is finished by the session in place of the client's
// wait: one the client waits for cannot be settled.
TEST(Session, ASettledLaneCopyTheClientWaitsForIsMalformed) {
  ServerProcess server;
  OneLane s;
  ASSERT_NO_FATAL_FAILURE(open_one_lane(server, 1, &s));
  write_lane_copy(s.main, 2, 1000, 1, protocol::kCopySettled);
  expect_malformed_lane_copy(s.main);
}

// A lane that breaks mid-copy closes every lane: the copy fails, with the
// other lane's wait for its stripe ended, and the session goes on.
TEST(Session, ALaneBrokenMidCopyFailsOnlyThatCopy) {
  ServerProcess server;
  Socket main = raw_connect(server);
  ASSERT_EQ(result_of(hello(main, good_hello())), uint32_t{CUDA_SUCCESS});
  const Channel lanes = ask_for_lanes(main, 1, 2);
  Socket first = raw_connect(server), second = raw_connect(server);
  ASSERT_EQ(join(first, "", lanes), kJoined);
  ASSERT_EQ(join(second, "", lanes), kJoined);
  const timeval patience{10, 0};  // a failure below must not hang the test
  setsockopt(main.fd(), SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
  write_lane_copy(main, 2, 2 * protocol::kLaneStripe, 2);
  ASSERT_TRUE(first.write_all(std::string(1000, 'x').data(), 1000));
  first.close();
  protocol::Frame f;
  std::string error;
  ASSERT_EQ(protocol::read_frame(main, &f, &error), protocol::ReadStatus::kOk) << error;
  EXPECT_EQ(result_of(std::string(f.payload.begin(), f.payload.end())),
            uint32_t{CUDA_ERROR_DEVICE_UNAVAILABLE});
  EXPECT_TRUE(closed_by_server(second));
  ask_for_channel(main, 3);  // the session went on
}

// A client that closes its connection while the session waits for a lane
// copy's stripes ends its session: the lanes stop waiting.
TEST(Session, ClosingTheConnectionMidLaneCopyEndsTheSession) {
  ServerProcess server;
  OneLane s;
  ASSERT_NO_FATAL_FAILURE(open_one_lane(server, 1, &s));
  write_lane_copy(s.main, 2, 2 * protocol::kLaneStripe, 1);
  ASSERT_TRUE(s.lane.write_all(std::string(1000, 'x').data(), 1000));
  s.main.close();
  const timeval patience{10, 0};  // a failure below must not hang the test
  setsockopt(s.lane.fd(), SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
  EXPECT_TRUE(closed_by_server(s.lane));
  for (int i = 0; i < 500 && !all_ended(server.pid()); ++i) usleep(10000);
  EXPECT_TRUE(all_ended(server.pid()));
}

TEST(Session, CallbackChannelJoinsAServerAtItsLimit) {
  ServerProcess server({"--max-sessions", "1"});
  Output o = client(server, "callback-exit");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "callback running\n");
}

// Requests to a session that has died: launches, which the outbox's thread
// writes, and copies, which the calling thread writes itself and which
// would raise SIGPIPE there. The program gets the lost connection at its
// next synchronize and exits as it chooses.
class SessionLoss : public ::testing::TestWithParam<const char*> {};

TEST_P(SessionLoss, ASessionKilledUnderRequestsFailsTheNextSynchronize) {
  ServerProcess server;
  test::InteractiveClient client(server, GetParam());
  ASSERT_EQ(client.line(), "ready\n");
  const std::vector<Child> sessions = children_of(server.pid());
  ASSERT_EQ(sessions.size(), 1u);
  kill(sessions[0].pid, SIGKILL);
  // Once it has ended, a write finds the connection closed (EPIPE), rather
  // than reset by a session that died with the write unread.
  for (int i = 0; i < 500 && !all_ended(server.pid()); ++i) usleep(10000);
  ASSERT_TRUE(client.go());
  const int status = client.wait();
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
  EXPECT_EQ(client.line(), "cuCtxSynchronize: CUDA_ERROR_DEVICE_UNAVAILABLE\n");
}

INSTANTIATE_TEST_SUITE_P(Session, SessionLoss,
                         ::testing::Values("launch-after-loss", "copy-after-loss"),
                         [](const auto& info) {
                           return std::string(info.param[0] == 'l' ? "Launches" : "Copies");
                         });

}  // namespace
}  // namespace scuda
