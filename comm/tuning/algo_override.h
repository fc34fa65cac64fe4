// algo_override.h - the user's forced algorithm choices: PLEXUS_ALGO and plx_comm_set_algorithm,
// and PLEXUS_HIERARCHICAL_LANES (the hierarchical allreduce's lanes).
//
// PLEXUS_ALGO and plx_comm_set_algorithm take the same text: a comma-separated list of
// collective:algorithm pairs,
//
//   PLEXUS_ALGO="allreduce:ring, broadcast:binomial"
//
// with the names of comm/tuning/algorithm_id.h. Whitespace around names, colons and commas is
// ignored, and so are empty items ("allreduce:ring,"). An empty text means "automatic" for every
// collective; "<collective>:auto" means automatic for that one. A collective named twice with two
// different algorithms is an error. Collectives not named are chosen by the cost model
// (comm/tuning/cost_model.h), which reports a forced choice as "forced by <source>".
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "comm/tuning/algorithm_id.h"
#include "comm/tuning/cost_shape.h"
#include "plexus/plexus.h"

namespace plexus::comm {

struct AlgoOverrides {
  // forced[c]: the algorithm collective c must use, or nullopt for the cost model's choice.
  std::array<std::optional<AlgorithmId>, kCollectiveCount> forced{};
  // Where the overrides came from, for the choice's reason: "PLEXUS_ALGO" or
  // "plx_comm_set_algorithm".
  std::string source = "PLEXUS_ALGO";

  std::optional<AlgorithmId> get(Collective collective) const {
    return forced[static_cast<size_t>(collective)];
  }
  bool empty() const {
    for (const auto& entry : forced) {
      if (entry) return false;
    }
    return true;
  }
};

// Parses `text` into *out (out->source = source). `rank` only labels the message (-1: unknown).
// Returns PLX_ERROR_INVALID_ARGUMENT (plexus::set_error) for an item without a colon, an unknown
// collective (the message lists the valid collectives), an unknown algorithm (it lists that
// collective's algorithms) or a collective forced twice to different algorithms; the message
// reads "<source>=\"<text>\": rank R: item 'x:y': ...". *out is written only on success.
plx_result_t parse_algo_overrides(std::string_view text, std::string_view source, int rank,
                                  AlgoOverrides* out);

// The same for plx_comm_set_algorithm, whose caller prefixes the function and rank: the source
// is "plx_comm_set_algorithm" and the message reads "spec \"<text>\": item 'x:y': ...".
plx_result_t parse_algo_overrides(std::string_view text, AlgoOverrides* out);

// The overrides of PLEXUS_ALGO (none when it is unset or empty), as parse_algo_overrides.
plx_result_t algo_overrides_from_env(int rank, AlgoOverrides* out);

// PLEXUS_HIERARCHICAL_LANES: the schedule of the hierarchical allreduce's lanes across hosts,
// "ring", "halving" (recursive halving and doubling, lane_halving.h) or "auto" (the cost
// model's choice; also "" and unset). Surrounding whitespace is ignored. Anything else:
// PLX_ERROR_INVALID_ARGUMENT, the message naming the variable, its value and `rank` (none
// when -1: plexus-topo); *out is written only on success.
// A communicator reads it once, at creation, and compares it across the ranks with the
// transport's settings (communicator.cpp); split children keep their parent's.
plx_result_t parse_lane_schedule(std::string_view text, int rank, LaneSchedule* out);
plx_result_t lane_schedule_from_env(int rank, LaneSchedule* out);
// "auto", "ring" or "halving", as parse_lane_schedule reads it.
const char* lane_schedule_name(LaneSchedule lanes);

// The overrides as text that parse_algo_overrides accepts ("allreduce:ring,broadcast:binomial";
// "" when none), in collective order.
std::string format_algo_overrides(const AlgoOverrides& overrides);

}  // namespace plexus::comm
