// collectives.h - the collectives plexus-bench knows, one file each in this folder.
#pragma once

#include <memory>

#include "perf/harness/collective.h"

namespace plexus::bench {

std::unique_ptr<Collective> make_allreduce();
std::unique_ptr<Collective> make_broadcast();

}  // namespace plexus::bench
