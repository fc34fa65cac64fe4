// explain.h - plexus-train --explain: rank 0 prints one line per rank saying where it sits.
//
//   explain: rank 5 of 8: (d=1, p=0, t=1); D group [1,5]; P group [5,7]; T group [4,5];
//            embedding group [5,7]; layers blocks 0-2 +embed; plugin D 0.1.0; plugin P 0.1.0; ...
// (one line; wrapped here). Groups list global ranks in coordinate order; the embedding group
// (first and last pipeline stage of each (d, t)) appears only when |P| > 1 and the rank is in
// one. Layers list this rank's chunks in local order, blocks inclusive, "+embed" on global chunk
// 0 and "+head" on the last. Each rank formats its own line and sends it to rank 0, which prints
// all of them in rank order (docs/placement.md).
#pragma once

#include <string>

#include "engine/placement/placement.h"
#include "engine/plugin/active_plugins.h"
#include "engine/state/stage_model.h"

namespace plexus::engine {

// This rank's line, without a trailing newline.
std::string explain_line(const Placement& placement, int rank, const StageModel& model,
                         const ActivePlugins& plugins);

// Collective over world: rank 0 prints every rank's line to stdout. Throws CommFailure.
void print_explanation(const std::string& line, plx_comm_t world, int world_rank, int world_size);

}  // namespace plexus::engine
