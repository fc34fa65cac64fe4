// algorithm_choice.cpp - see algorithm_choice.h.
#include "comm/core/algorithm_choice.h"

#include <fmt/format.h>

#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/core/communicator.h"
#include "comm/reduce/reduce.h"
#include "comm/tuning/cost_model.h"

namespace plexus::comm {

AlgorithmFn algorithm_function(AlgorithmId id) {
  switch (id) {
    case AlgorithmId::AllreduceRing: return ring_allreduce;
    case AlgorithmId::AllreduceRabenseifner: return rabenseifner_allreduce;
    case AlgorithmId::AllreduceRecursiveDoubling: return recursive_doubling_allreduce;
    case AlgorithmId::AllreduceDoubleBinaryTree: return double_binary_tree_allreduce;
    case AlgorithmId::AllreduceHierarchical: return hierarchical_allreduce;
    case AlgorithmId::AllreduceShm: return shm_allreduce;
    case AlgorithmId::AllreduceShmOneshot: return shm_oneshot_allreduce;
    case AlgorithmId::ReduceBinomial: return binomial_reduce;
    case AlgorithmId::ReduceRing: return ring_reduce;
    case AlgorithmId::ReduceHierarchical: return hierarchical_reduce;
    case AlgorithmId::ReduceShm: return shm_reduce;
    case AlgorithmId::BroadcastBinomial: return binomial_broadcast;
    case AlgorithmId::BroadcastChain: return chain_broadcast;
    case AlgorithmId::BroadcastScatterAllgather: return scatter_allgather_broadcast;
    case AlgorithmId::BroadcastHierarchical: return hierarchical_broadcast;
    case AlgorithmId::BroadcastShm: return shm_broadcast;
    case AlgorithmId::ReduceScatterRing: return ring_reduce_scatter;
    case AlgorithmId::ReduceScatterRecursiveHalving: return recursive_halving_reduce_scatter;
    case AlgorithmId::ReduceScatterHierarchical: return hierarchical_reduce_scatter;
    case AlgorithmId::ReduceScatterShm: return shm_reduce_scatter;
    case AlgorithmId::AllgatherRing: return ring_allgather;
    case AlgorithmId::AllgatherBruck: return bruck_allgather;
    case AlgorithmId::AllgatherHierarchical: return hierarchical_allgather;
    case AlgorithmId::AllgatherShm: return shm_allgather;
    case AlgorithmId::AlltoallPairwise: return pairwise_alltoall;
    case AlgorithmId::AlltoallBruck: return bruck_alltoall;
    case AlgorithmId::AlltoallShm: return shm_alltoall;
    case AlgorithmId::AlltoallvPairwise: return pairwise_alltoallv;
    case AlgorithmId::GatherLinear: return linear_gather;
    case AlgorithmId::GatherBinomial: return binomial_gather;
    case AlgorithmId::ScatterLinear: return linear_scatter;
    case AlgorithmId::ScatterBinomial: return binomial_scatter;
    case AlgorithmId::BarrierDissemination: return dissemination_barrier;
    case AlgorithmId::kCount: break;
  }
  return nullptr;
}

plx_result_t choose_algorithm(plx_comm* comm, const CollArgs& args, ChosenAlgorithm* out) {
  // The size the cost model reasons about: the per-rank count of the collective, in bytes.
  const size_t bytes = args.count * datatype_bytes(args.datatype);
  // The reason is formatted only for the INFO log: a call of a few microseconds cannot pay it.
  const bool explain = log_level() >= LogLevel::Info;
  const AlgorithmChoice choice = choose(args.collective, bytes, comm->cost_shape, comm->cost,
                                        comm->chunk_bytes, comm->overrides, explain);
  out->id = choice.algorithm;
  out->fn = algorithm_function(choice.algorithm);
  if (!out->fn || algorithm_collective(choice.algorithm) != args.collective) {
    const AlgorithmChoice explained = choose(args.collective, bytes, comm->cost_shape,
                                             comm->cost, comm->chunk_bytes, comm->overrides);
    return set_error(PLX_ERROR_INTERNAL,
                     fmt::format("rank {}: no algorithm for {} ({})", comm->rank,
                                 collective_name(args.collective), explained.reason));
  }
  if (explain) log_message(LogLevel::Info, "{}", choice.reason);
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
