// launch_options.h - what `plexus-run` was asked to do, after parsing and validation.
#pragma once

#include <string>
#include <vector>

namespace plexus::launcher {

struct LaunchOptions {
  int nranks = 0;                       // -n: ranks to start, >= 1
  std::string master_addr = "127.0.0.1";
  int master_port = 0;                  // 0: find a free port
  double grace_seconds = 15.0;          // after a rank fails, before SIGTERM to the others
  double kill_after_seconds = 5.0;      // after SIGTERM, before SIGKILL
  double term_grace_seconds = 60.0;     // after a forwarded SIGTERM/SIGINT, before SIGKILL (the
                                        // ranks finish their step and save a checkpoint)
  bool prefix = true;                   // "[R] " in front of every output line
  std::vector<std::string> command;     // PROGRAM ARGS..., command[0] looked up in PATH
};

}  // namespace plexus::launcher
