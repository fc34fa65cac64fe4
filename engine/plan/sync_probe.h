// sync_probe.h - what one collective costs the ranks of this job beyond the cost model's
// prediction when they are busy: on a host with more ranks than cores (normal here: 4-8 ranks
// on 2 cores) a rank that reaches a collective waits until its peers are scheduled again, a cost
// the alpha-beta model, measured on idle ranks, does not see. The planner adds it to every
// collective call and pipeline message it prices (planner.h).
//
// Every rank of `comm` runs the same pattern twice, together: bursts of arithmetic (`iterations`
// long ones, 8x as many short ones),
// then the same bursts each followed by a one-float allreduce on comm. The overhead per call is
// the difference per iteration, minus the cost model's own prediction of that allreduce,
// floored at 0, the median of three rounds. It depends on how long the ranks compute between collectives (ranks in
// lockstep with short bursts catch each other spinning; long bursts leave a waiting rank asleep
// or descheduled), so it is measured for a short burst (about 20 us) and a long one (about
// 400 us), and read between them by the burst's length (SyncOverhead::at). The ranks' means are
// returned on every rank (so every rank plans alike). Collective over comm.
#pragma once

#include "plexus/plexus.h"

namespace plexus::engine {

struct SyncOverhead {
  double short_burst_s = 0, short_overhead_s = 0;
  double long_burst_s = 0, long_overhead_s = 0;
  // The overhead of a collective after `burst_s` seconds of compute: linear between the two
  // measurements, constant beyond them. 0 for a default (unmeasured) value.
  double at(double burst_s) const;
};

// Throws CommFailure when a collective fails.
SyncOverhead probe_sync_overhead(plx_comm_t comm, int iterations);

}  // namespace plexus::engine
