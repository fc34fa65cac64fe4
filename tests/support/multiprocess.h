// multiprocess.h - runs a test body in N real processes, one per rank.
//
// run_ranks(n, body) forks n children. Child r gets PLEXUS_RANK=r, PLEXUS_WORLD_SIZE=n,
// PLEXUS_LOCAL_RANK=r, PLEXUS_MASTER_ADDR=127.0.0.1, a fresh PLEXUS_MASTER_PORT and a random
// PLEXUS_JOB_TOKEN (one per call, as plexus-run makes) in its environment, runs body(r) and _exits with its return value (0 = pass). A child that does not
// finish within timeout_s is killed. The parent returns one RankOutcome per rank.
// The body creates its own communicator (plx_comm_init_from_env) so every test runs over the
// real rendezvous and the real transport (PLEXUS_FI_PROVIDER picks it; set it in `env`).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace plexus::test {

struct RankOutcome {
  int rank = -1;
  bool exited = false;    // exited normally (else killed by a signal or timed out)
  int exit_code = -1;     // valid when exited
  int signal = 0;         // valid when !exited and !timed_out
  bool timed_out = false;
};

// Extra environment variables for every child, as (name, value).
using EnvList = std::vector<std::pair<std::string, std::string>>;

std::vector<RankOutcome> run_ranks(int n, const std::function<int(int rank)>& body,
                                   double timeout_s = 120.0, const EnvList& env = {});

// True when every rank exited with code 0; otherwise fills *why with a readable description.
bool all_passed(const std::vector<RankOutcome>& outcomes, std::string* why);

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_tcp_port();

// Writes "rank R: <message>" to stderr (visible in ctest output) and returns 1.
int rank_failure(int rank, const std::string& message);

}  // namespace plexus::test
