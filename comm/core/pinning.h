// pinning.h - pins a communicator's progress thread (executor.h) to cpus near its rank, as
// PLEXUS_PIN asks (topology/cpu_binding.h has the rule: by default the NUMA node of the rank's
// local rank, unless the process is already bound).
#pragma once

#include "plexus/plexus.h"

struct plx_comm;

namespace plexus::comm {

// Reads PLEXUS_PIN and installs the executor's start hook: when the progress thread starts, it
// plans its binding from comm->local_rank and comm->local_size (plan_pinning), logs the plan at
// INFO ("rank 1: PLEXUS_PIN=core: local rank 1 of 2, ...") and binds itself. Returns
// PLX_ERROR_INVALID_ARGUMENT "rank R: PLEXUS_PIN=x is not one of none, numa, core" for a bad
// value. An hwloc failure, local ranks the plan cannot use or a refused binding is a WARN line
// and leaves the thread unpinned (pinning is an optimisation).
plx_result_t pin_progress_thread(plx_comm* comm);

}  // namespace plexus::comm
