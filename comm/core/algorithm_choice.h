// algorithm_choice.h - which algorithm runs a collective call, and the function behind each
// algorithm id (comm/tuning/algorithm_id.h).
//
// The choice: the algorithm forced for the collective by PLEXUS_ALGO or plx_comm_set_algorithm,
// else the one the cost model (comm/tuning/cost_model.h) predicts fastest for the call's size
// with the communicator's shared parameters and its hosts (plx_comm::cost_shape: one level on
// one host, two levels across hosts). Every rank computes the same choice from the same
// inputs, and the chosen id is part of the argument signature anyway. Logged at INFO with the
// cost model's reason.
#pragma once

#include "comm/algorithms/algorithms.h"
#include "comm/tuning/algorithm_id.h"

struct plx_comm;

namespace plexus::comm {

struct ChosenAlgorithm {
  AlgorithmFn fn = nullptr;
  AlgorithmId id = AlgorithmId::kCount;
};

plx_result_t choose_algorithm(plx_comm* comm, const CollArgs& args, ChosenAlgorithm* out);

// The function that implements `id`.
AlgorithmFn algorithm_function(AlgorithmId id);

}  // namespace plexus::comm
