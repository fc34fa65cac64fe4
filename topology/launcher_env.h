// launcher_env.h - who am I? Rank, world size and rendezvous address from the launcher's env.
//
// Families are tried in the order plexus.h documents for plx_comm_init_from_env: Plexus's own
// PLEXUS_*, torchrun, Open MPI, MPICH/Hydra, Slurm. The first family whose rank or size variable
// is set provides both; local rank and local size are looked up independently (first one set).
// One reader for every layer: comm's bootstrap (comm/bootstrap/launcher_env.h, which reports
// errors through set_error), the engine (World, and the rank plexus-train names before the
// communicator exists) and the tools. Errors come back as text, as topology/settings' readers do.
// Thread safety: reads the environment only.
#pragma once

#include <string>

#include "plexus/plexus.h"

namespace plexus::topology {

struct LauncherEnv {
  std::string family = "none";  // "PLEXUS", "torchrun", "Open MPI", "MPICH", "Slurm" or "none"
  int rank = 0;
  int world_size = 1;
  int local_rank = -1;  // -1: not given, computed from host ids at rendezvous
  int local_size = -1;  // -1: not given
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
};

// Reads the environment. Returns PLX_ERROR_INVALID_ARGUMENT and sets *error (naming the variable
// and its value) for a malformed value, a family with only one of rank/size set, a rank not
// below the world size, or a local rank not below the local size. *out is written only on
// success. With with_local false the local rank and size variables are not read (both stay -1):
// what a rank needs to reach the rendezvous, so that one whose local variables are bad can still
// tell every other rank why (plx_comm_init_from_env).
plx_result_t read_launcher_env(LauncherEnv* out, std::string* error, bool with_local = true);

}  // namespace plexus::topology
