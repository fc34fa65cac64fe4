#include "engine/world/parallel_groups.h"

#include <cstdio>
#include <string>

#include "engine/world/world.h"

namespace plexus::engine {

namespace {

plx_comm_t split(plx_comm_t world, int rank, int color, int key, const char* group) {
  plx_comm_t comm = nullptr;
  plx_result_t r = plx_comm_split(world, color, key, &comm);
  if (r != PLX_SUCCESS) {
    throw CommFailure(r, "rank " + std::to_string(rank) + ": creating the " + group +
                             " group with plx_comm_split(color " + std::to_string(color) +
                             ", key " + std::to_string(key) + "): " + plx_get_error_string(r) +
                             ": " + plx_get_last_error(world));
  }
  return comm;
}

}  // namespace

ParallelGroups::ParallelGroups(plx_comm_t world, int rank, const Placement& placement)
    : rank_(rank) {
  const int P = placement.degree('P'), T = placement.degree('T');
  const int d = placement.coordinate(rank, 'D');
  const int p = placement.coordinate(rank, 'P');
  const int t = placement.coordinate(rank, 'T');
  // One color per value of the other two coordinates; the key orders the group by this axis.
  data_ = split(world, rank, p * T + t, d, "data-parallel");
  pipeline_ = split(world, rank, d * T + t, p, "pipeline");
  tensor_ = split(world, rank, d * P + p, t, "tensor-parallel");
  if (P > 1) {
    const bool member = p == 0 || p == P - 1;
    embedding_ = split(world, rank, member ? d * T + t : PLX_UNDEFINED, p, "embedding");
  }
}

ParallelGroups::~ParallelGroups() { abort(); }

bool ParallelGroups::finish() {
  bool ok = true;
  for (plx_comm_t* comm : {&embedding_, &tensor_, &pipeline_, &data_}) {
    if (*comm == nullptr) continue;
    plx_result_t r = plx_comm_destroy(*comm);
    *comm = nullptr;
    if (r != PLX_SUCCESS) {
      std::fprintf(stderr, "plexus-train: rank %d: destroying a parallel group: %s: %s\n", rank_,
                   plx_get_error_string(r), plx_get_last_error(nullptr));
      ok = false;
    }
  }
  return ok;
}

void ParallelGroups::abort() {
  for (plx_comm_t* comm : {&embedding_, &tensor_, &pipeline_, &data_}) {
    if (*comm != nullptr) plx_comm_abort(*comm);
    *comm = nullptr;
  }
}

}  // namespace plexus::engine
