// job_key.h - the secret that lets a rank into its own job's rendezvous and no other.
//
// Every rendezvous has a 32-byte key. A rank proves it knows the key (handshake.h) before the
// server spends anything on its connection, so a process of another job, or a stranger on the
// host, cannot join, fail or crash the job. Where the key comes from:
//   - plx_get_unique_id: 32 random bytes, carried inside the unique id (unique_id.h); the id is
//     the secret, shared by whatever channel the application uses (torch's store, MPI_Bcast).
//   - plx_comm_init_from_env, in this order:
//       1. PLEXUS_JOB_TOKEN (any 16..1024 bytes; plexus-run sets a random one per job);
//       2. the launcher's job id: torchrun's TORCHELASTIC_RUN_ID, Open MPI's
//          OMPI_MCA_ess_base_jobid, PMIx's PMIX_NAMESPACE, Slurm's SLURM_JOB_ID.SLURM_STEP_ID.
//          These keep two jobs from joining each other by accident; they are not secret, so they
//          do not keep out a stranger who reads them (docs/security.md);
//       3. none of these: a fixed key, and a warning that any local process can join.
//   The key is SHA-256 over a label, the source's name and its value.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "plexus/plexus.h"

namespace plexus::bootstrap {

constexpr size_t kJobKeyBytes = 32;
using JobKeyBytes = std::array<uint8_t, kJobKeyBytes>;

struct JobKey {
  JobKeyBytes bytes{};
  std::string source = "none";  // e.g. "PLEXUS_JOB_TOKEN", "Slurm job 812.0"
  bool secret = false;          // true for a random key or PLEXUS_JOB_TOKEN
};

// 32 bytes from the kernel's random source (getrandom(2)). PLX_ERROR_SYSTEM if it fails.
plx_result_t random_job_key(JobKey* out);

// The env path's key, as listed above. PLX_ERROR_INVALID_ARGUMENT naming PLEXUS_JOB_TOKEN when
// it is set but shorter than 16 or longer than 1024 bytes.
plx_result_t job_key_from_env(JobKey* out);

}  // namespace plexus::bootstrap
