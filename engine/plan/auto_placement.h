// auto_placement.h - `plexus-train --placement auto` on a running job: every rank measures the
// compute the planner needs (compute_probe.h, all ranks at once, averaged so that every rank
// plans from the same figures), the collectives are priced by the world communicator's cost
// model (plx_comm_predict_time), the planner ranks the candidates (planner.h), rank 0 prints
// the table, and every rank continues with the chosen plan's placement and options.
#pragma once

#include "engine/config/options.h"
#include "engine/world/world.h"

namespace plexus::engine {

// The options of the chosen plan (placement string, microbatches, 1F1B). The budget is
// o.memory_per_rank, or (0) on cpu the host's memory (its cgroup's limit, if lower) over the
// ranks on this host, on cuda the GPU's memory over the ranks sharing it. Throws std::invalid_argument (bad input, exit code 2) when no candidate fits or
// none can run, naming the smallest peak any candidate needs; CommFailure from the
// collectives; what the model throws from the probe.
TrainOptions plan_auto_placement(const TrainOptions& o, World& world);

}  // namespace plexus::engine
