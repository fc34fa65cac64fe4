// spawn.h - starts one rank: fork, then exec of the command with the rank's environment.
//
// The child gets its own process group (so signals are forwarded to the rank and everything it
// started, and a terminal's Ctrl-C reaches the ranks only through the launcher), asks the kernel
// for SIGKILL when the launcher dies (PR_SET_PDEATHSIG), reads /dev/null as stdin, and writes
// stdout and stderr into two pipes. An exec failure travels back through a close-on-exec pipe,
// so "program not found" is reported at once instead of surfacing as a rank exiting 127.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace plexus::launcher {

struct SpawnedRank {
  int rank = -1;
  pid_t pid = -1;       // also the process-group id
  int stdout_fd = -1;   // non-blocking read ends
  int stderr_fd = -1;
};

struct SpawnResult {
  bool ok = false;
  SpawnedRank process;    // valid when ok
  std::string error;      // when !ok: "cannot run 'prog': No such file or directory"
};

// Starts `command` (command[0] looked up in PATH) with exactly the variables in `env`. The
// child keeps descriptor `inherit_fd` (>= 0) open across exec, under the same number; every
// other descriptor the launcher opened is close-on-exec.
SpawnResult spawn_rank(int rank, const std::vector<std::string>& command,
                       const std::vector<std::string>& env, int inherit_fd = -1);

// Sends `sig` to the rank's process group, and to the rank itself if it left the group.
void signal_rank(pid_t pid, int sig);

}  // namespace plexus::launcher
