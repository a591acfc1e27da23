// End to end: 2D/3D copies, arrays, texture and surface objects and
// cooperative launches, from the stand-in libcuda through a real `scuda
// server` to the driver test double (host RAM; nothing runs on a GPU).
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "primary_context_test.h"
#include "shared_server.h"

extern "C" uint64_t scuda_replies_awaited();

namespace {

uint8_t pattern(size_t i) { return static_cast<uint8_t>(i * 131 + 17); }

std::vector<uint8_t> patterned(size_t size) {
  std::vector<uint8_t> v(size);
  for (size_t i = 0; i < size; ++i) v[i] = pattern(i);
  return v;
}

class CopiesTest : public scuda::test::PrimaryContextTest {
 protected:
  // Device memory of `size` bytes, every byte `fill`.
  CUdeviceptr alloc(size_t size, uint8_t fill) {
    CUdeviceptr d = 0;
    EXPECT_EQ(cuMemAlloc(&d, size), CUDA_SUCCESS);
    EXPECT_EQ(cuMemsetD8(d, fill, size), CUDA_SUCCESS);
    return d;
  }
  std::vector<uint8_t> read(CUdeviceptr d, size_t size) {
    std::vector<uint8_t> out(size);
    EXPECT_EQ(cuMemcpyDtoH(out.data(), d, size), CUDA_SUCCESS);
    return out;
  }
};

CUDA_MEMCPY2D host_to_device_2d(const void* src, size_t src_pitch, CUdeviceptr dst,
                                size_t dst_pitch) {
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = src;
  c.srcPitch = src_pitch;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = dst;
  c.dstPitch = dst_pitch;
  return c;
}

CUDA_MEMCPY2D device_to_host_2d(CUdeviceptr src, size_t src_pitch, void* dst, size_t dst_pitch) {
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c.srcDevice = src;
  c.srcPitch = src_pitch;
  c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.dstHost = dst;
  c.dstPitch = dst_pitch;
  return c;
}

// A batch of copies in every direction, issued on a stream: each lands.
TEST_F(CopiesTest, ABatchOfCopiesMovesEachEntry) {
  const size_t n = 3 << 20;  // over a chunk
  std::vector<uint8_t> up(n), down(n, 0);
  for (size_t i = 0; i < n; ++i) up[i] = static_cast<uint8_t>(i * 13 + 5);
  CUdeviceptr first = 0, second = 0;
  ASSERT_EQ(cuMemAlloc(&first, n), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&second, n), CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUdeviceptr dsts[3] = {first, second, reinterpret_cast<CUdeviceptr>(down.data())};
  CUdeviceptr srcs[3] = {reinterpret_cast<CUdeviceptr>(up.data()), first, second};
  size_t sizes[3] = {n, n, n};
  CUmemcpyAttributes attrs[2] = {};
  attrs[0].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  attrs[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
  size_t firsts[2] = {0, 2};
  ASSERT_EQ(cuMemcpyBatchAsync(dsts, srcs, sizes, 3, attrs, firsts, 2, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_EQ(down, up);
  size_t past[2] = {0, 3};
  EXPECT_EQ(cuMemcpyBatchAsync(dsts, srcs, sizes, 3, attrs, past, 2, stream),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpyBatchAsync(dsts, srcs, sizes, 3, attrs, firsts, 2, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(first), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(second), CUDA_SUCCESS);
}

CUmemcpy3DOperand pointer_operand(const void* p, size_t row_length, size_t layer_height) {
  CUmemcpy3DOperand op{};
  op.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  op.op.ptr.ptr = reinterpret_cast<CUdeviceptr>(p);
  op.op.ptr.rowLength = row_length;
  op.op.ptr.layerHeight = layer_height;
  return op;
}

CUmemcpy3DOperand array_operand(CUarray a, size_t x, size_t y, size_t z) {
  CUmemcpy3DOperand op{};
  op.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;
  op.op.array.array = a;
  op.op.array.offset = {x, y, z};
  return op;
}

// A batch of 3D copies: a box of host floats up into an array at an offset,
// then out of the array into a tightly packed host box, in elements.
TEST_F(CopiesTest, ABatchOfThreeDCopiesMovesBoxesInElements) {
  const size_t w = 8, h = 4, d = 3, row = 10, layer = 6;
  std::vector<float> up(row * layer * d);
  for (size_t i = 0; i < up.size(); ++i) up[i] = static_cast<float>(i);
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  desc.Width = 16, desc.Height = 8, desc.Depth = 4;
  desc.Format = CU_AD_FORMAT_FLOAT, desc.NumChannels = 1;
  CUarray a = nullptr;
  ASSERT_EQ(cuArray3DCreate(&a, &desc), CUDA_SUCCESS);
  std::vector<float> down(w * h * d, -1.0f);
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUDA_MEMCPY3D_BATCH_OP ops[2] = {};
  ops[0].src = pointer_operand(up.data(), row, layer);
  ops[0].dst = array_operand(a, 2, 1, 1);
  ops[1].src = array_operand(a, 2, 1, 1);
  ops[1].dst = pointer_operand(down.data(), 0, 0);
  for (CUDA_MEMCPY3D_BATCH_OP& op : ops) {
    op.extent = {w, h, d};
    op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  }
  ASSERT_EQ(cuMemcpy3DBatchAsync(2, ops, 0, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  for (size_t z = 0; z < d; ++z)
    for (size_t y = 0; y < h; ++y)
      for (size_t x = 0; x < w; ++x)
        ASSERT_EQ(down[(z * h + y) * w + x], up[(z * layer + y) * row + x])
            << x << "," << y << "," << z;
  ops[1].dst = pointer_operand(down.data(), w - 1, 0);  // a row shorter than the copy
  EXPECT_EQ(cuMemcpy3DBatchAsync(2, ops, 0, stream), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpy3DBatchAsync(2, ops, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
  EXPECT_EQ(cuArrayDestroy(a), CUDA_SUCCESS);
}

TEST_F(CopiesTest, TwoDCopiesMoveOnlyTheDescribedRowsIntoTheirPitches) {
  const size_t src_pitch = 400, dev_pitch = 512, rows = 8, width = 200, height = 5;
  const std::vector<uint8_t> src = patterned(src_pitch * rows);
  const CUdeviceptr d = alloc(dev_pitch * rows, 0xee);
  CUDA_MEMCPY2D up = host_to_device_2d(src.data(), src_pitch, d, dev_pitch);
  up.srcXInBytes = 16, up.srcY = 1, up.dstXInBytes = 32, up.dstY = 2;
  up.WidthInBytes = width, up.Height = height;
  const uint64_t before = scuda_replies_awaited();
  ASSERT_EQ(cuMemcpy2D(&up), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before) << "a copy into a known allocation goes one-way";

  const std::vector<uint8_t> dev = read(d, dev_pitch * rows);
  for (size_t y = 0; y < rows; ++y)
    for (size_t x = 0; x < dev_pitch; ++x) {
      const bool inside = y >= 2 && y < 2 + height && x >= 32 && x < 32 + width;
      const uint8_t want = inside ? src[(y - 2 + 1) * src_pitch + (x - 32 + 16)] : 0xee;
      ASSERT_EQ(dev[y * dev_pitch + x], want) << "row " << y << " byte " << x;
    }

  const size_t back_pitch = 256;
  std::vector<uint8_t> back(back_pitch * rows, 0xcc);
  CUDA_MEMCPY2D down = device_to_host_2d(d, dev_pitch, back.data(), back_pitch);
  down.srcXInBytes = 32, down.srcY = 2, down.dstXInBytes = 8, down.dstY = 3;
  down.WidthInBytes = width, down.Height = height;
  ASSERT_EQ(cuMemcpy2D(&down), CUDA_SUCCESS);
  for (size_t y = 0; y < rows; ++y)
    for (size_t x = 0; x < back_pitch; ++x) {
      const bool inside = y >= 3 && y < 3 + height && x >= 8 && x < 8 + width;
      const uint8_t want = inside ? src[(y - 3 + 1) * src_pitch + (x - 8 + 16)] : 0xcc;
      ASSERT_EQ(back[y * back_pitch + x], want) << "row " << y << " byte " << x;
    }
  cuMemFree(d);
}

TEST_F(CopiesTest, TwoDCopiesSplitRowsAndLongRowsAcrossChunks) {
  // 5 rows of 3 MiB: boxes of two rows; then rows of 9 MiB: parts of rows.
  for (size_t width : {size_t{3} << 20, (size_t{9} << 20) + 5}) {
    const size_t pitch = width + 64, height = width > (8u << 20) ? 2 : 5;
    const std::vector<uint8_t> src = patterned(pitch * height);
    const CUdeviceptr d = alloc(width * height, 0);
    CUDA_MEMCPY2D up = host_to_device_2d(src.data(), pitch, d, width);
    up.WidthInBytes = width, up.Height = height;
    ASSERT_EQ(cuMemcpy2D(&up), CUDA_SUCCESS);
    std::vector<uint8_t> back(pitch * height, 0);
    CUDA_MEMCPY2D down = device_to_host_2d(d, width, back.data(), pitch);
    down.WidthInBytes = width, down.Height = height;
    ASSERT_EQ(cuMemcpy2D(&down), CUDA_SUCCESS);
    for (size_t y = 0; y < height; ++y)
      ASSERT_EQ(std::memcmp(&back[y * pitch], &src[y * pitch], width), 0) << width << " row " << y;
    cuMemFree(d);
  }
}

TEST_F(CopiesTest, ThreeDCopiesHonourOffsetsPitchesAndSliceHeights) {
  const size_t dev_pitch = 64, dev_height = 10, dev_depth = 6;
  const size_t src_pitch = 48, src_height = 12, src_depth = 5;
  const size_t w = 20, h = 4, d = 3;
  const std::vector<uint8_t> src = patterned(src_pitch * src_height * src_depth);
  const CUdeviceptr dev = alloc(dev_pitch * dev_height * dev_depth, 0);
  CUDA_MEMCPY3D up{};
  up.srcMemoryType = CU_MEMORYTYPE_HOST, up.srcHost = src.data();
  up.srcPitch = src_pitch, up.srcHeight = src_height;
  up.srcXInBytes = 5, up.srcY = 2, up.srcZ = 1;
  up.dstMemoryType = CU_MEMORYTYPE_DEVICE, up.dstDevice = dev;
  up.dstPitch = dev_pitch, up.dstHeight = dev_height;
  up.dstXInBytes = 10, up.dstY = 3, up.dstZ = 2;
  up.WidthInBytes = w, up.Height = h, up.Depth = d;
  ASSERT_EQ(cuMemcpy3D(&up), CUDA_SUCCESS);

  const std::vector<uint8_t> all = read(dev, dev_pitch * dev_height * dev_depth);
  size_t copied = 0;
  for (size_t z = 0; z < dev_depth; ++z)
    for (size_t y = 0; y < dev_height; ++y)
      for (size_t x = 0; x < dev_pitch; ++x) {
        const bool inside = z >= 2 && z < 2 + d && y >= 3 && y < 3 + h && x >= 10 && x < 10 + w;
        const size_t from =
            (z - 2 + 1) * src_pitch * src_height + (y - 3 + 2) * src_pitch + x - 10 + 5;
        const uint8_t got = all[(z * dev_height + y) * dev_pitch + x];
        ASSERT_EQ(got, inside ? src[from] : 0) << z << "," << y << "," << x;
        copied += inside;
      }
  EXPECT_EQ(copied, w * h * d);

  // Back out through a unified address, into a host box of its own layout.
  const size_t out_pitch = 32, out_height = 6;
  std::vector<uint8_t> out(out_pitch * out_height * d, 0xcc);
  CUDA_MEMCPY3D down{};
  down.srcMemoryType = CU_MEMORYTYPE_UNIFIED, down.srcDevice = dev;
  down.srcPitch = dev_pitch, down.srcHeight = dev_height;
  down.srcXInBytes = 10, down.srcY = 3, down.srcZ = 2;
  down.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  down.dstDevice = reinterpret_cast<CUdeviceptr>(out.data());
  down.dstPitch = out_pitch, down.dstHeight = out_height, down.dstY = 1;
  down.WidthInBytes = w, down.Height = h, down.Depth = d;
  ASSERT_EQ(cuMemcpy3D(&down), CUDA_SUCCESS);
  for (size_t z = 0; z < d; ++z)
    for (size_t y = 0; y < out_height; ++y)
      for (size_t x = 0; x < out_pitch; ++x) {
        const bool inside = y >= 1 && y < 1 + h && x < w;
        const size_t from = (z + 1) * src_pitch * src_height + (y - 1 + 2) * src_pitch + x + 5;
        ASSERT_EQ(out[(z * out_height + y) * out_pitch + x], inside ? src[from] : 0xcc)
            << z << "," << y << "," << x;
      }
  cuMemFree(dev);
}

TEST_F(CopiesTest, AsyncTwoDCopyToHostIsDeliveredAtTheNextWait) {
  const size_t pitch = 128, rows = 6;
  const std::vector<uint8_t> src = patterned(pitch * rows);
  const CUdeviceptr d = alloc(pitch * rows, 0);
  ASSERT_EQ(cuMemcpyHtoD(d, src.data(), src.size()), CUDA_SUCCESS);
  CUstream s = nullptr;
  ASSERT_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  std::vector<uint8_t> back(96 * rows, 0xcc);
  CUDA_MEMCPY2D down = device_to_host_2d(d, pitch, back.data(), 96);
  down.srcXInBytes = 4, down.WidthInBytes = 80, down.Height = rows;
  const uint64_t before = scuda_replies_awaited();
  ASSERT_EQ(cuMemcpy2DAsync(&down, s), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before) << "the async copy waited for its reply";
  EXPECT_EQ(back, std::vector<uint8_t>(back.size(), 0xcc)) << "delivered before any wait";
  ASSERT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  for (size_t y = 0; y < rows; ++y)
    for (size_t x = 0; x < 96; ++x)
      ASSERT_EQ(back[y * 96 + x], x < 80 ? src[y * pitch + x + 4] : 0xcc) << y << "," << x;
  cuStreamDestroy(s);
  cuMemFree(d);
}

TEST_F(CopiesTest, MalformedDescriptorsAreRefusedAndTheSessionGoesOn) {
  std::vector<uint8_t> host(1024, 1);
  const CUdeviceptr d = alloc(1024, 0);
  CUDA_MEMCPY2D c = host_to_device_2d(host.data(), 64, d, 128);
  c.WidthInBytes = 65, c.Height = 2;  // wider than the host pitch
  EXPECT_EQ(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
  c.WidthInBytes = 60, c.srcXInBytes = 8;  // runs past the host pitch
  EXPECT_EQ(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
  c = device_to_host_2d(d, 64, host.data(), 256);
  c.WidthInBytes = 100, c.Height = 2;  // wider than the device pitch: the driver's answer
  EXPECT_EQ(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
  c.srcMemoryType = static_cast<CUmemorytype>(9);
  EXPECT_EQ(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpy2D(nullptr), CUDA_ERROR_INVALID_VALUE);
  CUDA_MEMCPY3D three{};
  three.srcMemoryType = CU_MEMORYTYPE_HOST, three.srcHost = host.data();
  three.srcPitch = 64, three.srcHeight = 2;  // slices shorter than the copy
  three.dstMemoryType = CU_MEMORYTYPE_DEVICE, three.dstDevice = d;
  three.dstPitch = 64, three.dstHeight = 4;
  three.WidthInBytes = 64, three.Height = 4, three.Depth = 2;
  EXPECT_EQ(cuMemcpy3D(&three), CUDA_ERROR_INVALID_VALUE);
  const std::vector<uint8_t> good = patterned(256);
  ASSERT_EQ(cuMemcpyHtoD(d, good.data(), good.size()), CUDA_SUCCESS);
  EXPECT_EQ(read(d, 256), good);
  cuMemFree(d);
}

TEST_F(CopiesTest, PeerCopiesNameContextsByIdAndUnalignedCopiesRun) {
  const std::vector<uint8_t> src = patterned(17 * 4);
  const CUdeviceptr d = alloc(64 * 4, 0);
  CUDA_MEMCPY3D_PEER peer{};
  peer.srcMemoryType = CU_MEMORYTYPE_HOST, peer.srcHost = src.data(), peer.srcPitch = 17;
  peer.srcContext = ctx_;
  peer.dstMemoryType = CU_MEMORYTYPE_DEVICE, peer.dstDevice = d, peer.dstPitch = 64;
  peer.dstHeight = 4, peer.dstContext = ctx_;
  peer.WidthInBytes = 17, peer.Height = 4, peer.Depth = 1;
  ASSERT_EQ(cuMemcpy3DPeer(&peer), CUDA_SUCCESS);
  std::vector<uint8_t> back(17 * 4, 0);
  CUDA_MEMCPY2D down = device_to_host_2d(d, 64, back.data(), 17);
  down.WidthInBytes = 17, down.Height = 4;
  ASSERT_EQ(cuMemcpy2DUnaligned(&down), CUDA_SUCCESS);
  EXPECT_EQ(back, src);

  // Out of device memory the copy waits, so a context the session does not
  // know is refused at once.
  CUDA_MEMCPY3D_PEER out{};
  out.srcMemoryType = CU_MEMORYTYPE_DEVICE, out.srcDevice = d, out.srcPitch = 64;
  out.srcHeight = 4, out.srcContext = reinterpret_cast<CUcontext>(uintptr_t{0xbad0});
  out.dstMemoryType = CU_MEMORYTYPE_HOST, out.dstHost = back.data(), out.dstPitch = 17;
  out.dstHeight = 4, out.dstContext = ctx_;
  out.WidthInBytes = 17, out.Height = 4, out.Depth = 1;
  EXPECT_EQ(cuMemcpy3DPeer(&out), CUDA_ERROR_INVALID_CONTEXT);
  out.srcContext = ctx_;
  out.dstArray = reinterpret_cast<CUarray>(uintptr_t{0xbad0});  // unused by a host side
  std::fill(back.begin(), back.end(), 0);
  ASSERT_EQ(cuMemcpy3DPeer(&out), CUDA_SUCCESS);
  EXPECT_EQ(back, src);
  cuMemFree(d);
}

TEST_F(CopiesTest, HostToHostCopiesStayOnTheClient) {
  const std::vector<uint8_t> src = patterned(30 * 3);
  std::vector<uint8_t> dst(40 * 3, 0xcc);
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_UNIFIED, c.srcDevice = reinterpret_cast<CUdeviceptr>(src.data());
  c.srcPitch = 30;
  c.dstMemoryType = CU_MEMORYTYPE_HOST, c.dstHost = dst.data(), c.dstPitch = 40;
  c.WidthInBytes = 25, c.Height = 3;
  const uint64_t before = scuda_replies_awaited();
  ASSERT_EQ(cuMemcpy2D(&c), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before);
  for (size_t y = 0; y < 3; ++y)
    for (size_t x = 0; x < 40; ++x)
      ASSERT_EQ(dst[y * 40 + x], x < 25 ? src[y * 30 + x] : 0xcc) << y << "," << x;
}

CUarray make_array(size_t width, size_t height, size_t depth, CUarray_format format,
                   unsigned channels) {
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  desc.Width = width, desc.Height = height, desc.Depth = depth;
  desc.Format = format, desc.NumChannels = channels;
  CUarray a = nullptr;
  EXPECT_EQ(cuArray3DCreate(&a, &desc), CUDA_SUCCESS);
  return a;
}

TEST_F(CopiesTest, ArraysRoundTripThroughTwoDAndThreeDCopies) {
  // 16 x 8 float2 elements: rows of 128 bytes.
  CUarray a = make_array(16, 8, 0, CU_AD_FORMAT_FLOAT, 2);
  const std::vector<uint8_t> src = patterned(160 * 8);
  CUDA_MEMCPY2D up{};
  up.srcMemoryType = CU_MEMORYTYPE_HOST, up.srcHost = src.data(), up.srcPitch = 160;
  up.dstMemoryType = CU_MEMORYTYPE_ARRAY, up.dstArray = a;
  up.WidthInBytes = 128, up.Height = 8;
  const uint64_t before = scuda_replies_awaited();
  ASSERT_EQ(cuMemcpy2D(&up), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before) << "a copy into an array it fits goes one-way";
  up.dstY = 1;  // one row past the array's end: the copy waits for the driver's answer
  EXPECT_EQ(cuMemcpy2D(&up), CUDA_ERROR_INVALID_VALUE);
  up.dstY = 0;
  std::vector<uint8_t> back(136 * 8, 0xcc);
  CUDA_MEMCPY2D down{};
  down.srcMemoryType = CU_MEMORYTYPE_ARRAY, down.srcArray = a;
  down.dstMemoryType = CU_MEMORYTYPE_HOST, down.dstHost = back.data(), down.dstPitch = 136;
  down.WidthInBytes = 128, down.Height = 8;
  ASSERT_EQ(cuMemcpy2D(&down), CUDA_SUCCESS);
  for (size_t y = 0; y < 8; ++y)
    for (size_t x = 0; x < 136; ++x)
      ASSERT_EQ(back[y * 136 + x], x < 128 ? src[y * 160 + x] : 0xcc) << y << "," << x;
  down.srcY = 7, down.Height = 2;  // past the array's last row
  EXPECT_EQ(cuMemcpy2D(&down), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuArrayDestroy(a), CUDA_SUCCESS);

  // A 3D array (8 x 4 x 3 bytes), filled at an offset, read back whole.
  CUarray v = make_array(8, 4, 3, CU_AD_FORMAT_UNSIGNED_INT8, 1);
  const std::vector<uint8_t> box = patterned(4 * 2 * 2);
  CUDA_MEMCPY3D in{};
  in.srcMemoryType = CU_MEMORYTYPE_HOST, in.srcHost = box.data(), in.srcPitch = 4, in.srcHeight = 2;
  in.dstMemoryType = CU_MEMORYTYPE_ARRAY, in.dstArray = v;
  in.dstXInBytes = 3, in.dstY = 1, in.dstZ = 1;
  in.WidthInBytes = 4, in.Height = 2, in.Depth = 2;
  ASSERT_EQ(cuMemcpy3D(&in), CUDA_SUCCESS);
  std::vector<uint8_t> whole(8 * 4 * 3, 0xcc);
  CUDA_MEMCPY3D out{};
  out.srcMemoryType = CU_MEMORYTYPE_ARRAY, out.srcArray = v;
  out.dstMemoryType = CU_MEMORYTYPE_HOST, out.dstHost = whole.data(), out.dstPitch = 8;
  out.dstHeight = 4;
  out.WidthInBytes = 8, out.Height = 4, out.Depth = 3;
  ASSERT_EQ(cuMemcpy3D(&out), CUDA_SUCCESS);
  for (size_t z = 0; z < 3; ++z)
    for (size_t y = 0; y < 4; ++y)
      for (size_t x = 0; x < 8; ++x) {
        const bool inside = z >= 1 && y >= 1 && y < 3 && x >= 3 && x < 7;
        const uint8_t want = inside ? box[((z - 1) * 2 + y - 1) * 4 + x - 3] : 0;
        ASSERT_EQ(whole[(z * 4 + y) * 8 + x], want) << z << "," << y << "," << x;
      }
  EXPECT_EQ(cuArrayDestroy(v), CUDA_SUCCESS);
}

TEST_F(CopiesTest, OneDArrayCopiesWithOffsetsInEveryDirection) {
  CUarray a = make_array(256, 0, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1);
  CUarray b = make_array(256, 0, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1);
  const std::vector<uint8_t> src = patterned(100);
  const uint64_t before = scuda_replies_awaited();
  ASSERT_EQ(cuMemcpyHtoA(a, 10, src.data(), 100), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before);
  ASSERT_EQ(cuMemcpyAtoA(b, 50, a, 10, 100), CUDA_SUCCESS);
  const CUdeviceptr d = alloc(256, 0);
  ASSERT_EQ(cuMemcpyAtoD(d + 3, b, 50, 100), CUDA_SUCCESS);
  std::vector<uint8_t> got = read(d, 256);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), got.begin() + 3));
  EXPECT_EQ(got[2], 0);
  EXPECT_EQ(got[103], 0);
  ASSERT_EQ(cuMemcpyDtoA(a, 200, d + 3, 50), CUDA_SUCCESS);
  std::vector<uint8_t> tail(50, 0);
  ASSERT_EQ(cuMemcpyAtoH(tail.data(), a, 200, 50), CUDA_SUCCESS);
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), src.begin()));
  CUstream s = nullptr;
  ASSERT_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  std::vector<uint8_t> async_back(100, 0);
  ASSERT_EQ(cuMemcpyAtoHAsync(async_back.data(), b, 50, 100, s), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(async_back, src);
  EXPECT_EQ(cuMemcpyHtoA(a, 200, src.data(), 100), CUDA_ERROR_INVALID_VALUE);  // past the end
  cuStreamDestroy(s);
  cuMemFree(d);
  cuArrayDestroy(a);
  cuArrayDestroy(b);
}

TEST_F(CopiesTest, TextureAndSurfaceObjectsNameArraysByTheClientsHandles) {
  CUarray a = make_array(32, 32, 0, CU_AD_FORMAT_FLOAT, 1);
  CUDA_RESOURCE_DESC res{};
  res.resType = CU_RESOURCE_TYPE_ARRAY;
  res.res.array.hArray = a;
  CUDA_TEXTURE_DESC tex{};
  tex.addressMode[0] = tex.addressMode[1] = CU_TR_ADDRESS_MODE_CLAMP;
  tex.filterMode = CU_TR_FILTER_MODE_LINEAR;
  tex.flags = CU_TRSF_NORMALIZED_COORDINATES;
  CUDA_RESOURCE_VIEW_DESC view{};
  view.format = CU_RES_VIEW_FORMAT_FLOAT_1X32;
  view.width = 32, view.height = 32;
  CUtexObject t = 0;
  ASSERT_EQ(cuTexObjectCreate(&t, &res, &tex, &view), CUDA_SUCCESS);
  EXPECT_NE(t, 0u);

  CUDA_RESOURCE_DESC got{};
  ASSERT_EQ(cuTexObjectGetResourceDesc(&got, t), CUDA_SUCCESS);
  EXPECT_EQ(got.resType, CU_RESOURCE_TYPE_ARRAY);
  EXPECT_EQ(got.res.array.hArray, a);
  CUDA_TEXTURE_DESC got_tex{};
  ASSERT_EQ(cuTexObjectGetTextureDesc(&got_tex, t), CUDA_SUCCESS);
  EXPECT_EQ(got_tex.filterMode, CU_TR_FILTER_MODE_LINEAR);
  EXPECT_EQ(got_tex.flags, unsigned{CU_TRSF_NORMALIZED_COORDINATES});
  CUDA_RESOURCE_VIEW_DESC got_view{};
  ASSERT_EQ(cuTexObjectGetResourceViewDesc(&got_view, t), CUDA_SUCCESS);
  EXPECT_EQ(got_view.width, 32u);

  CUsurfObject surf = 0;
  ASSERT_EQ(cuSurfObjectCreate(&surf, &res), CUDA_SUCCESS);
  CUDA_RESOURCE_DESC surf_res{};
  ASSERT_EQ(cuSurfObjectGetResourceDesc(&surf_res, surf), CUDA_SUCCESS);
  EXPECT_EQ(surf_res.res.array.hArray, a);
  EXPECT_EQ(cuSurfObjectDestroy(surf), CUDA_SUCCESS);

  // Linear memory passes as a device address.
  const CUdeviceptr d = alloc(4096, 0);
  CUDA_RESOURCE_DESC linear{};
  linear.resType = CU_RESOURCE_TYPE_LINEAR;
  linear.res.linear.devPtr = d;
  linear.res.linear.format = CU_AD_FORMAT_FLOAT;
  linear.res.linear.numChannels = 1;
  linear.res.linear.sizeInBytes = 4096;
  CUtexObject lt = 0;
  ASSERT_EQ(cuTexObjectCreate(&lt, &linear, &tex, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuTexObjectGetResourceDesc(&got, lt), CUDA_SUCCESS);
  EXPECT_EQ(got.res.linear.devPtr, d);

  CUDA_RESOURCE_DESC bogus = res;
  bogus.res.array.hArray = reinterpret_cast<CUarray>(uintptr_t{0xdead0});
  CUtexObject none = 0;
  EXPECT_EQ(cuTexObjectCreate(&none, &bogus, &tex, nullptr), CUDA_ERROR_INVALID_HANDLE);
  const uint64_t before = scuda_replies_awaited();
  EXPECT_EQ(cuTexObjectDestroy(t), CUDA_SUCCESS);
  EXPECT_EQ(cuTexObjectDestroy(lt), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before) << "destroys go one-way";
  EXPECT_EQ(cuTexObjectGetResourceDesc(&got, t), CUDA_ERROR_INVALID_HANDLE);
  cuMemFree(d);
  cuArrayDestroy(a);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// cuLaunchCooperativeKernelMultiDevice is deprecated, and still served.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST_F(CopiesTest, CooperativeLaunchesCarryTheCooperativeAttribute) {
  const char module[] = "scuda-double-module\nkernel fill 8 4 4\n";
  CUmodule mod = nullptr;
  CUfunction fill = nullptr;
  ASSERT_EQ(cuModuleLoadData(&mod, module), CUDA_SUCCESS);
  ASSERT_EQ(cuModuleGetFunction(&fill, mod, "fill"), CUDA_SUCCESS);
  const CUdeviceptr d = alloc(64 * sizeof(unsigned), 0);
  CUdeviceptr out = d;
  unsigned value = 0x600d;
  int n = 64;
  void* params[] = {&out, &value, &n};
  ASSERT_EQ(cuLaunchCooperativeKernel(fill, 3, 1, 1, 32, 1, 1, 0, nullptr, params), CUDA_SUCCESS);
  std::vector<unsigned> got(64);
  ASSERT_EQ(cuMemcpyDtoH(got.data(), d, 64 * sizeof(unsigned)), CUDA_SUCCESS);
  EXPECT_EQ(got, std::vector<unsigned>(64, 0x600d));
  const std::string log = read_file(scuda::test::shared_server().launch_log());
  EXPECT_NE(log.find("launch fill grid=3,1,1 block=32,1,1 shmem=0 params="), std::string::npos);
  EXPECT_NE(log.find(" cooperative\n"), std::string::npos) << log;
  // The deprecated multi-device form: each entry a cooperative launch on
  // its stream, one entry per device.
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  value = 0xbeef;
  CUDA_LAUNCH_PARAMS multi[2] = {};
  multi[0] = {fill, 2, 1, 1, 32, 1, 1, 0, stream, params};
  const size_t before = read_file(scuda::test::shared_server().launch_log()).size();
  ASSERT_EQ(cuLaunchCooperativeKernelMultiDevice(multi, 1, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(got.data(), d, 64 * sizeof(unsigned)), CUDA_SUCCESS);
  EXPECT_EQ(got, std::vector<unsigned>(64, 0xbeef));
  const std::string added = read_file(scuda::test::shared_server().launch_log()).substr(before);
  EXPECT_NE(added.find("launch fill grid=2,1,1 block=32,1,1 shmem=0 params="), std::string::npos);
  EXPECT_NE(added.find(" cooperative\n"), std::string::npos) << added;
  multi[1] = multi[0];  // two entries on one device: refused
  EXPECT_EQ(cuLaunchCooperativeKernelMultiDevice(multi, 2, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchCooperativeKernelMultiDevice(multi, 1, 0x80), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
  cuMemFree(d);
  cuModuleUnload(mod);
}
#pragma GCC diagnostic pop

}  // namespace
