// executor.h - runs one rank's plan (plan.h) for one training step.
//
// It calls the engine's forward and backward for each compute action, and runs each exchange
// on the links, keeping the boundary tensors in between: the input received for a forward (freed
// once the forward has run: the engine keeps what its backward needs), the outputs and input
// gradients waiting to be sent, and the output gradients received for a backward. Buffers are
// reused across actions and steps. Every action is checked against the plan's promises (an input
// arrived before its forward, each forward and backward runs once, everything produced is sent):
// a schedule bug returns PLX_ERROR_INTERNAL naming the action, never a wrong result.
#pragma once

#include <string>

#include "p2p.h"
#include "plan.h"
#include "plexus/plugin.h"

namespace plexus::pipeline {

// *blocked_s receives the seconds spent in exchanges. On failure *why holds the cause (a stage
// op's own message, or the exchange that failed).
plx_result_t run_plan(const Plan& plan, const Geometry& g, const plx_stage_ops_t& ops,
                      Links* links, double* blocked_s, std::string* why);

}  // namespace plexus::pipeline
