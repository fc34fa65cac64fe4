// algorithm_id.cpp - the table of algorithm names and its lookups.
#include "comm/tuning/algorithm_id.h"

#include <iterator>

namespace plexus::comm {
namespace {

using C = Collective;
using A = AlgorithmId;

// clang-format off
constexpr AlgorithmInfo kAlgorithms[] = {
  {A::AllreduceRing,                 C::Allreduce,     "ring"},
  {A::AllreduceRabenseifner,         C::Allreduce,     "rabenseifner"},
  {A::AllreduceRecursiveDoubling,    C::Allreduce,     "recursive_doubling"},
  {A::AllreduceDoubleBinaryTree,     C::Allreduce,     "double_binary_tree"},
  {A::AllreduceHierarchical,         C::Allreduce,     "hierarchical"},
  {A::AllreduceShm,                  C::Allreduce,     "shm"},
  {A::AllreduceShmOneshot,           C::Allreduce,     "shm_oneshot"},
  {A::ReduceBinomial,                C::Reduce,        "binomial"},
  {A::ReduceRing,                    C::Reduce,        "ring"},
  {A::ReduceHierarchical,            C::Reduce,        "hierarchical"},
  {A::ReduceShm,                     C::Reduce,        "shm"},
  {A::BroadcastBinomial,             C::Broadcast,     "binomial"},
  {A::BroadcastChain,                C::Broadcast,     "chain"},
  {A::BroadcastScatterAllgather,     C::Broadcast,     "scatter_allgather"},
  {A::BroadcastHierarchical,         C::Broadcast,     "hierarchical"},
  {A::BroadcastShm,                  C::Broadcast,     "shm"},
  {A::ReduceScatterRing,             C::ReduceScatter, "ring"},
  {A::ReduceScatterRecursiveHalving, C::ReduceScatter, "recursive_halving"},
  {A::ReduceScatterHierarchical,     C::ReduceScatter, "hierarchical"},
  {A::ReduceScatterShm,              C::ReduceScatter, "shm"},
  {A::AllgatherRing,                 C::Allgather,     "ring"},
  {A::AllgatherBruck,                C::Allgather,     "bruck"},
  {A::AllgatherHierarchical,         C::Allgather,     "hierarchical"},
  {A::AllgatherShm,                  C::Allgather,     "shm"},
  {A::AlltoallPairwise,              C::Alltoall,      "pairwise"},
  {A::AlltoallBruck,                 C::Alltoall,      "bruck"},
  {A::AlltoallShm,                   C::Alltoall,      "shm"},
  {A::AlltoallvPairwise,             C::Alltoallv,     "pairwise"},
  {A::GatherLinear,                  C::Gather,        "linear"},
  {A::GatherBinomial,                C::Gather,        "binomial"},
  {A::ScatterLinear,                 C::Scatter,       "linear"},
  {A::ScatterBinomial,               C::Scatter,       "binomial"},
  {A::BarrierDissemination,          C::Barrier,       "dissemination"},
};

constexpr std::string_view kCollectiveNames[] = {
  "allreduce", "reduce", "broadcast", "reduce_scatter", "allgather",
  "alltoall", "alltoallv", "gather", "scatter", "barrier",
};
// clang-format on

static_assert(std::size(kAlgorithms) == kAlgorithmCount, "one table row per AlgorithmId");
static_assert(std::size(kCollectiveNames) == kCollectiveCount, "one name per Collective");

constexpr bool table_in_id_order() {
  for (size_t i = 0; i < std::size(kAlgorithms); ++i) {
    if (static_cast<size_t>(kAlgorithms[i].id) != i) return false;
    if (i > 0 && kAlgorithms[i].collective < kAlgorithms[i - 1].collective) return false;
  }
  return true;
}
static_assert(table_in_id_order(), "rows in AlgorithmId order, grouped by collective");

}  // namespace

std::span<const AlgorithmInfo> algorithm_table() { return kAlgorithms; }

std::span<const AlgorithmInfo> algorithms_of(Collective collective) {
  size_t begin = 0;
  while (begin < std::size(kAlgorithms) && kAlgorithms[begin].collective != collective) ++begin;
  size_t end = begin;
  while (end < std::size(kAlgorithms) && kAlgorithms[end].collective == collective) ++end;
  return std::span<const AlgorithmInfo>(kAlgorithms).subspan(begin, end - begin);
}

const AlgorithmInfo& algorithm_info(AlgorithmId id) { return kAlgorithms[static_cast<size_t>(id)]; }

std::string_view algorithm_name(AlgorithmId id) { return algorithm_info(id).name; }

const std::string& qualified_algorithm_name(AlgorithmId id) {
  static const auto* const kNames = [] {
    auto* names = new std::string[kAlgorithmCount];
    for (size_t i = 0; i < kAlgorithmCount; ++i) {
      names[i] = std::string(collective_name(kAlgorithms[i].collective)) + ":" +
                 std::string(kAlgorithms[i].name);
    }
    return names;
  }();
  return kNames[static_cast<size_t>(id)];
}

Collective algorithm_collective(AlgorithmId id) { return algorithm_info(id).collective; }

std::string_view collective_name(Collective collective) {
  const auto index = static_cast<size_t>(collective);
  return index < kCollectiveCount ? kCollectiveNames[index] : std::string_view("?");
}

std::optional<Collective> find_collective(std::string_view name) {
  for (size_t i = 0; i < kCollectiveCount; ++i) {
    if (kCollectiveNames[i] == name) return static_cast<Collective>(i);
  }
  return std::nullopt;
}

std::optional<AlgorithmId> find_algorithm(Collective collective, std::string_view name) {
  for (const AlgorithmInfo& info : algorithms_of(collective)) {
    if (info.name == name) return info.id;
  }
  return std::nullopt;
}

std::string collective_names() {
  std::string out;
  for (std::string_view name : kCollectiveNames) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

std::string algorithm_names(Collective collective) {
  std::string out;
  for (const AlgorithmInfo& info : algorithms_of(collective)) {
    if (!out.empty()) out += ", ";
    out += info.name;
  }
  return out;
}

}  // namespace plexus::comm
