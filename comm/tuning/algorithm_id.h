// algorithm_id.h - one identifier per collective algorithm, and the table naming them.
//
// The names are the ones PLEXUS_ALGO and plx_comm_set_algorithm accept ("allreduce:ring"). The
// table lists each collective's algorithms together, in the order the cost model reports them
// and breaks ties (comm/tuning/cost_model.h). The functions behind the ids are mapped elsewhere
// (the communicator's dispatch), so this file links no algorithm.
//
//   collective       algorithms
//   allreduce        ring, rabenseifner, recursive_doubling, double_binary_tree, hierarchical,
//                    shm, shm_oneshot
//   reduce           binomial, ring, hierarchical, shm
//   broadcast        binomial, chain, scatter_allgather, hierarchical, shm
//   reduce_scatter   ring, recursive_halving, hierarchical, shm
//   allgather        ring, bruck, hierarchical, shm
//   alltoall         pairwise, bruck, shm
//   alltoallv        pairwise
//   gather           linear, binomial
//   scatter          linear, binomial
//   barrier          dissemination
//
// The hierarchical (two-level, host-aware) algorithms come last in each list: on one host they
// degenerate to a flat algorithm listed before them, which therefore wins the cost model's ties.
// The peer-memory (shm) algorithms come after them: the cost model predicts them only for a
// communicator whose ranks share one host and a peer-memory segment (CostShape::peer_memory).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "comm/algorithms/algorithms.h"

namespace plexus::comm {

enum class AlgorithmId {
  AllreduceRing,
  AllreduceRabenseifner,
  AllreduceRecursiveDoubling,
  AllreduceDoubleBinaryTree,
  AllreduceHierarchical,
  AllreduceShm,
  AllreduceShmOneshot,
  ReduceBinomial,
  ReduceRing,
  ReduceHierarchical,
  ReduceShm,
  BroadcastBinomial,
  BroadcastChain,
  BroadcastScatterAllgather,
  BroadcastHierarchical,
  BroadcastShm,
  ReduceScatterRing,
  ReduceScatterRecursiveHalving,
  ReduceScatterHierarchical,
  ReduceScatterShm,
  AllgatherRing,
  AllgatherBruck,
  AllgatherHierarchical,
  AllgatherShm,
  AlltoallPairwise,
  AlltoallBruck,
  AlltoallShm,
  AlltoallvPairwise,
  GatherLinear,
  GatherBinomial,
  ScatterLinear,
  ScatterBinomial,
  BarrierDissemination,
  kCount
};

constexpr size_t kAlgorithmCount = static_cast<size_t>(AlgorithmId::kCount);
constexpr size_t kCollectiveCount = static_cast<size_t>(Collective::kCount);

struct AlgorithmInfo {
  AlgorithmId id;
  Collective collective;
  std::string_view name;  // as in PLEXUS_ALGO, e.g. "recursive_doubling"
};

// Every algorithm, in AlgorithmId order (grouped by collective).
std::span<const AlgorithmInfo> algorithm_table();

// The algorithms of one collective, in table order (never empty for a valid collective).
std::span<const AlgorithmInfo> algorithms_of(Collective collective);

// The entry of `id` (id must be below kCount).
const AlgorithmInfo& algorithm_info(AlgorithmId id);
std::string_view algorithm_name(AlgorithmId id);
// "allreduce:ring": the collective's name, a colon, the algorithm's (plx_comm_last_algorithm),
// made once per process so a call pays no formatting for it.
const std::string& qualified_algorithm_name(AlgorithmId id);
Collective algorithm_collective(AlgorithmId id);
// True for the hierarchical algorithms (comm/algorithms/hierarchical_*.cpp), which cut their
// messages by their own rule (hierarchical_segments.h) rather than by the chunk.
constexpr bool is_hierarchical(AlgorithmId id) {
  return id == AlgorithmId::AllreduceHierarchical || id == AlgorithmId::ReduceHierarchical ||
         id == AlgorithmId::BroadcastHierarchical ||
         id == AlgorithmId::ReduceScatterHierarchical || id == AlgorithmId::AllgatherHierarchical;
}

// "allreduce", "reduce_scatter", ...; "?" for an out-of-range value.
std::string_view collective_name(Collective collective);

// Lookup by name (exact, lower case); nullopt when unknown.
std::optional<Collective> find_collective(std::string_view name);
std::optional<AlgorithmId> find_algorithm(Collective collective, std::string_view name);

// "allreduce, reduce, ..., barrier" and "ring, rabenseifner, ...": the valid names, for messages.
std::string collective_names();
std::string algorithm_names(Collective collective);

}  // namespace plexus::comm
