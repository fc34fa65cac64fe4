// measure.cpp - the ping-pong and reduction timing behind measure_cost_params.
#include "comm/tuning/measure.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "comm/core/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {
namespace {

using Clock = std::chrono::steady_clock;

// Tag indices: ping-pong round i of the small series uses 2i (ping) and 2i+1 (pong); the large
// series follows; the broadcast of the result uses kResultIndex.
constexpr uint64_t kLargeFirstIndex = 2 * (kSmallWarmup + kSmallRounds);
constexpr uint64_t kResultIndex = kMeasureTagIndices - 1;
static_assert(kLargeFirstIndex + 2 * (kLargeWarmup + kLargeRounds) <= kResultIndex,
              "ping-pong indices stay below the result's");

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// The buffer and requests of one ping-pong series. They live on the heap and are leaked on
// purpose if a wait fails: the transport may still hold pointers to them (as in pipeline.h).
struct Series {
  std::vector<unsigned char> buf;
  Request send, recv;
};

// Rank 0's side of one series: round trips to rank 1; *one_way_s = median round trip / 2.
plx_result_t ping(Transport& transport, uint64_t tag_base, uint64_t first_index, size_t bytes,
                  int warmup, int rounds, Series& s, double* one_way_s) {
  s.buf.assign(bytes, 0x5a);
  std::vector<double> times;
  Request* reqs[] = {&s.recv, &s.send};
  for (int i = 0; i < warmup + rounds; ++i) {
    const uint64_t index = first_index + 2 * static_cast<uint64_t>(i);
    const auto start = Clock::now();
    PLX_CHECK(transport.post_recv(1, tag_base | (index + 1), s.buf.data(), bytes, s.recv));
    PLX_CHECK(transport.post_send(1, tag_base | index, s.buf.data(), bytes, s.send));
    PLX_CHECK(transport.wait_all(reqs, 2));
    if (i >= warmup) times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  *one_way_s = median(times) / 2;
  return PLX_SUCCESS;
}

// Rank 1's side: echo every message back.
plx_result_t pong(Transport& transport, uint64_t tag_base, uint64_t first_index, size_t bytes,
                  int total, Series& s) {
  s.buf.assign(bytes, 0);
  Request* recv_reqs[] = {&s.recv};
  Request* send_reqs[] = {&s.send};
  for (int i = 0; i < total; ++i) {
    const uint64_t index = first_index + 2 * static_cast<uint64_t>(i);
    PLX_CHECK(transport.post_recv(0, tag_base | index, s.buf.data(), bytes, s.recv));
    PLX_CHECK(transport.wait_all(recv_reqs, 1));
    PLX_CHECK(transport.post_send(0, tag_base | (index + 1), s.buf.data(), bytes, s.send));
    PLX_CHECK(transport.wait_all(send_reqs, 1));
  }
  return PLX_SUCCESS;
}

// Both series on rank 0 (*small_s, *large_s set) or on rank 1.
plx_result_t ping_pong(Transport& transport, uint64_t tag_base, double* small_s,
                       double* large_s) {
  auto series = std::make_unique<Series>();
  plx_result_t rc = PLX_SUCCESS;
  if (transport.rank() == 0) {
    rc = ping(transport, tag_base, 0, kSmallBytes, kSmallWarmup, kSmallRounds, *series, small_s);
    if (rc == PLX_SUCCESS) {
      rc = ping(transport, tag_base, kLargeFirstIndex, kLargeBytes, kLargeWarmup, kLargeRounds,
                *series, large_s);
    }
  } else {
    rc = pong(transport, tag_base, 0, kSmallBytes, kSmallWarmup + kSmallRounds, *series);
    if (rc == PLX_SUCCESS) {
      rc = pong(transport, tag_base, kLargeFirstIndex, kLargeBytes, kLargeWarmup + kLargeRounds,
                *series);
    }
  }
  if (rc != PLX_SUCCESS) (void)series.release();  // leaked on purpose, see Series
  return rc;
}

// Seconds per byte of a float32 sum reduce_into over kGammaBytes: the fastest of a few passes.
double time_gamma() {
  const size_t count = kGammaBytes / sizeof(float);
  std::vector<float> dst(count, 0.0f), src(count, 1.0f);
  double best = 0;
  for (int pass = 0; pass < 5; ++pass) {
    const auto start = Clock::now();
    reduce_into(dst.data(), src.data(), count, PLX_FLOAT32, PLX_SUM);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (pass == 1 || (pass > 1 && seconds < best)) best = seconds;  // pass 0 warms up
  }
  return best / static_cast<double>(kGammaBytes);
}

double clamp(double value, double lo, double hi) {
  return std::isfinite(value) ? std::clamp(value, lo, hi) : lo;
}

}  // namespace

plx_result_t measure_cost_params(Transport& transport, uint64_t tag_base, CostParams* out) {
  const int rank = transport.rank();
  if (!out) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("measure_cost_params: rank {}: out is NULL", rank));
  }
  if (transport.size() == 1) {
    *out = kDefaultCostParams;
    return PLX_SUCCESS;
  }
  double result[3] = {0, 0, 0};  // alpha, beta, gamma: rank 0 fills, the broadcast delivers
  if (rank == 0) {
    double small_s = 0, large_s = 0;
    PLX_CHECK(ping_pong(transport, tag_base, &small_s, &large_s));
    const double beta = (large_s - small_s) / static_cast<double>(kLargeBytes - kSmallBytes);
    result[0] = clamp(small_s - static_cast<double>(kSmallBytes) * std::max(beta, 0.0),
                      kMinAlphaS, kMaxAlphaS);
    result[1] = clamp(beta, kMinBetaSPerByte, kMaxBetaSPerByte);
    result[2] = clamp(time_gamma(), kMinGammaSPerByte, kMaxGammaSPerByte);
  } else if (rank == 1) {
    PLX_CHECK(ping_pong(transport, tag_base, nullptr, nullptr));
  }
  CollArgs args;
  args.collective = Collective::Broadcast;
  args.sendbuf = result;
  args.recvbuf = result;
  args.count = 3;
  args.datatype = PLX_FLOAT64;
  args.root = 0;
  PLX_CHECK(binomial_broadcast(transport, tag_base | kResultIndex, args));
  *out = CostParams{result[0], result[1], result[2]};
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
