// collectives.h - the collectives plexus-bench knows, one file each in this folder.
#pragma once

#include <memory>

#include "perf/harness/collective.h"

namespace plexus::bench {

std::unique_ptr<Collective> make_allreduce();
std::unique_ptr<Collective> make_broadcast();
std::unique_ptr<Collective> make_reduce();
std::unique_ptr<Collective> make_reduce_scatter();
std::unique_ptr<Collective> make_allgather();
std::unique_ptr<Collective> make_alltoall();
std::unique_ptr<Collective> make_gather();
std::unique_ptr<Collective> make_scatter();
std::unique_ptr<Collective> make_sendrecv();

}  // namespace plexus::bench
