// launcher_env.h - the launcher's environment (rank, world size, local rank and size, rendezvous
// address) as the bootstrap reads it: topology/launcher_env.h's reader, the one every layer
// uses, with its errors reported through set_error (plx_get_last_error).
#pragma once

#include "plexus/plexus.h"
#include "topology/launcher_env.h"

namespace plexus::bootstrap {

using topology::LauncherEnv;

// topology::read_launcher_env; a refusal (PLX_ERROR_INVALID_ARGUMENT, naming the variable and
// its value) is set_error'ed. *out is written only on success.
plx_result_t read_launcher_env(LauncherEnv* out, bool with_local = true);

}  // namespace plexus::bootstrap
