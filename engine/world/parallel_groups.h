// parallel_groups.h - the communicators of one rank's parallelism axes, split from the world.
//
// For a resolved placement with degrees |D|, |P|, |T| and this rank's coordinates (d, p, t):
//   data      ranks sharing (p, t), ordered by d   (the D plugin averages gradients here)
//   pipeline  ranks sharing (d, t), ordered by p   (activations move here)
//   tensor    ranks sharing (d, p), ordered by t   (Megatron-LM's in-layer allreduces)
//   embedding the first and the last pipeline stage of each (d, t), only when |P| > 1: they
//             both hold the tied token embedding wte and sum its gradient here (as Megatron-LM)
// Each is made with plx_comm_split (MPI_Comm_split semantics), so every rank of the world must
// construct ParallelGroups at the same point. Ranks in no embedding group get nullptr.
#pragma once

#include "engine/placement/placement.h"
#include "plexus/plexus.h"

namespace plexus::engine {

class ParallelGroups {
 public:
  // Splits `world` (collective over it). Throws CommFailure naming the group that failed.
  ParallelGroups(plx_comm_t world, int world_rank, const Placement& placement);
  ParallelGroups(const ParallelGroups&) = delete;
  ParallelGroups& operator=(const ParallelGroups&) = delete;
  ~ParallelGroups();  // aborts what finish() did not destroy

  plx_comm_t data() const { return data_; }
  plx_comm_t pipeline() const { return pipeline_; }
  plx_comm_t tensor() const { return tensor_; }
  plx_comm_t embedding() const { return embedding_; }  // nullptr if not first or last stage

  // Destroys the communicators (collective: waits for the other members). False (message on
  // stderr) if any destroy failed.
  bool finish();
  // Aborts them at once (after a failure).
  void abort();

 private:
  int rank_ = 0;
  plx_comm_t data_ = nullptr;
  plx_comm_t pipeline_ = nullptr;
  plx_comm_t tensor_ = nullptr;
  plx_comm_t embedding_ = nullptr;
};

}  // namespace plexus::engine
