// hierarchical_segments.h - how the pipelined hierarchical allreduce cuts its vector into
// segments: one rule for the algorithm (hierarchical_allreduce.cpp, through CollArgs::
// lane_step_bytes) and its price (comm/tuning/hierarchical_cost.cpp), so that the cost model
// pipelines what the algorithm does.
//
// A segment is about M K s bytes for M lanes and K hosts, so that each step of a lane's ring (a
// K-th of the segment's block of one lane) moves about s, the lane step:
//
//   s = min(chunk_bytes, max(256 KiB, 8 alpha_e / beta_e))
//
// with alpha_e and beta_e the network's latency and inverse bandwidth between hosts (the cost
// model's). 8 alpha_e / beta_e bytes spend at most a ninth of a step in latency, so on fast
// links with a high latency against their rate (p5's 400 Gbit/s links at 10 us: 4 MB) the step
// stays at the chunk and the 2(K-1) steps of each segment's ring remain bandwidth-bound. On slow
// links the floor of 256 KiB applies: the pipeline keeps only three segments in flight, and with
// 1 MiB steps on the emulated 2 x 2 cluster at 2 Gbit/s (alpha_e 17 us, beta_e 3.2 ns/B;
// perf/emulated-cluster-bench.sh, 2026-11-30, idle machine) the links idled while the hosts ran
// their intra-host phases: 66-73 % of the link bound, against 79-90 % with 256 KiB steps and
// 73-84 % with 128 KiB ones (more, smaller messages).
#pragma once

#include <algorithm>
#include <cstddef>

namespace plexus::comm {

// The most segments: beyond it a segment's set-up outweighs what a finer pipeline saves.
constexpr size_t kMaxHierarchicalSegments = 1024;
// The smallest lane step (unless PLEXUS_CHUNK_BYTES is smaller still).
constexpr size_t kMinLaneStepBytes = size_t{256} << 10;
// A lane step moves at least this many latencies' worth of bytes (alpha / beta).
constexpr double kLaneStepLatencies = 8;

// The lane step s above, in bytes (>= 1). alpha_inter_s and beta_inter_s_per_byte of 0 (no
// two-level cost model) leave the floor.
inline size_t hierarchical_lane_step_bytes(size_t chunk_bytes, double alpha_inter_s,
                                           double beta_inter_s_per_byte) {
  double latency_bytes = 0;
  if (alpha_inter_s > 0 && beta_inter_s_per_byte > 0) {
    latency_bytes = std::min(kLaneStepLatencies * alpha_inter_s / beta_inter_s_per_byte, 1e15);
  }
  const size_t step = std::max(kMinLaneStepBytes, static_cast<size_t>(latency_bytes));
  return std::max<size_t>(std::min(chunk_bytes, step), 1);
}

// Bytes per segment for `lanes` lanes (M) across `hosts` hosts (K) with a lane step of
// `step_bytes`: M K s.
inline size_t hierarchical_segment_bytes(size_t step_bytes, size_t lanes, size_t hosts) {
  return std::max<size_t>(step_bytes, 1) * lanes * hosts;
}

}  // namespace plexus::comm
