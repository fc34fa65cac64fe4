// hierarchical_cost.h - predicted time of the hierarchical algorithms
// (comm/algorithms/hierarchical_*.cpp) on a communicator that spans hosts, under the two-level
// alpha-beta-gamma model of cost_model.h. The formulas, with their sources, are in the .cpp.
// Used by predict_seconds() only (one-host shapes never reach it). With shape.peer_memory (a
// segment on every host with several ranks) the intra-host phases are priced at memory speed.
#pragma once

#include <cstddef>

#include "comm/tuning/algorithm_id.h"
#include "comm/tuning/cost_shape.h"

namespace plexus::comm {

// The two levels. With one-level parameters the caller passes the one level twice and
// shared_link = false (every lane then runs at the rate of its own ranks, as in a flat world).
struct TwoLevelParams {
  double alpha_intra = 0, beta_intra = 0;
  double alpha_inter = 0, beta_inter = 0;
  double gamma = 0;
  bool shared_link = true;  // a host's lanes share its nics_per_host network links
};

// One phase's predicted seconds, split into its terms: the messages' latencies (alpha), the
// bytes moved (beta; with peer memory the copies, at memory speed) and the reduction (gamma).
struct PhaseCost {
  double latency = 0, bytes = 0, reduction = 0;
  double total() const { return latency + bytes + reduction; }
};

// The hierarchical allreduce's price taken apart (plexus-topo --simulate --explain): the vector
// in `segments` segments of `segment_bytes`, and each phase's cost for one segment, the
// slowest host counting. The host's stage is the reduce-scatter and the allgather, the
// network's the lanes' allreduce; the pipeline pays both stages and the boundaries once (fill
// and drain) and the slower stage for every further segment:
//   total = host + network + boundaries + (segments - 1) max(host, network stage).
// The network stage: the lanes of `in_flight` segments cross the network at once
// (kHierarchicalDepth + 1 of hierarchical_segments.h, at most `segments`), so while one lane's
// message waits out its latency (or its rank reduces) the link carries another's bytes: a
// segment's share of the network is its link time, or its lanes' whole time divided among the
// segments in flight, whichever is longer.
struct HierarchicalAllreduceParts {
  double segments = 1, segment_bytes = 0;
  double in_flight = 1;
  bool lane_halving = false;  // the lanes run recursive halving and doubling, not the ring
  size_t lane_step_bytes = 0;  // the lane step the segments are cut for (hierarchical_segments.h)
  PhaseCost reduce_scatter, allgather, network;
  // Of network.bytes, what crosses the link the other way from the rest of a segment's lanes
  // and so, in the pipeline, beside the next segment's: halving lanes on K hosts, not a power of
  // two, fold a paired host's whole block in at their start and send the result back at their
  // end; one segment pays both in turn, the steady pipeline one per direction.
  double network_return_bytes = 0;
  double boundaries = 0;
  double host() const { return reduce_scatter.total() + allgather.total(); }
  // The link's share of one segment in the steady pipeline.
  double network_link() const { return network.bytes - network_return_bytes; }
  double network_stage() const {
    const double shared = network.total() / (in_flight > 1 ? in_flight : 1);
    return network_link() > shared ? network_link() : shared;
  }
  double total() const {
    const double stage = network_stage();
    return host() + network.total() + boundaries +
           (segments - 1) * (host() > stage ? host() : stage);
  }
  // The same pipeline with each phase's bytes term only, no boundaries: the schedule's
  // bandwidth bound (cost_model.h bound_seconds).
  double bytes_total() const {
    const double h = reduce_scatter.bytes + allgather.bytes, n = network_link();
    return h + network.bytes + (segments - 1) * (h > n ? h : n);
  }
};

// The parts above for `bytes` on `shape` (shape.hosts > 1), as hierarchical_seconds prices
// AllreduceHierarchical: total() equals it. The lanes' schedule is recursive halving and
// doubling (comm/algorithms/lane_halving.h) where it prices at most 0.9 of the ring's total
// (the .cpp says why), else the ring (always with two hosts or one lane), unless shape.lanes
// forces one (PLEXUS_HIERARCHICAL_LANES; still the ring where halving never runs: two hosts,
// one lane, one-level parameters); lane_halving says which. The lane step is
// hierarchical_lane_step_bytes below, or a power of two times it up to hierarchical_segments.h's
// hierarchical_lane_step_limit where that prices faster; lane_step_bytes says which. The run
// takes both (cost_model.h hierarchical_lane_plan).
HierarchicalAllreduceParts hierarchical_allreduce_parts(double bytes, const CostShape& shape,
                                                        const TwoLevelParams& params,
                                                        size_t chunk_bytes);
// The same with the lanes' schedule given, at the lane step below.
HierarchicalAllreduceParts hierarchical_allreduce_parts(double bytes, const CostShape& shape,
                                                        const TwoLevelParams& params,
                                                        size_t chunk_bytes, bool lane_halving);

// The pipelined allreduce's lane step s on `shape` (hierarchical_segments.h
// hierarchical_lane_step_bytes with the shape's eager limit and lanes per link), for the
// network's alpha_inter_s and beta_inter_s_per_byte: the step the price starts its plan from
// (hierarchical_allreduce_parts), and the run's where no plan names one (run_task.cpp, through
// CollArgs::lane_step_bytes; the plan's step replaces it, cost_model.h hierarchical_lane_plan).
size_t hierarchical_lane_step_bytes(const CostShape& shape, size_t chunk_bytes,
                                    double alpha_inter_s, double beta_inter_s_per_byte);

// Seconds of hierarchical `algorithm` for `bytes` (as cost_model.h defines them) on `shape`
// (shape.hosts > 1), slices of at most chunk_bytes (0: no slicing). 0 for a non-hierarchical id.
double hierarchical_seconds(AlgorithmId algorithm, double bytes, const CostShape& shape,
                            const TwoLevelParams& params, size_t chunk_bytes);

}  // namespace plexus::comm
