// measure.h - measuring the cost model's alpha, beta and gamma on a live communicator.
//
// A collective protocol: every rank of the transport calls measure_cost_params with the same
// tag_base, and every rank returns the same parameters (so all ranks choose the same algorithms).
//
//   ranks 0, 1   ping-pong: kSmallWarmup + kSmallRounds round trips of kSmallBytes, then
//                kLargeWarmup + kLargeRounds of kLargeBytes; one-way time = round trip / 2,
//                the median of the timed rounds. alpha = t(small), beta = (t(large) - t(small)) /
//                (kLargeBytes - kSmallBytes)  (the Hockney fit through two points).
//   rank 0       gamma: reduce_into (float32 sum) over kGammaBytes, the fastest of a few timed
//                passes, per byte.
//   all          rank 0 broadcasts {alpha, beta, gamma} (binomial_broadcast).
//   ranks 2..    wait in the broadcast.
//
// Two levels: when a HostLayout with several hosts is given, the ping-pong runs twice, first
// within a host (the first two ranks of the first host that has two; if none has, the values
// between hosts serve for both levels), then between hosts (rank 0 and the first rank of the
// second host), each series in its own tag indices; the first series' pinger sends its alpha and
// beta to rank 0, which broadcasts {alpha, beta, gamma, inter_alpha, inter_beta}.
//
// Between hosts beta comes from a stream, not from the large ping-pong: kStreamWarmup +
// kStreamRounds rounds in which rank 0 sends kStreamMessages messages of kLargeBytes back to
// back and the echo answers the last with kSmallBytes; inter_beta = (median round - 2 t(small)) /
// (kStreamMessages kLargeBytes). A host link may burst: a token bucket (tc tbf on the emulated
// cluster, a cloud instance's network allowance) lets a single 1 MiB message through faster
// than its sustained rate (on the emulated cluster at 1 Gbit/s with 250 KB of burst the
// ping-pong measured 6.8 ns/B, the link sustains 8.4), and the collectives the model prices
// move many megabytes at the sustained rate (perf/simulator-validation.sh).
//
// Each message is tagged tag_base | index with index < kMeasureTagIndices. Iterations are fixed,
// so the protocol ends after a bounded number of messages (each wait is bounded by the transport's
// PLEXUS_TIMEOUT_MS). Values are clamped to sane positive ranges (kMinAlphaS, ...) so a noisy
// measurement cannot yield zero or negative costs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm/algorithms/host_layout.h"
#include "comm/transport/transport.h"
#include "comm/tuning/cost_model.h"

namespace plexus::comm {

constexpr size_t kSmallBytes = 8;
constexpr int kSmallWarmup = 4;
constexpr int kSmallRounds = 40;
constexpr size_t kLargeBytes = size_t{1} << 20;
constexpr int kLargeWarmup = 2;
constexpr int kLargeRounds = 8;
constexpr int kStreamMessages = 4;
constexpr int kStreamWarmup = 1;
constexpr int kStreamRounds = 3;
constexpr size_t kGammaBytes = size_t{4} << 20;

// Tag indices measure_cost_params uses: 0..kMeasureTagIndices-1 (with comm/tuning/cost_cache.h's
// load_or_measure, 0..kCostTagIndices-1 in all, so the whole exchange fits 256 indices).
constexpr uint64_t kMeasureTagIndices = 240;
constexpr uint64_t kCostTagIndices = 256;

// Clamps of the measured values (seconds, seconds per byte).
constexpr double kMinAlphaS = 1e-8, kMaxAlphaS = 1.0;
constexpr double kMinBetaSPerByte = 1e-14, kMaxBetaSPerByte = 1e-3;
constexpr double kMinGammaSPerByte = 1e-14, kMaxGammaSPerByte = 1e-3;

// Parameters used where nothing can be measured (one rank): 5 us, 10 GB/s, 10 GB/s.
constexpr CostParams kDefaultCostParams{5e-6, 1e-10, 1e-10};

// Runs the protocol above; on success every rank's *out holds rank 0's measurement. With one
// rank nothing is measured and *out = kDefaultCostParams. Returns PLX_ERROR_INVALID_ARGUMENT
// if out is NULL, or the transport's error (PLX_ERROR_TIMEOUT, PLX_ERROR_REMOTE, ...) if a
// message fails; *out is written only on success. Thread safety: one call per transport at a
// time, like any collective.
plx_result_t measure_cost_params(Transport& transport, uint64_t tag_base, CostParams* out);
// The same with the two levels above when `hosts` (describing every rank of the transport) has
// several hosts; one level when it is NULL or has one host.
plx_result_t measure_cost_params(Transport& transport, uint64_t tag_base, const HostLayout* hosts,
                                 CostParams* out);

}  // namespace plexus::comm
