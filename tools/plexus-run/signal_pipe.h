// signal_pipe.h - the self-pipe that turns SIGINT, SIGTERM and SIGCHLD into readable bytes.
//
// The handlers only write the signal number to a non-blocking pipe, so the supervisor's poll()
// wakes for a signal exactly as for output, and all real work happens outside signal context.
// SIGPIPE is ignored so a closed stdout cannot kill the launcher before it reaps its ranks.
#pragma once

#include <signal.h>

namespace plexus::launcher {

class SignalPipe {
 public:
  // Installs the handlers; returns false (errno set) if the pipe or a handler cannot be set up.
  bool install();
  // The read end, to poll for POLLIN.
  int fd() const;
  // Reads one pending signal number, or 0 if none is pending. Never blocks.
  int next_signal();
};

// Run in a forked child before exec: restores default dispositions for the signals above (so a
// signal before exec cannot reach the launcher's pipe) and unblocks `saved_mask`.
void reset_signals_in_child(const sigset_t& saved_mask);

}  // namespace plexus::launcher
