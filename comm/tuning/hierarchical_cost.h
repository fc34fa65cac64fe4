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

// Seconds of hierarchical `algorithm` for `bytes` (as cost_model.h defines them) on `shape`
// (shape.hosts > 1), slices of at most chunk_bytes (0: no slicing). 0 for a non-hierarchical id.
double hierarchical_seconds(AlgorithmId algorithm, double bytes, const CostShape& shape,
                            const TwoLevelParams& params, size_t chunk_bytes);

}  // namespace plexus::comm
