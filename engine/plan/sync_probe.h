// sync_probe.h - what one collective costs the ranks of this job beyond the cost model's
// prediction when they are busy: on a host with more ranks than cores (normal here: 4-8 ranks
// on 2 cores) a rank that reaches a collective waits until its peers are scheduled again, a cost
// the alpha-beta model, measured on idle ranks, does not see. The planner adds it to every
// collective call and pipeline message it prices (planner.h).
//
// Every rank of `comm` runs the same pattern twice, together: `iterations` bursts of arithmetic
// (about 200 us each, the size of a small microbatch's layer), then the same bursts each followed
// by a one-float allreduce on comm. The overhead per call is the difference per iteration,
// minus the cost model's own prediction of that allreduce, floored at 0; the ranks' mean is
// returned on every rank (so every rank plans alike). Collective over comm.
#pragma once

#include "plexus/plexus.h"

namespace plexus::engine {

// Seconds; throws CommFailure when a collective fails.
double probe_sync_overhead(plx_comm_t comm, int iterations);

}  // namespace plexus::engine
