// hierarchical_segments.h - how the pipelined hierarchical allreduce cuts its vector into
// segments: one rule for the algorithm (hierarchical_allreduce.cpp, through CollArgs::
// lane_step_bytes) and its price (comm/tuning/hierarchical_cost.cpp), so that the cost model
// pipelines what the algorithm does.
//
// A segment is about M K s bytes for M lanes and K hosts, so that each step of a lane's ring (a
// K-th of the segment's block of one lane) moves about s, the lane step; with halving lanes
// (lane_halving.h) M 2 s, so that the first and largest halving message (half the block) is
// one step. With alpha_e and
// beta_e the network's latency and inverse bandwidth between hosts (the cost model's), E the
// transport's eager limit (Transport::eager_bytes, 0 where unknown), D = kHierarchicalDepth + 1
// the segments in flight and l = ceil(M / links) the lanes that share one of a host's links:
//
//   s = min(chunk_bytes, E)                              if E > 0 and D l E beta_e >= 8 alpha_e
//   s = min(chunk_bytes, max(256 KiB, 8 alpha_e / beta_e))  otherwise
//
// The first rule: when the eager steps in flight on a link cover eight of its latencies, every
// step is one eager message. Over ofi_rxm a larger message waits for its receiver's answer,
// which queues behind the bytes already on a link loaded both ways (ofi/eager_limit.h). On the
// emulated 2 x 2 cluster (perf/simulator-validation.sh, 2026-12-07, tcp;ofi_rxm, eager limit
// 16 KiB) 16 KiB steps ran at 0.99-1.06 of the prediction and 90-95 % of the link bound at
// 1 Gbit/s (35.2, 146 and 598 ms for 4, 16 and 64 MiB), against 1.11-1.31 and 80-85 % with the
// 256 KiB floor, and 1.15-2.6 with 24-64 KiB steps (segmented or rendezvous messages); 2 x 4 at
// 1 Gbit/s: 141 ms for 16 MiB against 178 with the floor.
//
// The second rule, for fast links with a high latency against their rate (p5's 400 Gbit/s
// links at 10 us: 4 MB, so the step is the chunk, which the plan below may lengthen) or a
// transport without an eager limit:
// 8 alpha_e / beta_e bytes spend at most a ninth of a step in latency and the 2(K-1) steps of
// each segment's ring remain bandwidth-bound; the floor keeps a slow link's steps from being
// many small rendezvous messages (on the emulated cluster before the eager rule: 66-73 % of the
// link bound with 1 MiB steps at 2 Gbit/s, 79-90 % with 256 KiB, 73-84 % with 128 KiB).
//
// Where the second rule caps s at the chunk on an RDMA-class link without an eager limit
// (hierarchical_lane_step_limit below), the cost model may take a longer step for a long vector:
// s times a power of two, at most kMaxLaneStepBytes, whichever it prices fastest.
#pragma once

#include <algorithm>
#include <cstddef>

#include "comm/transport/tag.h"

namespace plexus::comm {

// The most segments: beyond it a segment's set-up outweighs what a finer pipeline saves. 4096
// keeps eager steps up to 256 MiB on 2 x 2 (2 x 2 at 1 Gbit/s, 128 MiB: 1202 / 1249 ms out of /
// in place with 16 KiB steps under this cap, 1325 / 1364 with the 32 KiB steps of a 1024 cap;
// the link bound is 1074 ms).
constexpr size_t kMaxHierarchicalSegments = 4096;
// Segments whose lanes may be in flight at once beyond the one just started
// (hierarchical_allreduce.cpp).
constexpr size_t kHierarchicalDepth = 2;
// The smallest lane step of the second rule (unless PLEXUS_CHUNK_BYTES is smaller still).
constexpr size_t kMinLaneStepBytes = size_t{256} << 10;
// A lane step moves at least this many latencies' worth of bytes (alpha / beta); eager steps in
// flight on a link cover as many.
constexpr double kLaneStepLatencies = 8;

// The longest lane step the cost model may choose (hierarchical_lane_step_limit).
constexpr size_t kMaxLaneStepBytes = size_t{16} << 20;

// Whether the first rule above holds: measured link parameters, a known eager limit, and D l E
// eager bytes in flight on a link cover kLaneStepLatencies of its latencies.
inline bool hierarchical_lane_steps_eager(double alpha_inter_s, double beta_inter_s_per_byte,
                                          size_t eager_bytes, size_t lanes_per_link) {
  if (!(alpha_inter_s > 0) || !(beta_inter_s_per_byte > 0) || eager_bytes == 0) return false;
  const double in_flight = static_cast<double>(kHierarchicalDepth + 1) *
                           static_cast<double>(std::max<size_t>(lanes_per_link, 1)) *
                           static_cast<double>(eager_bytes);
  return in_flight * beta_inter_s_per_byte >= kLaneStepLatencies * alpha_inter_s;
}

// kLaneStepLatencies of a link's latencies' worth of bytes, 8 alpha / beta (0 where the link
// is not measured; at most 1e15): the lane step's and the intra-host slice's yardstick.
inline double latency_bytes(double alpha_s, double beta_s_per_byte) {
  if (!(alpha_s > 0) || !(beta_s_per_byte > 0)) return 0;
  return std::min(kLaneStepLatencies * alpha_s / beta_s_per_byte, 1e15);
}

// The lane step s above, in bytes (>= 1). alpha_inter_s and beta_inter_s_per_byte of 0 (no
// two-level cost model) leave the floor; eager_bytes 0 (unknown) the second rule;
// lanes_per_link is l (at least 1).
inline size_t hierarchical_lane_step_bytes(size_t chunk_bytes, double alpha_inter_s,
                                           double beta_inter_s_per_byte, size_t eager_bytes,
                                           size_t lanes_per_link) {
  if (hierarchical_lane_steps_eager(alpha_inter_s, beta_inter_s_per_byte, eager_bytes,
                                    lanes_per_link)) {
    return std::max<size_t>(std::min(chunk_bytes, eager_bytes), 1);
  }
  const size_t step = std::max(
      kMinLaneStepBytes, static_cast<size_t>(latency_bytes(alpha_inter_s, beta_inter_s_per_byte)));
  return std::max<size_t>(std::min(chunk_bytes, step), 1);
}

// The longest lane step the cost model may choose for a vector (hierarchical_cost.h
// hierarchical_allreduce_parts tries s, 2s, 4s, ... up to it and takes the fastest priced;
// the run takes the same through CollArgs::lane_step_bytes): s itself, except on an RDMA-class
// link, where kMaxLaneStepBytes: the transport has no eager limit (eager_bytes 0: not ofi_rxm;
// the efa provider, UCX, or a topology file's simulation) and the second rule capped s at the
// chunk on a link whose 8 alpha_e / beta_e is more than the chunk and kLaneStepGrowthBytes
// (p5's 400 Gbit/s EFA links at 10 us: 4 MB). There 1 MiB steps spend a third of their time in
// latency (10 us against 21 us of bytes), and longer ones fill and drain a pipeline of fewer,
// longer segments: which wins depends on the vector and the hosts. Over ofi_rxm (tcp, verbs) a
// long step is a rendezvous message that stalls behind the bytes queued on a loaded link (the
// second rule's 1 MiB steps at 2 Gbit/s above), which the model does not price, so it keeps s
// whatever its link measures (this VM's loopback measured 8 alpha / beta at 0.8-3.1 MB); so do
// the emulated cluster's links (at most 330 kB). kMaxLaneStepBytes bounds the staging a lane
// holds (a step on the ring, two with halving), reused from segment to segment
// (hierarchical_pipeline.h StagingPool).
constexpr size_t kLaneStepGrowthBytes = size_t{1} << 20;
inline size_t hierarchical_lane_step_limit(size_t chunk_bytes, double alpha_inter_s,
                                           double beta_inter_s_per_byte, size_t eager_bytes,
                                           size_t lanes_per_link) {
  const size_t step = hierarchical_lane_step_bytes(chunk_bytes, alpha_inter_s,
                                                   beta_inter_s_per_byte, eager_bytes,
                                                   lanes_per_link);
  if (eager_bytes > 0 || latency_bytes(alpha_inter_s, beta_inter_s_per_byte) <=
                             static_cast<double>(std::max(chunk_bytes, kLaneStepGrowthBytes))) {
    return step;
  }
  return std::max(step, kMaxLaneStepBytes);
}

// The slice of the pipelined allreduce's intra-host rings (steps 1 and 3 without peer memory):
// chunk_bytes, or more where the host's link is fast against its latency, so that a slice moves
// at least kLaneStepLatencies of its latencies' worth of bytes (8 alpha_i / beta_i), at most
// kMaxIntraSliceBytes; as the lane step and the flat slice across hosts follow theirs. On NVLink
// (p5: 2 us, 450 GB/s) that is 7.2 MB: with 1 MiB slices the model's latency per slice was as
// large as its bytes, and p5's predictions sat at half their bound. On a CPU host's shared
// memory or loopback 8 alpha / beta is below the 1 MiB chunk (this VM: 120 kB), which stays.
// chunk_bytes 0 (no slicing), or alpha or beta not positive, leave chunk_bytes.
constexpr size_t kMaxIntraSliceBytes = size_t{64} << 20;
inline size_t hierarchical_intra_slice_bytes(size_t chunk_bytes, double alpha_intra_s,
                                             double beta_intra_s_per_byte) {
  if (chunk_bytes == 0) return chunk_bytes;
  const double bytes = std::min(latency_bytes(alpha_intra_s, beta_intra_s_per_byte),
                                static_cast<double>(kMaxIntraSliceBytes));
  return std::max(chunk_bytes, static_cast<size_t>(bytes));
}

// l above: the lanes (M, the most ranks on a host) that share one of a host's `links` links.
inline size_t lanes_per_link(size_t lanes, size_t links) {
  const size_t used = std::max<size_t>(std::min(std::max<size_t>(links, 1), lanes), 1);
  return std::max<size_t>((lanes + used - 1) / used, 1);
}

// The most segments for `lanes` lanes (M) across `hosts` hosts (K): kMaxHierarchicalSegments,
// and few enough that each of a segment's M + 2 tag windows (group_ring.h) holds a lane ring's
// 2(K-1) messages (halving lanes' 2 log2 K + 2 are fewer) and an intra-host ring's pieces. At
// least 1.
inline size_t hierarchical_max_segments(size_t lanes, size_t hosts) {
  const size_t window = std::max<size_t>({2 * hosts, 4 * lanes, 64});
  const size_t by_tags = static_cast<size_t>(kTagIndexLimit) / ((lanes + 2) * window);
  return std::max<size_t>(std::min(kMaxHierarchicalSegments, by_tags), 1);
}

// Lane steps in one lane's block of a segment: K for the ring, 2 for halving lanes.
inline size_t lane_steps_per_block(bool lane_halving, size_t hosts) {
  return lane_halving ? 2 : hosts;
}

// Bytes per segment for `lanes` lanes (M) with `steps_per_block` lane steps in each lane's block
// (lane_steps_per_block) and a lane step of `step_bytes`: M K s, or M 2 s.
inline size_t hierarchical_segment_bytes(size_t step_bytes, size_t lanes,
                                         size_t steps_per_block) {
  return std::max<size_t>(step_bytes, 1) * lanes * steps_per_block;
}

}  // namespace plexus::comm
