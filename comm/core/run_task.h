// run_task.h - what the executor does with a task: post its sends and receives, run its
// collectives in order (choosing each one's algorithm, comparing argument signatures, applying
// a pre-multiplied sum), wait for the sends and receives, and finish the task.
#pragma once

#include "comm/core/task.h"

struct plx_comm;

namespace plexus::comm {

// Runs every operation of `task` on comm's transport and calls task.finish().
void run_task(plx_comm* comm, Task& task);

}  // namespace plexus::comm
