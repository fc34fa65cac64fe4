// rank_environment.h - the environment each rank is started with.
//
// Every rank inherits the launcher's environment plus the PLEXUS_* variables that
// plx_comm_init_from_env() reads, and a BLAS/OpenMP thread count that keeps N ranks from
// oversubscribing the cores.
#pragma once

#include <string>
#include <vector>

#include "tools/plexus-run/launch_options.h"

namespace plexus::launcher {

// A TCP socket bound to a port the kernel picks on `addr` (an IPv4 address; one that is not this
// host's binds all addresses, as the rendezvous server does) and listening, close-on-exec; *port
// is its port. Returns the descriptor, or -1 with errno set (EAFNOSUPPORT for an address that is
// not IPv4 text). plexus-run passes it to rank 0 (PLEXUS_RENDEZVOUS_FD,
// comm/bootstrap/inherited_listener.h), so no other process can take the port before rank 0's
// rendezvous server serves it.
int open_rendezvous_listener(const std::string& addr, int* port);

// A TCP port on `addr` that was free a moment ago (bound to 0 and closed), or 0: for addresses
// open_rendezvous_listener does not take (IPv6, host names), where rank 0 binds it later.
int find_free_port(const std::string& addr);

// 32 random bytes from getrandom(2) as 64 hex digits: the job's PLEXUS_JOB_TOKEN, which every
// rank must prove to the rendezvous (docs/security.md). "" if the kernel gives no randomness.
std::string random_job_token();

// "NAME=value" strings for rank `rank`: the current environment with PLEXUS_RANK,
// PLEXUS_WORLD_SIZE, PLEXUS_LOCAL_RANK, PLEXUS_LOCAL_WORLD_SIZE, PLEXUS_MASTER_ADDR and
// PLEXUS_MASTER_PORT set (overriding inherited values), PLEXUS_JOB_TOKEN=job_token unless the
// environment already has one, and OPENBLAS_NUM_THREADS and
// OMP_NUM_THREADS set to topology::threads_per_rank(nranks) (the host's physical cores over the
// ranks, as plexus-train's BLAS threads) where they are unset, and IPATH_NO_BACKTRACE=1 and
// HFI_NO_BACKTRACE=1 where unset (the PSM libraries' signal handlers call exit(); see
// comm/transport/ofi/provider_select.cpp). PLEXUS_RENDEZVOUS_FD=listener_fd for rank 0 when
// listener_fd >= 0; an inherited PLEXUS_RENDEZVOUS_FD is removed for every other case.
std::vector<std::string> rank_environment(const LaunchOptions& options, int master_port,
                                          const std::string& job_token, int rank,
                                          int listener_fd = -1);

}  // namespace plexus::launcher
