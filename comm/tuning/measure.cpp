// measure.cpp - the ping-pong and reduction timing behind measure_cost_params.
#include "comm/tuning/measure.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/pipeline.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {
namespace {

using Clock = std::chrono::steady_clock;

// Tag indices: ping-pong round i of the small series uses 2i (ping) and 2i+1 (pong); the large
// series follows; a second pair (two levels) uses the same indices plus kSeriesIndices; the
// first pair's result goes to rank 0 with kForwardIndex; the broadcast of the result uses
// kResultIndex.
constexpr uint64_t kLargeFirstIndex = 2 * (kSmallWarmup + kSmallRounds);
constexpr uint64_t kSeriesIndices = kLargeFirstIndex + 2 * (kLargeWarmup + kLargeRounds);
constexpr uint64_t kForwardIndex = 2 * kSeriesIndices;
constexpr uint64_t kResultIndex = kMeasureTagIndices - 1;
static_assert(kForwardIndex < kResultIndex, "ping-pong indices stay below the result's");
// Between hosts the stream takes the large series' indices: kStreamMessages data and one answer
// per round.
static_assert((kStreamWarmup + kStreamRounds) * (kStreamMessages + 1) <=
                  2 * (kLargeWarmup + kLargeRounds),
              "the stream fits the large series' indices");

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
  std::vector<unsigned char> answer = std::vector<unsigned char>(kSmallBytes);  // the stream's
  Request stream[kStreamMessages];                                              // its messages
};

// The pinger's side of one series: round trips to `peer`; *one_way_s = median round trip / 2.
plx_result_t ping(Transport& transport, int peer, uint64_t tag_base, uint64_t first_index,
                  size_t bytes, int warmup, int rounds, Series& s, double* one_way_s) {
  s.buf.assign(bytes, 0x5a);
  std::vector<double> times;
  Request* reqs[] = {&s.recv, &s.send};
  for (int i = 0; i < warmup + rounds; ++i) {
    const uint64_t index = first_index + 2 * static_cast<uint64_t>(i);
    const auto start = Clock::now();
    PLX_CHECK(transport.post_recv(peer, tag_base | (index + 1), s.buf.data(), bytes, s.recv));
    PLX_CHECK(transport.post_send(peer, tag_base | index, s.buf.data(), bytes, s.send));
    PLX_CHECK(transport.wait_all(reqs, 2));
    if (i >= warmup) times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  *one_way_s = median(times) / 2;
  return PLX_SUCCESS;
}

// The echoing side: every message goes back to `peer`.
plx_result_t pong(Transport& transport, int peer, uint64_t tag_base, uint64_t first_index,
                  size_t bytes, int total, Series& s) {
  s.buf.assign(bytes, 0);
  Request* recv_reqs[] = {&s.recv};
  Request* send_reqs[] = {&s.send};
  for (int i = 0; i < total; ++i) {
    const uint64_t index = first_index + 2 * static_cast<uint64_t>(i);
    PLX_CHECK(transport.post_recv(peer, tag_base | index, s.buf.data(), bytes, s.recv));
    PLX_CHECK(transport.wait_all(recv_reqs, 1));
    PLX_CHECK(transport.post_send(peer, tag_base | (index + 1), s.buf.data(), bytes, s.send));
    PLX_CHECK(transport.wait_all(send_reqs, 1));
  }
  return PLX_SUCCESS;
}

// The sender's side of the stream (measure.h): rounds of kStreamMessages messages of
// kLargeBytes to `peer`, each round ended by its kSmallBytes answer; *round_s = the median
// round.
plx_result_t stream_send(Transport& transport, int peer, uint64_t tag_base, uint64_t first_index,
                         Series& s, double* round_s) {
  s.buf.assign(kLargeBytes, 0x5a);
  std::vector<Request*> reqs;
  reqs.push_back(&s.recv);
  for (Request& r : s.stream) reqs.push_back(&r);
  std::vector<double> times;
  for (int i = 0; i < kStreamWarmup + kStreamRounds; ++i) {
    const uint64_t index = first_index + static_cast<uint64_t>(i) * (kStreamMessages + 1);
    const auto start = Clock::now();
    PLX_CHECK(transport.post_recv(peer, tag_base | (index + kStreamMessages), s.answer.data(),
                                  kSmallBytes, s.recv));
    for (int k = 0; k < kStreamMessages; ++k) {
      PLX_CHECK(transport.post_send(peer, tag_base | (index + k), s.buf.data(), kLargeBytes,
                                    s.stream[k]));
    }
    PLX_CHECK(transport.wait_all(reqs.data(), reqs.size()));
    if (i >= kStreamWarmup) {
      times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
  }
  *round_s = median(times);
  return PLX_SUCCESS;
}

// The receiver's side: every round's messages, then the answer.
plx_result_t stream_echo(Transport& transport, int peer, uint64_t tag_base, uint64_t first_index,
                         Series& s) {
  s.buf.assign(kStreamMessages * kLargeBytes, 0);
  std::vector<Request*> reqs;
  for (Request& r : s.stream) reqs.push_back(&r);
  Request* send_reqs[] = {&s.send};
  for (int i = 0; i < kStreamWarmup + kStreamRounds; ++i) {
    const uint64_t index = first_index + static_cast<uint64_t>(i) * (kStreamMessages + 1);
    for (int k = 0; k < kStreamMessages; ++k) {
      PLX_CHECK(transport.post_recv(peer, tag_base | (index + k), s.buf.data() + k * kLargeBytes,
                                    kLargeBytes, s.stream[k]));
    }
    PLX_CHECK(transport.wait_all(reqs.data(), reqs.size()));
    PLX_CHECK(transport.post_send(peer, tag_base | (index + kStreamMessages), s.answer.data(),
                                  kSmallBytes, s.send));
    PLX_CHECK(transport.wait_all(send_reqs, 1));
  }
  return PLX_SUCCESS;
}

// Both series between ranks `pinger` and `echo` (indices from `first`): on the pinger *small_s
// and *large_s are set; other ranks do nothing.
// With `stream` the large series is the stream and *large_s its median round.
plx_result_t ping_pong(Transport& transport, uint64_t tag_base, uint64_t first, int pinger,
                       int echo, bool stream, double* small_s, double* large_s) {
  const int rank = transport.rank();
  if (rank != pinger && rank != echo) return PLX_SUCCESS;
  auto series = std::make_unique<Series>();
  plx_result_t rc = PLX_SUCCESS;
  if (rank == pinger) {
    rc = ping(transport, echo, tag_base, first, kSmallBytes, kSmallWarmup, kSmallRounds, *series,
              small_s);
    if (rc == PLX_SUCCESS) {
      rc = stream ? stream_send(transport, echo, tag_base, first + kLargeFirstIndex, *series,
                                large_s)
                  : ping(transport, echo, tag_base, first + kLargeFirstIndex, kLargeBytes,
                         kLargeWarmup, kLargeRounds, *series, large_s);
    }
  } else {
    rc = pong(transport, pinger, tag_base, first, kSmallBytes, kSmallWarmup + kSmallRounds,
              *series);
    if (rc == PLX_SUCCESS) {
      rc = stream ? stream_echo(transport, pinger, tag_base, first + kLargeFirstIndex, *series)
                  : pong(transport, pinger, tag_base, first + kLargeFirstIndex, kLargeBytes,
                         kLargeWarmup + kLargeRounds, *series);
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

// The Hockney fit through two points: alpha, beta (clamped) from one-way times of kSmallBytes
// and kLargeBytes.
void fit(double small_s, double large_s, double* alpha, double* beta) {
  const double slope = (large_s - small_s) / static_cast<double>(kLargeBytes - kSmallBytes);
  *alpha = clamp(small_s - static_cast<double>(kSmallBytes) * std::max(slope, 0.0), kMinAlphaS,
                 kMaxAlphaS);
  *beta = clamp(slope, kMinBetaSPerByte, kMaxBetaSPerByte);
}

// The stream's fit: beta = (round - 2 t(small)) / (kStreamMessages kLargeBytes) (the data one
// way, the answer back, one latency each), alpha = t(small) less its bytes at that rate.
void fit_stream(double small_s, double round_s, double* alpha, double* beta) {
  const double bytes = static_cast<double>(kStreamMessages) * static_cast<double>(kLargeBytes);
  *beta = clamp((round_s - 2 * small_s) / bytes, kMinBetaSPerByte, kMaxBetaSPerByte);
  *alpha = clamp(small_s - static_cast<double>(kSmallBytes) * *beta, kMinAlphaS, kMaxAlphaS);
}

}  // namespace

plx_result_t measure_cost_params(Transport& transport, uint64_t tag_base, CostParams* out) {
  return measure_cost_params(transport, tag_base, nullptr, out);
}

plx_result_t measure_cost_params(Transport& transport, uint64_t tag_base, const HostLayout* hosts,
                                 CostParams* out) {
  const int rank = transport.rank();
  if (!out) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("measure_cost_params: rank {}: out is NULL", rank));
  }
  if (transport.size() == 1) {
    *out = kDefaultCostParams;
    return PLX_SUCCESS;
  }
  if (hosts != nullptr && hosts->size() != transport.size()) {
    return set_error(PLX_ERROR_INTERNAL,
                     fmt::format("measure_cost_params: rank {}: the host layout has {} ranks, "
                                 "the transport {}",
                                 rank, hosts->size(), transport.size()));
  }
  const bool two_level = hosts != nullptr && hosts->host_count() > 1;
  // The pair within a host (one level: ranks 0 and 1), and the pair between hosts.
  int intra_pinger = 0, intra_echo = 1;
  if (two_level) {
    intra_pinger = intra_echo = -1;
    for (const std::vector<int>& ranks : hosts->hosts) {
      if (ranks.size() < 2) continue;
      intra_pinger = ranks[0];
      intra_echo = ranks[1];
      break;
    }
  }
  // alpha, beta, gamma, inter alpha, inter beta: filled on rank 0, delivered by the broadcast.
  double result[5] = {0, 0, 0, 0, 0};
  double small_s = 0, large_s = 0;
  PLX_CHECK(ping_pong(transport, tag_base, 0, intra_pinger, intra_echo, false, &small_s,
                      &large_s));
  if (rank == intra_pinger) fit(small_s, large_s, &result[0], &result[1]);
  if (two_level) {
    PLX_CHECK(ping_pong(transport, tag_base, kSeriesIndices, 0, hosts->hosts[1][0], true,
                        &small_s, &large_s));
    if (rank == 0) fit_stream(small_s, large_s, &result[3], &result[4]);
    if (intra_pinger < 0) {  // no host has two ranks: one network serves both levels
      result[0] = result[3];
      result[1] = result[4];
    } else if (intra_pinger != 0 && rank == intra_pinger) {
      PLX_CHECK(send_one(transport, 0, tag_base | kForwardIndex, result, 2 * sizeof(double)));
    } else if (intra_pinger != 0 && rank == 0) {
      PLX_CHECK(recv_one(transport, intra_pinger, tag_base | kForwardIndex, result,
                         2 * sizeof(double)));
    }
  }
  if (rank == 0) result[2] = clamp(time_gamma(), kMinGammaSPerByte, kMaxGammaSPerByte);
  CollArgs args;
  args.collective = Collective::Broadcast;
  args.sendbuf = result;
  args.recvbuf = result;
  args.count = two_level ? 5 : 3;
  args.datatype = PLX_FLOAT64;
  args.root = 0;
  PLX_CHECK(binomial_broadcast(transport, tag_base | kResultIndex, args));
  *out = CostParams{result[0], result[1], result[2], result[3], result[4]};
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
