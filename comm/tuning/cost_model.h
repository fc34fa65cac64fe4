// cost_model.h - predicted time of every collective algorithm under the alpha-beta-gamma model,
// and the one place that chooses an algorithm for a call.
//
// The model (Hockney; R. Thakur, R. Rabenseifner and W. Gropp, "Optimization of collective
// communication operations in MPICH", IJHPCA 19(1), 2005, section 3): sending a message of m bytes
// between two ranks costs alpha + m * beta, and reducing m bytes locally costs m * gamma. A rank
// sends and receives at once (full duplex) but sends its own messages one after another. The
// pipelined algorithms cut their messages into slices of at most chunk_bytes, and every slice is a
// message that pays alpha (E. Chan, M. Heimlich, A. Purkayastha and R. van de Geijn, "Collective
// communication: theory, practice, and experience", CCPE 19(13), 2007, for pipelining).
// Each formula, with its source and its extra steps for ranks that are not a power of two, is in
// cost_model.cpp. Bruck's rotation and packing copies are charged gamma per byte; other staging
// copies are not modelled.
//
// Two levels. A communicator whose ranks span hosts has a second alpha and beta for messages
// between hosts (CostParams::inter_*), and a CostShape (cost_shape.h) saying where its ranks run.
// Then every step of a flat algorithm is charged at the rate of its busiest host link (a ring that
// crosses hosts runs at the network's beta), and the hierarchical algorithms
// (hierarchical_cost.h) are charged per phase, so the choice between flat and hierarchical falls
// out of the same comparison. With one level (one host, or parameters without inter_* values)
// every prediction is the one-level formula, exactly as before.
//
// `bytes` is the size the collective's count defines, count * element bytes (algorithms.h):
//   allreduce, reduce, broadcast   the whole vector, m
//   reduce_scatter, allgather      one rank's block b (the vector is n * b)
//   alltoall                       one block b, sent to each rank (a rank sends n * b in all)
//   alltoallv                      the mean block, total bytes a rank sends / n
//   gather, scatter                one rank's block b
//   barrier                        ignored
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "comm/algorithms/algorithms.h"
#include "comm/tuning/algo_override.h"
#include "comm/tuning/algorithm_id.h"
#include "comm/tuning/cost_shape.h"
#include "comm/tuning/hierarchical_cost.h"

namespace plexus::comm {

struct CostParams {
  double alpha_s = 0;           // latency of one message, seconds (within a host, or any message)
  double beta_s_per_byte = 0;   // inverse bandwidth, seconds per byte (likewise)
  double gamma_s_per_byte = 0;  // local reduction, seconds per byte reduced
  // Between hosts, measured or loaded when a communicator spans hosts; 0: one level.
  double inter_alpha_s = 0;
  double inter_beta_s_per_byte = 0;

  bool two_level() const { return inter_beta_s_per_byte > 0; }
};

// Predicted seconds of `algorithm` for `bytes` (as above) on the ranks of `shape` with slices of
// at most `chunk_bytes` (0: no slicing; a flat algorithm across hosts: flat_slice_bytes). 0 when
// there is one rank (nothing moves). The two-level formulas apply when shape.multi_host() and
// params.two_level(); otherwise the one-level ones.
double predict_seconds(AlgorithmId algorithm, size_t bytes, const CostShape& shape,
                       const CostParams& params, size_t chunk_bytes);
// The same on `nranks` ranks of one host.
double predict_seconds(AlgorithmId algorithm, size_t bytes, int nranks, const CostParams& params,
                       size_t chunk_bytes);
// The hierarchical allreduce's prediction above taken apart into its phases
// (hierarchical_cost.h); nullopt on one host, where it is a flat reduce-scatter and allgather,
// and on hosts of one rank each, where it is the ring allreduce.
std::optional<HierarchicalAllreduceParts> explain_hierarchical_allreduce(
    size_t bytes, const CostShape& shape, const CostParams& params, size_t chunk_bytes);
// How the hierarchical allreduce of `bytes` on `shape` runs its lanes, as its prediction above
// takes it (comm/core/run_task.cpp passes both in CollArgs): halving, by recursive halving and
// doubling (comm/algorithms/lane_halving.h) rather than the ring (false on one host and two,
// with one rank per host and with one-level parameters, forced or not); step_bytes, the lane
// step its segments are cut for (hierarchical_segments.h; with one-level parameters the rule's
// step without a two-level model; 0 on one host and with one rank per host, where the run needs
// none).
struct HierarchicalLanePlan {
  bool halving = false;
  size_t step_bytes = 0;
};
HierarchicalLanePlan hierarchical_lane_plan(size_t bytes, const CostShape& shape,
                                            const CostParams& params, size_t chunk_bytes);
// The slice a flat (not hierarchical) algorithm cuts its messages into on `shape`: chunk_bytes
// on one host (or with one-level parameters); across hosts the bytes the network moves in
// 1 ms, or in 8 of its latencies if that is more, at least 16 KiB and at most chunk_bytes:
//   min(chunk_bytes, max(16 KiB, max(1 ms, 8 alpha_e) / beta_e)).
// Fast networks keep the chunk (p5's 400 Gbit/s links: 1 MiB); slow ones get less (the emulated
// 1 Gbit/s link, beta_e 8.4 ns/B: 119 kB). bound_seconds keeps this slice. Over libfabric's
// ofi_rxm (the tcp and verbs providers) a large message moves only once its receiver has
// answered the sender's request, and on a link loaded both ways that answer waits behind the
// bytes queued ahead of it, so the longer a slice is on the wire the longer every step stalls.
// On the emulated cluster the double binary tree ran 1.3-2x slower than its schedule with 1 MiB
// or 256 KiB slices at 250 Mbit/s to 1 Gbit/s, and at it (1.00-1.15) with slices of about 1 ms
// (docs/performance.md). The run (comm/core/run_task.cpp) and every prediction below use this
// same slice.
size_t flat_slice_bytes(const CostShape& shape, const CostParams& params, size_t chunk_bytes);

// The bandwidth bound of `algorithm` under its own schedule: the time its bytes alone take, every
// latency and reduction term at 0. Flat algorithms: predict_seconds with alpha, inter alpha and
// gamma at 0. The hierarchical allreduce on several hosts: its own segments (from the real
// parameters, as it runs) with each phase's bytes term only (copies through peer memory
// count as bytes), pipelined as HierarchicalAllreduceParts::total() adds them. 0 (no bound
// computed) for the shm algorithms on a peer-memory segment, priced by memory speed alone
// (without one, their flat fallback's bound), and for the other hierarchical algorithms on
// several hosts.
double bound_seconds(AlgorithmId algorithm, size_t bytes, const CostShape& shape,
                     const CostParams& params, size_t chunk_bytes);

struct AlgorithmChoice {
  AlgorithmId algorithm = AlgorithmId::kCount;
  double predicted_s = 0;
  // One line for the INFO log, e.g. "allreduce 4096 B x 4 ranks: recursive_doubling (12.1 us)
  // over rabenseifner (19.0 us), ring (30.2 us); alpha 2.9 us, beta 0.21 ns/B" (the others from
  // fastest to slowest), or "allreduce 4096 B x 4 ranks: ring (30.2 us): forced by PLEXUS_ALGO".
  std::string reason;
};

// The algorithm of `collective` for this call: the one `overrides` forces, else the fastest
// prediction. Ties (within a relative 1e-9) go to the algorithm listed first in
// comm/tuning/algorithm_id.h, so every rank given the same arguments picks the same algorithm.
// `collective` must be a valid Collective (not kCount); one rank predicts 0 for every
// algorithm (the first is chosen). Pure function: thread safe, no allocation beyond the reason.
// On a multi-host shape the reason's head says so: "allreduce 4096 B x 4 ranks on 2 hosts".
// explain false: the reason stays empty, and nothing is formatted or allocated (a collective's
// every call chooses; the reason is for the INFO log and the tools).
AlgorithmChoice choose(Collective collective, size_t bytes, const CostShape& shape,
                       const CostParams& params, size_t chunk_bytes,
                       const AlgoOverrides& overrides = AlgoOverrides{}, bool explain = true);
// The same on `nranks` ranks of one host.
AlgorithmChoice choose(Collective collective, size_t bytes, int nranks, const CostParams& params,
                       size_t chunk_bytes, const AlgoOverrides& overrides = AlgoOverrides{});

// "12.1 us", "3.52 ms", "1.20 s": a duration for messages.
std::string format_seconds(double seconds);

// "alpha 2.9 us, beta 0.21 ns/B, gamma 0.05 ns/B": the parameters for messages; with two levels
// followed by "; between hosts alpha 25 us, beta 4 ns/B".
std::string format_cost_params(const CostParams& params);

}  // namespace plexus::comm
