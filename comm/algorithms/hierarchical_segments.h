// hierarchical_segments.h - how the pipelined hierarchical allreduce cuts its vector into
// segments: one rule for the algorithm (hierarchical_allreduce.cpp) and its price
// (comm/tuning/hierarchical_cost.cpp), so that the cost model pipelines what the algorithm does.
//
// A segment is about M K s bytes for M lanes and K hosts, so that each step of a lane's ring (a
// K-th of the segment's block of one lane) moves about s = min(chunk_bytes, 256 KiB). The step
// is smaller than the default chunk (1 MiB) because the pipeline keeps only kDepth + 1 segments
// in flight: with 1 MiB steps on the emulated 2 x 2 cluster at 2 Gbit/s (perf/
// emulated-cluster-bench.sh, 2026-11-30, idle machine) the link idled while the hosts ran their
// intra-host phases, 66-73 % of the link bound; with 256 KiB steps 86-90 %, with 128 KiB 73-84 %
// (more, smaller messages). A smaller PLEXUS_CHUNK_BYTES makes the step smaller still.
#pragma once

#include <algorithm>
#include <cstddef>

namespace plexus::comm {

// The most segments: beyond it a segment's set-up outweighs what a finer pipeline saves.
constexpr size_t kMaxHierarchicalSegments = 1024;
// The bytes a lane-ring step aims at when PLEXUS_CHUNK_BYTES is larger.
constexpr size_t kLaneStepBytes = size_t{256} << 10;

// Bytes per segment for `lanes` lanes (M) across `hosts` hosts (K): M K min(chunk, 256 KiB).
inline size_t hierarchical_segment_bytes(size_t chunk_bytes, size_t lanes, size_t hosts) {
  return std::max<size_t>(std::min(chunk_bytes, kLaneStepBytes), 1) * lanes * hosts;
}

}  // namespace plexus::comm
