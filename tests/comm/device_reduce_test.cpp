// device_reduce_test.cpp - the GPU reduction kernels (comm/device/device_reduce.h) against the CPU
// kernels (comm/reduce/reduce.h), bit for bit.
//
// Every datatype x op, counts 0, 1, 7, 4096+3 and 2^20, with pointers aligned to 16 bytes, all
// offset alike (scalar head, 16-byte packs, scalar tail), offset differently (scalar path) and in
// place; the bytes around dst must stay untouched. Floats must match exactly: both sides round
// once per element per combine, with the same half conversions; only NaN payloads may differ
// (device_test_support.h). One test crosses 2^32 elements. Each test skips without a GPU.
#include "comm/device/device_reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "comm/base/error.h"
#include "comm/reduce/reduce.h"
#include "tests/comm/device_test_support.h"
#include "tests/support/gpu_available.h"

namespace plexus::test {
namespace {

constexpr uint8_t kPoison = 0xa5;
constexpr size_t kGuardElements = 32;  // each buffer holds count + kGuardElements elements

// Element offsets of dst and the sources from their 256-byte-aligned allocations.
struct Placement {
  const char* what;
  size_t dst;
  size_t a;
  size_t b;
  bool in_place;  // dst is a's buffer (dst == a)
};

const Placement kPlacements[] = {
    {"16-byte aligned", 0, 0, 0, false},
    {"all offset by 1 element", 1, 1, 1, false},
    {"all offset by 3 elements", 3, 3, 3, false},
    {"different offsets (scalar path)", 0, 1, 2, false},
    {"in place (dst == a), all offset by 2 elements", 2, 2, 2, true},
    {"in place (dst == a), b offset differently", 5, 5, 1, true},
};

const size_t kCounts[] = {0, 1, 7, 4096 + 3, size_t{1} << 20};

// Three device buffers and a stream, for one datatype.
class DeviceBuffers {
 public:
  DeviceBuffers(plx_datatype_t datatype, size_t max_count)
      : bytes_(comm::datatype_bytes(datatype)),
        total_bytes_((max_count + kGuardElements) * bytes_),
        dst_(total_bytes_),
        a_(total_bytes_),
        b_(total_bytes_) {}
  ~DeviceBuffers() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  void Init() {
    ASSERT_TRUE(dst_.ok() && a_.ok() && b_.ok()) << "cudaMalloc: " << dst_.error();
    PLX_ASSERT_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }

  // Fills all three buffers with kPoison, then puts a and b at their offsets.
  void Upload(const Placement& p, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
    for (const DeviceBuffer* buf : {&dst_, &a_, &b_}) {
      PLX_ASSERT_CUDA(cudaMemset(buf->bytes(), kPoison, total_bytes_));
    }
    PLX_ASSERT_CUDA(cudaMemcpy(a_.bytes() + p.a * bytes_, a.data(), a.size(), cudaMemcpyDefault));
    PLX_ASSERT_CUDA(cudaMemcpy(b_.bytes() + p.b * bytes_, b.data(), b.size(), cudaMemcpyDefault));
    PLX_ASSERT_CUDA(cudaDeviceSynchronize());  // pageable copies may still be in flight
  }

  uint8_t* Dst(const Placement& p) const {
    return (p.in_place ? a_.bytes() : dst_.bytes()) + p.dst * bytes_;
  }
  const uint8_t* A(const Placement& p) const { return a_.bytes() + p.a * bytes_; }
  const uint8_t* B(const Placement& p) const { return b_.bytes() + p.b * bytes_; }

  // Copies dst's whole buffer back; checks the guard bytes; returns dst's count elements.
  void Download(const Placement& p, size_t count, std::vector<uint8_t>* out) {
    std::vector<uint8_t> all(total_bytes_);
    const DeviceBuffer& buf = p.in_place ? a_ : dst_;
    PLX_ASSERT_CUDA(cudaMemcpy(all.data(), buf.bytes(), total_bytes_, cudaMemcpyDefault));
    const size_t begin = p.dst * bytes_;
    const size_t end = begin + count * bytes_;
    if (!p.in_place) {  // in place, the bytes around dst are a's own poison as well
      for (size_t i = 0; i < total_bytes_; ++i) {
        if (i >= begin && i < end) continue;
        ASSERT_EQ(all[i], kPoison) << "byte " << i << " outside dst [" << begin << ", " << end
                                   << ") was written";
      }
    }
    out->assign(all.begin() + begin, all.begin() + end);
  }

  cudaStream_t stream() const { return stream_; }

 private:
  size_t bytes_;
  size_t total_bytes_;
  DeviceBuffer dst_;
  DeviceBuffer a_;
  DeviceBuffer b_;
  cudaStream_t stream_ = nullptr;
};

class DeviceReduceCopy
    : public ::testing::TestWithParam<std::tuple<plx_datatype_t, plx_red_op_t>> {};

TEST_P(DeviceReduceCopy, EqualsCpuKernelBitForBit) {
  PLX_REQUIRE_GPU();
  const auto [datatype, op] = GetParam();
  const size_t bytes = comm::datatype_bytes(datatype);
  DeviceBuffers fx(datatype, kCounts[std::size(kCounts) - 1]);
  ASSERT_NO_FATAL_FAILURE(fx.Init());
  const bool arithmetic = op != PLX_MIN && op != PLX_MAX;
  for (size_t count : kCounts) {
    const std::vector<uint8_t> a = test_values(datatype, count, 1000 + count);
    const std::vector<uint8_t> b = test_values(datatype, count, 2000 + count);
    std::vector<uint8_t> want(count * bytes);
    comm::reduce_copy(want.data(), a.data(), b.data(), count, datatype, op);
    for (const Placement& p : kPlacements) {
      SCOPED_TRACE(std::string(datatype_label(datatype)) + " " + op_label(op) + " count " +
                   std::to_string(count) + ", " + p.what);
      ASSERT_NO_FATAL_FAILURE(fx.Upload(p, a, b));
      ASSERT_EQ(comm::device::reduce_copy(fx.Dst(p), fx.A(p), fx.B(p), count, datatype, op,
                                          fx.stream()),
                PLX_SUCCESS)
          << last_error();
      PLX_ASSERT_CUDA(cudaStreamSynchronize(fx.stream()));
      std::vector<uint8_t> got;
      ASSERT_NO_FATAL_FAILURE(fx.Download(p, count, &got));
      EXPECT_EQ(compare_bits(datatype, got.data(), want.data(), count, arithmetic), "");
    }
  }
}

std::string CaseName(const ::testing::TestParamInfo<std::tuple<plx_datatype_t, plx_red_op_t>>& i) {
  return std::string(datatype_label(std::get<0>(i.param))) + "_" + op_label(std::get<1>(i.param));
}

INSTANTIATE_TEST_SUITE_P(
    AllTypesAndOps, DeviceReduceCopy,
    ::testing::Combine(::testing::Values(PLX_INT8, PLX_UINT8, PLX_INT32, PLX_UINT32, PLX_INT64,
                                         PLX_UINT64, PLX_FLOAT16, PLX_BFLOAT16, PLX_FLOAT32,
                                         PLX_FLOAT64),
                       ::testing::Values(PLX_SUM, PLX_PROD, PLX_MIN, PLX_MAX, PLX_AVG)),
    CaseName);

// The n-ary form: the left fold of the CPU kernel over 1, 2, 3, 5 and 16 sources, with sources
// aligned alike, offset alike, offset differently, and dst == sources[0].
class DeviceReduceSources
    : public ::testing::TestWithParam<std::tuple<plx_datatype_t, plx_red_op_t>> {};

TEST_P(DeviceReduceSources, EqualsCpuLeftFold) {
  PLX_REQUIRE_GPU();
  const auto [datatype, op] = GetParam();
  const size_t bytes = comm::datatype_bytes(datatype);
  const size_t kMaxCount = 65536 + 5;
  const bool arithmetic = op != PLX_MIN && op != PLX_MAX;
  std::vector<std::unique_ptr<DeviceBuffer>> buffers;
  for (int s = 0; s <= comm::device::kMaxReduceSources; ++s) {  // the last one is dst
    buffers.push_back(std::make_unique<DeviceBuffer>((kMaxCount + kGuardElements) * bytes));
    ASSERT_TRUE(buffers.back()->ok()) << "cudaMalloc: " << buffers.back()->error();
  }
  for (int k : {1, 2, 3, 5, 16}) {
    for (size_t count : {size_t{1}, size_t{7}, size_t{4099}, kMaxCount}) {
      std::vector<std::vector<uint8_t>> values;
      for (int s = 0; s < k; ++s) values.push_back(test_values(datatype, count, 31 * s + count));
      std::vector<uint8_t> want = values[0];
      for (int s = 1; s < k; ++s) {
        comm::reduce_copy(want.data(), want.data(), values[s].data(), count, datatype, op);
      }
      for (int layout = 0; layout < 4; ++layout) {
        const char* what[] = {"aligned", "all offset by 1", "offsets s % 3", "dst == sources[0]"};
        SCOPED_TRACE(std::string(datatype_label(datatype)) + " " + op_label(op) + " k " +
                     std::to_string(k) + " count " + std::to_string(count) + ", " + what[layout]);
        std::vector<const void*> sources;
        for (int s = 0; s < k; ++s) {
          const size_t offset = layout == 1 ? 1 : layout == 2 ? s % 3 : 0;
          uint8_t* src = buffers[s]->bytes() + offset * bytes;
          PLX_ASSERT_CUDA(cudaMemcpy(src, values[s].data(), count * bytes, cudaMemcpyDefault));
          sources.push_back(src);
        }
        void* dst = layout == 3 ? const_cast<void*>(sources[0])
                                : buffers.back()->bytes() + (layout == 1 ? 1 : 0) * bytes;
        PLX_ASSERT_CUDA(cudaDeviceSynchronize());
        ASSERT_EQ(comm::device::reduce_sources(dst, sources.data(), k, count, datatype, op,
                                               nullptr),
                  PLX_SUCCESS)
            << last_error();
        PLX_ASSERT_CUDA(cudaDeviceSynchronize());
        std::vector<uint8_t> got(count * bytes);
        PLX_ASSERT_CUDA(cudaMemcpy(got.data(), dst, got.size(), cudaMemcpyDefault));
        EXPECT_EQ(compare_bits(datatype, got.data(), want.data(), count, arithmetic), "");
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllTypesAndOps, DeviceReduceSources,
    ::testing::Combine(::testing::Values(PLX_INT8, PLX_UINT8, PLX_INT32, PLX_UINT32, PLX_INT64,
                                         PLX_UINT64, PLX_FLOAT16, PLX_BFLOAT16, PLX_FLOAT32,
                                         PLX_FLOAT64),
                       ::testing::Values(PLX_SUM, PLX_PROD, PLX_MIN, PLX_MAX)),
    CaseName);

// Every binary16 and bfloat16 bit pattern through widen and narrow: MAX(x, x) is narrow(widen(x)),
// NaNs included (no arithmetic, so the bits must match exactly).
TEST(DeviceReduceHalf, EveryPatternRoundTripsLikeTheCpu) {
  PLX_REQUIRE_GPU();
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  DeviceBuffer src(all.size() * 2), dst(all.size() * 2);
  ASSERT_TRUE(src.ok() && dst.ok());
  PLX_ASSERT_CUDA(cudaMemcpy(src.bytes(), all.data(), all.size() * 2, cudaMemcpyDefault));
  PLX_ASSERT_CUDA(cudaDeviceSynchronize());
  for (plx_datatype_t datatype : {PLX_FLOAT16, PLX_BFLOAT16}) {
    SCOPED_TRACE(datatype_label(datatype));
    std::vector<uint16_t> want(all.size()), got(all.size());
    comm::reduce_copy(want.data(), all.data(), all.data(), all.size(), datatype, PLX_MAX);
    ASSERT_EQ(comm::device::reduce_copy(dst.bytes(), src.bytes(), src.bytes(), all.size(),
                                        datatype, PLX_MAX, nullptr),
              PLX_SUCCESS)
        << last_error();
    PLX_ASSERT_CUDA(cudaDeviceSynchronize());
    PLX_ASSERT_CUDA(cudaMemcpy(got.data(), dst.bytes(), all.size() * 2, cudaMemcpyDefault));
    EXPECT_EQ(compare_bits(datatype, reinterpret_cast<const uint8_t*>(got.data()),
                           reinterpret_cast<const uint8_t*>(want.data()), all.size(), false),
              "");
  }
}

// Indices are size_t: 2^32 + 37 uint8 elements (three 4 GiB buffers), 1 + 2 everywhere. A 32-bit
// index would leave the elements past 2^32 at their initial 0.
TEST(DeviceReduceLarge, CountAbove2To32) {
  PLX_REQUIRE_GPU();
  const size_t count = (size_t{1} << 32) + 37;
  size_t free_bytes = 0, total_bytes = 0;
  PLX_ASSERT_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (free_bytes < 3 * count + (size_t{1} << 30)) {
    GTEST_SKIP() << "needs " << (3 * count >> 20) << " MiB of free GPU memory, " << (free_bytes >> 20)
                 << " MiB free";
  }
  DeviceBuffer a(count), b(count), dst(count + 64);
  ASSERT_TRUE(a.ok() && b.ok() && dst.ok()) << a.error();
  PLX_ASSERT_CUDA(cudaMemset(a.bytes(), 1, count));
  PLX_ASSERT_CUDA(cudaMemset(b.bytes(), 2, count));
  PLX_ASSERT_CUDA(cudaMemset(dst.bytes(), 0, count + 64));
  PLX_ASSERT_CUDA(cudaDeviceSynchronize());
  // dst aligned like the sources (16-byte packs), then 19 bytes in (offset 3 modulo 16, unlike
  // the sources: the scalar path).
  for (size_t dst_offset : {size_t{0}, size_t{19}}) {
    SCOPED_TRACE("dst offset " + std::to_string(dst_offset));
    ASSERT_EQ(comm::device::reduce_copy(dst.bytes() + dst_offset, a.bytes(), b.bytes(), count,
                                        PLX_UINT8, PLX_SUM, nullptr),
              PLX_SUCCESS)
        << last_error();
    PLX_ASSERT_CUDA(cudaDeviceSynchronize());
    const size_t chunk = size_t{256} << 20;
    std::vector<uint8_t> host(chunk);
    for (size_t begin = 0; begin < count; begin += chunk) {
      const size_t n = std::min(chunk, count - begin);
      PLX_ASSERT_CUDA(
          cudaMemcpy(host.data(), dst.bytes() + dst_offset + begin, n, cudaMemcpyDefault));
      const auto bad = std::find_if(host.begin(), host.begin() + n, [](uint8_t v) { return v != 3; });
      ASSERT_EQ(bad, host.begin() + n) << "element " << begin + (bad - host.begin()) << " is "
                                       << int{*bad} << ", want 3";
    }
    PLX_ASSERT_CUDA(cudaMemset(dst.bytes(), 0, count + 64));
    PLX_ASSERT_CUDA(cudaDeviceSynchronize());
  }
}

}  // namespace
}  // namespace plexus::test
