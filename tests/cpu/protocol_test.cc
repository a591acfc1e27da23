// Frame and payload encoding, in isolation from any socket.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "protocol/codec.h"
#include "protocol/copy_desc.h"
#include "protocol/frame.h"
#include "protocol/handshake.h"
#include "protocol/ipc_handle.h"
#include "protocol/layout.h"
#include "protocol/op_layouts.h"
#include "protocol/ops.h"

namespace scuda::protocol {
namespace {

TEST(Codec, RoundTripsValuesAndBlobs) {
  Writer w;
  w.u8(7);
  w.u32(0xabcdef01);
  w.u64(1ull << 40);
  w.str("hello");
  Reader r(w.data());
  EXPECT_EQ(r.u8(), 7);
  EXPECT_EQ(r.u32(), 0xabcdef01u);
  EXPECT_EQ(r.u64(), 1ull << 40);
  EXPECT_EQ(r.str(), "hello");
  EXPECT_TRUE(r.done());
}

TEST(Codec, ReadingPastTheEndFailsAndStaysFailed) {
  Writer w;
  w.u32(5);
  Reader r(w.data());
  EXPECT_EQ(r.u64(), 0u);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.u8(), 0u);
  EXPECT_FALSE(r.done());
}

TEST(Codec, BlobLengthBeyondTheBufferFails) {
  Writer w;
  w.u64(1000);  // claims 1000 bytes
  w.bytes("abc", 3);
  Reader r(w.data());
  EXPECT_TRUE(r.blob().empty());
  EXPECT_FALSE(r.ok());
}

TEST(Codec, HugeBlobLengthDoesNotOverflow) {
  Writer w;
  w.u64(~0ull);
  Reader r(w.data());
  r.blob();
  EXPECT_FALSE(r.ok());
}

TEST(Codec, LeftoverBytesAreNotDone) {
  Writer w;
  w.u32(1);
  w.u8(2);
  Reader r(w.data());
  r.u32();
  EXPECT_TRUE(r.ok());
  EXPECT_FALSE(r.done());
}

TEST(Frame, HeaderRoundTrips) {
  FrameHeader h;
  h.flags = kOneWay;
  h.op = 1234;
  h.length = 99;
  h.request_id = 42;
  uint8_t buf[kHeaderSize];
  encode_header(h, buf);
  FrameHeader back;
  std::string error;
  ASSERT_TRUE(decode_header(buf, &back, &error)) << error;
  EXPECT_EQ(back.op, 1234u);
  EXPECT_EQ(back.flags, kOneWay);
  EXPECT_EQ(back.length, 99u);
  EXPECT_EQ(back.request_id, 42u);
}

struct Sample {
  uint32_t number = 0;
  std::string text;
  std::vector<uint64_t> words;
  auto fields() { return std::tie(number, text, words); }
};

// A layout's fields cross in order, as the codec writes them one by one.
TEST(Layout, RoundTripsInWireOrder) {
  const Sample sent{7, "lane", {1, 2, 3}};
  const Writer w = encode(sent);
  Writer by_hand;
  by_hand.u32(7);
  by_hand.str("lane");
  by_hand.u64(3);
  for (uint64_t word : {1, 2, 3}) by_hand.u64(word);
  EXPECT_EQ(w.data(), by_hand.data());
  Reader r(w.data());
  Sample got;
  ASSERT_TRUE(read(r, &got));
  EXPECT_EQ(got.number, 7u);
  EXPECT_EQ(got.text, "lane");
  EXPECT_EQ(got.words, sent.words);
  // An empty list: a count of 0 and nothing after it.
  const Writer none = encode(Sample{8, "", {}});
  Reader e(none.data());
  Sample empty{0, "x", {9}};
  ASSERT_TRUE(read(e, &empty));
  EXPECT_EQ(empty.number, 8u);
  EXPECT_TRUE(empty.text.empty());
  EXPECT_TRUE(empty.words.empty());
}

// Too few bytes, too many, or a count the bytes left cannot hold: read()
// fails, allocating nothing for the count.
TEST(Layout, RefusesShortLongAndOverlongInput) {
  const Writer w = encode(Sample{7, "lane", {1, 2, 3}});
  for (size_t cut : {size_t{0}, size_t{3}, w.size() - 1}) {
    Reader r(w.data().data(), cut);
    Sample got;
    EXPECT_FALSE(read(r, &got)) << cut;
  }
  std::vector<uint8_t> longer = w.data();
  longer.push_back(0);
  Reader extra(longer);
  Sample got;
  EXPECT_FALSE(read(extra, &got));
  Writer huge;
  huge.u32(1);
  huge.str("");
  huge.u64(uint64_t{1} << 60);
  Reader r(huge.data());
  EXPECT_FALSE(read(r, &got));
  EXPECT_TRUE(got.words.empty());
}

struct Named {
  std::vector<std::string> names;
  std::optional<uint32_t> value;
  auto fields() { return std::tie(names, value); }
};

// Names cross as a count and each string; an optional as a u8 that says
// whether its value follows.
TEST(Layout, NamesAndOptionalsCrossAsTheCodecWritesThem) {
  for (const std::optional<uint32_t>& value :
       {std::optional<uint32_t>{}, std::optional<uint32_t>{9}}) {
    const Writer w = encode(Named{{"a", "", "kernel"}, value});
    Writer by_hand;
    by_hand.u64(3);
    for (const char* name : {"a", "", "kernel"}) by_hand.str(name);
    by_hand.u8(value.has_value());
    if (value) by_hand.u32(*value);
    EXPECT_EQ(w.data(), by_hand.data());
    Reader r(w.data());
    Named got{{"stale"}, 1};
    ASSERT_TRUE(read(r, &got));
    EXPECT_EQ(got.names, (std::vector<std::string>{"a", "", "kernel"}));
    EXPECT_EQ(got.value, value);
  }
}

// A count of names the bytes left cannot hold (8 bytes each at least), or a
// presence byte other than 0 and 1, fails the reader.
TEST(Layout, RefusesImpossibleNameCountsAndPresenceBytes) {
  Writer many;
  many.u64(uint64_t{1} << 40);
  many.u8(0);
  Reader r(many.data());
  Named got;
  EXPECT_FALSE(read(r, &got));
  EXPECT_TRUE(got.names.empty());
  Writer odd;
  odd.u64(0);
  odd.u8(2);
  odd.u32(5);
  Reader o(odd.data());
  EXPECT_FALSE(read(o, &got));
}

// An op's request as both ends see it: the primary context's device and id.
TEST(Layout, OpRequestsDecodeAsEncoded) {
  const Writer w = encode(op::PrimaryContext::Request{3, 0x5000});
  Reader r(w.data());
  op::PrimaryContext::Request got;
  ASSERT_TRUE(read(r, &got));
  EXPECT_EQ(got.device, 3);
  EXPECT_EQ(got.proposed, 0x5000u);
  EXPECT_EQ(op::PrimaryContext::kOp, kOpPrimaryContext);
  const Writer nothing;
  Reader none(nothing.data());
  Empty empty;
  EXPECT_TRUE(read(none, &empty));
}

// A list of layouts crosses as a count and each one's fields; a
// string_view field is read as a view into the received bytes, not a copy.
// A count of layouts past the bytes left fails before anything is made.
TEST(Layout, LayoutListsCrossAndDataFieldsAreReadInPlace) {
  op::Link::Request q;
  q.options = {{CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES}, {256}};
  const std::string ptx = "// ptx text", cubin(3000, 'c');
  q.inputs.push_back({CU_JIT_INPUT_PTX, "a.ptx", ptx, {{CU_JIT_OPTIMIZATION_LEVEL}, {3}}});
  q.inputs.push_back({CU_JIT_INPUT_CUBIN, "b.cubin", cubin, {}});
  const Writer w = encode(q);
  Reader r(w.data());
  op::Link::Request got;
  ASSERT_TRUE(read(r, &got));
  ASSERT_EQ(got.inputs.size(), 2u);
  EXPECT_EQ(got.options.keys, q.options.keys);
  EXPECT_EQ(got.options.values, q.options.values);
  EXPECT_EQ(got.inputs[0].name, "a.ptx");
  EXPECT_EQ(got.inputs[0].data, ptx);
  EXPECT_EQ(got.inputs[0].options.values, std::vector<uint64_t>{3});
  EXPECT_EQ(got.inputs[1].data, cubin);
  const auto* first = reinterpret_cast<const char*>(w.data().data());
  EXPECT_GE(got.inputs[1].data.data(), first);
  EXPECT_LE(got.inputs[1].data.data() + cubin.size(), first + w.size()) << "copied, not viewed";

  Writer many = encode(op::JitOptions{});
  many.u64(uint64_t{1} << 40);
  Reader m(many.data());
  EXPECT_FALSE(read(m, &got));
  // An input takes 36 bytes at least (type, name, data, two counts): a
  // count the bytes cannot hold at that rate is refused before allocating.
  EXPECT_EQ(min_wire_size<op::LinkInput>(), 36u);
  Writer sparse = encode(op::JitOptions{});
  sparse.u64(10);
  sparse.bytes(std::string(100, '\0').data(), 100);
  Reader sp(sparse.data());
  EXPECT_FALSE(read(sp, &got));
  EXPECT_TRUE(got.inputs.empty()) << "nothing was made for the count";
}

// A layout whose every field is trivially copyable (a string_view among
// them) still crosses field by field: its view as a length and the bytes,
// never as the pointer it holds.
TEST(Layout, ATriviallyCopyableLayoutCrossesFieldByField) {
  static_assert(std::is_trivially_copyable_v<op::ChangedRun>);
  const std::string a = "abc", b(300, 'b');
  const Writer w = encode(op::MirrorChanges{{{0x1000, a}, {0x2000, b}}});
  EXPECT_EQ(w.size(), 8 + (8 + 8 + a.size()) + (8 + 8 + b.size()));
  Reader r(w.data());
  op::MirrorChanges got;
  ASSERT_TRUE(read(r, &got));
  ASSERT_EQ(got.runs.size(), 2u);
  EXPECT_EQ(got.runs[0].address, 0x1000u);
  EXPECT_EQ(got.runs[0].bytes, a);
  EXPECT_EQ(got.runs[1].address, 0x2000u);
  EXPECT_EQ(got.runs[1].bytes, b);
  EXPECT_EQ(got.runs[1].bytes.data(),
            reinterpret_cast<const char*>(w.data().data()) + w.size() - b.size())
      << "copied, not viewed";
}

// A 3D copy's descriptor crosses every field but the host pointers, each
// as a u64, and comes back as it went.
TEST(Layout, ACopyDescriptorCrossesEveryFieldButHostPointers) {
  CUDA_MEMCPY3D_PEER c{};
  c.srcXInBytes = 1, c.srcY = 2, c.srcZ = 3, c.srcLOD = 4;
  c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  c.srcHost = &c;
  c.srcDevice = 0x5000;
  c.srcArray = reinterpret_cast<CUarray>(0x77);
  c.srcContext = reinterpret_cast<CUcontext>(0x78);
  c.srcPitch = 512, c.srcHeight = 9;
  c.dstXInBytes = 11, c.dstY = 12, c.dstZ = 13, c.dstLOD = 14;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = 0x9000;
  c.dstArray = reinterpret_cast<CUarray>(0x79);
  c.dstContext = reinterpret_cast<CUcontext>(0x7a);
  c.dstPitch = 1024, c.dstHeight = 19;
  c.WidthInBytes = 64, c.Height = 8, c.Depth = 2;
  const Writer w = encode(op::Memcpy3D::Request{kShape3DPeer, 1, 5, to_desc(c), {}});
  EXPECT_EQ(w.size(), 2 + 8 + 23 * 8 + 8u);  // shape, mode, stream, 23 fields, no data
  Reader r(w.data());
  op::Memcpy3D::Request got;
  ASSERT_TRUE(read(r, &got));
  CUDA_MEMCPY3D_PEER back = from_desc(got.desc);
  EXPECT_EQ(back.srcHost, nullptr);
  back.srcHost = c.srcHost;
  EXPECT_EQ(std::memcmp(&back, &c, sizeof c), 0);
}

// A copy's head is what the server decodes before it reads the bytes
// itself: its declared size must be its layout's.
TEST(Layout, ACopysHeadIsAsLongAsItsLayout) {
  EXPECT_EQ(encode(op::MemcpyHtoD::Request{}).size(), op::MemcpyHtoD::kHeadBytes);
}

// A launch configuration inside another request takes the place of its
// fields; a launch's arguments follow the configuration as bytes of their
// own, which read_fields leaves for the server to take as they are.
TEST(Layout, ALaunchConfigurationCrossesInsideRequestsAndBeforeItsArguments) {
  op::LaunchConfig config;
  config.function = 0x5001;
  config.dims = {4, 2, 1, 128, 1, 1};
  config.shared_memory = 4096;
  config.stream = 0x5002;
  config.mode = kCopyPerThread;
  CUlaunchAttribute cooperative{};
  cooperative.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  cooperative.value.cooperative = 1;
  config.attributes = {cooperative};

  Writer w = encode(config);
  const char arguments[] = "packed arguments";
  w.blob(arguments, sizeof arguments);
  Reader r(w.data());
  op::LaunchConfig got;
  read_fields(r, got);
  EXPECT_EQ(r.blob(), std::string_view(arguments, sizeof arguments));
  ASSERT_TRUE(r.done());
  EXPECT_EQ(got.function, config.function);
  EXPECT_EQ(got.dims, config.dims);
  EXPECT_EQ(got.shared_memory, 4096u);
  EXPECT_EQ(got.stream, config.stream);
  EXPECT_EQ(got.mode, kCopyPerThread);
  ASSERT_EQ(got.attributes.size(), 1u);
  EXPECT_EQ(got.attributes[0].id, CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
  EXPECT_EQ(got.attributes[0].value.cooperative, 1);

  const Writer nested = encode(op::OccupancyClusters::Request{1, config});
  Writer by_hand;
  by_hand.u8(1);
  write(by_hand, config);
  EXPECT_EQ(nested.data(), by_hand.data());
  Reader n(nested.data());
  op::OccupancyClusters::Request request;
  ASSERT_TRUE(read(n, &request));
  EXPECT_EQ(request.which, 1);
  EXPECT_EQ(request.config.dims, config.dims);
  EXPECT_EQ(request.config.attributes.size(), 1u);
  Reader cut(nested.data().data(), nested.size() - 1);
  EXPECT_FALSE(read(cut, &request)) << "a configuration cut short";
}

// Every byte of a copy crosses one lane, once, in order per lane; a copy too
// small for a 4 MiB stripe a lane takes smaller ones, down to 1 MiB.
TEST(LaneStripes, EveryByteOnceAndSmallCopiesReachEveryLane) {
  constexpr uint64_t kMiB = 1u << 20;
  EXPECT_EQ(lane_stripe(256 * kMiB, 8), 4 * kMiB);
  EXPECT_EQ(lane_stripe(16 * kMiB, 8), 2 * kMiB);
  EXPECT_EQ(lane_stripe(16 * kMiB, 4), 4 * kMiB);
  EXPECT_EQ(lane_stripe(16 * kMiB + 1, 8), 2 * kMiB + (64 << 10));
  EXPECT_EQ(lane_stripe(5 * kMiB, 16), kMiB);
  EXPECT_EQ(lane_stripe(5 * kMiB, 0), 4 * kMiB);
  for (const uint64_t size : {16 * kMiB, 16 * kMiB + 12345, 37 * kMiB + 1, 256 * kMiB}) {
    for (const uint32_t lanes : {1u, 4u, 8u, 16u}) {
      uint64_t next = 0, lanes_used = 0;
      std::vector<std::pair<uint64_t, uint64_t>> stripes;
      for (uint32_t i = 0; i < lanes; ++i) {
        uint64_t before = stripes.size(), last = 0;
        EXPECT_TRUE(each_stripe(i, lanes, size, [&](uint64_t at, size_t n) {
          EXPECT_TRUE(stripes.size() == before || at > last);
          last = at;
          stripes.emplace_back(at, n);
          return true;
        }));
        lanes_used += stripes.size() > before;
      }
      std::sort(stripes.begin(), stripes.end());
      for (auto [at, n] : stripes) {
        EXPECT_EQ(at, next) << size << " over " << lanes;
        next = at + n;
      }
      EXPECT_EQ(next, size) << size << " over " << lanes;
      EXPECT_EQ(lanes_used, std::min<uint64_t>(lanes, stripes.size())) << size << " over " << lanes;
      if (size >= 16 * kMiB) {
        EXPECT_EQ(lanes_used, lanes) << size << " over " << lanes;
      }
    }
  }
}

TEST(Frame, BadMagicVersionAndSizeAreRefusedWithReasons) {
  uint8_t buf[kHeaderSize];
  FrameHeader h;
  std::string error;
  FrameHeader back;
  h.magic = 0x12345678;
  encode_header(h, buf);
  EXPECT_FALSE(decode_header(buf, &back, &error));
  EXPECT_NE(error.find("magic"), std::string::npos);
  h = FrameHeader();
  h.version = kProtocolVersion + 1;
  encode_header(h, buf);
  EXPECT_FALSE(decode_header(buf, &back, &error));
  EXPECT_NE(error.find("protocol version"), std::string::npos);
  h = FrameHeader();
  h.length = kMaxPayload + 1;
  encode_header(h, buf);
  EXPECT_FALSE(decode_header(buf, &back, &error));
  EXPECT_NE(error.find("maximum"), std::string::npos);
}

TEST(Handshake, WelcomeRoundTripsAndTruncationFails) {
  Welcome w;
  w.driver_version = 13000;
  w.session_pid = 77;
  DeviceInfo d;
  d.name = "GPU";
  d.total_mem = 1ull << 34;
  d.pci_bus_id = "0000:01:00.0";
  d.attrs = {1, 2, 3};
  d.attr_ok = {1, 0, 1};
  w.devices.push_back(d);
  w.images_kept = {1, 0};
  Writer out;
  encode(w, out);
  Reader r(out.data());
  Welcome back;
  ASSERT_TRUE(decode(r, &back));
  EXPECT_EQ(back.images_kept, w.images_kept);
  EXPECT_EQ(back.devices[0].name, "GPU");
  EXPECT_EQ(back.devices[0].attrs, d.attrs);
  EXPECT_EQ(back.devices[0].attr_ok, d.attr_ok);
  for (size_t cut = 0; cut < out.size(); ++cut) {
    Reader partial(out.data().data(), cut);
    Welcome ignored;
    EXPECT_FALSE(decode(partial, &ignored)) << cut;
  }
}

TEST(Handshake, HelloRoundTripsItsImagesUpToTheLimit) {
  Hello h{42, 13000, "token", "program"};
  h.images.resize(2);
  h.images[1].hash[0] = 7;
  h.images[1].size = 1 << 20;
  Writer out;
  encode(h, out);
  Reader r(out.data());
  Hello back;
  ASSERT_TRUE(decode(r, &back));
  EXPECT_EQ(back.program, "program");
  EXPECT_TRUE(back.join.empty());
  ASSERT_EQ(back.images.size(), 2u);
  EXPECT_EQ(back.images[1].hash, h.images[1].hash);
  EXPECT_EQ(back.images[1].size, h.images[1].size);
  for (size_t cut = 0; cut < out.size(); ++cut) {
    Reader partial(out.data().data(), cut);
    Hello ignored;
    EXPECT_FALSE(decode(partial, &ignored)) << cut;
  }
  h.images.resize(kMaxKeptImages + 1);
  Writer over;
  encode(h, over);
  Reader too_many(over.data());
  EXPECT_FALSE(decode(too_many, &back));
}

// What a handshake's field types cannot say, decode() checks: strings of
// at most 4 KiB, a presence byte of 0 or 1, an answer flag per attribute.
TEST(Handshake, BoundsTheTypesCannotSayAreChecked) {
  auto hello_decodes = [](const Hello& h) {
    Writer w;
    encode(h, w);
    Reader r(w.data());
    Hello back;
    return decode(r, &back);
  };
  Hello h{42, 13000, "token", "program"};
  EXPECT_TRUE(hello_decodes(h));
  h.token = std::string(4097, 't');
  EXPECT_FALSE(hello_decodes(h)) << "a token past 4 KiB";
  h.token = "token";
  h.visible_set = 2;
  EXPECT_FALSE(hello_decodes(h)) << "a presence byte of 2";

  Welcome w;
  DeviceInfo d;
  d.attrs = {1, 2, 3};
  d.attr_ok = {1, 0};
  w.devices.push_back(d);
  Writer out;
  encode(w, out);
  Reader r(out.data());
  Welcome back;
  EXPECT_FALSE(decode(r, &back)) << "three attributes, two answer flags";
}

TEST(IpcHandle, RoundTripsAndRefusesOtherBytes) {
  scuda::protocol::IpcHandle h;
  h.kind = scuda::protocol::IpcKind::kPool;
  h.ref.pid = 4242;
  h.ref.id = 7;
  for (size_t i = 0; i < h.ref.secret.size(); ++i) h.ref.secret[i] = static_cast<uint8_t>(i * 13);
  h.offset = 4096;
  h.size = 2u << 20;
  uint8_t bytes[scuda::protocol::kIpcHandleBytes];
  scuda::protocol::encode_ipc_handle(h, bytes);
  const auto back = scuda::protocol::decode_ipc_handle(bytes);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->kind, h.kind);
  EXPECT_EQ(back->ref.pid, 4242u);
  EXPECT_EQ(back->ref.id, 7u);
  EXPECT_EQ(back->ref.secret, h.ref.secret);
  EXPECT_EQ(back->offset, 4096u);
  EXPECT_EQ(back->size, 2u << 20);
  uint8_t other[scuda::protocol::kIpcHandleBytes] = {};  // a driver's handle, say
  EXPECT_FALSE(scuda::protocol::decode_ipc_handle(other).has_value());
  bytes[12] = 9;  // no such kind
  EXPECT_FALSE(scuda::protocol::decode_ipc_handle(bytes).has_value());
}

TEST(Handshake, TokensCompareByContent) {
  EXPECT_TRUE(tokens_equal("abc", "abc"));
  EXPECT_FALSE(tokens_equal("abc", "abd"));
  EXPECT_FALSE(tokens_equal("abc", "abcd"));
  EXPECT_FALSE(tokens_equal("", "a"));
}

}  // namespace
}  // namespace scuda::protocol
