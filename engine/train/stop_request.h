// stop_request.h - a polite stop: SIGTERM (a preempted spot instance, plexus-run forwarding
// its own SIGTERM) or SIGINT asks the trainer to finish the current step, save and exit 0.
//
// The handlers only store the signal number in a lock-free atomic (async-signal-safe); the
// trainer polls stop_requested() after each step and agrees across ranks (World::any) before
// saving, so every rank stops after the same step. A second SIGINT while a stop is pending
// restores the default action and re-raises it (an impatient Ctrl-C kills); repeated SIGTERMs
// only keep the request (a scheduler may send several before its SIGKILL). Handlers are
// installed with SA_RESTART, so blocking system calls in the communicator resume.
//
// Thread safety: stop_requested() and stop_signal() may be called from any thread. Install at
// most one StopRequestScope at a time (constructing a second throws std::logic_error).
#pragma once

#include <signal.h>

namespace plexus::engine {

// While it lives, SIGTERM and SIGINT set the stop request; its destructor restores the
// previous handlers and clears the request. Throws std::system_error if sigaction fails.
class StopRequestScope {
 public:
  StopRequestScope();
  ~StopRequestScope();
  StopRequestScope(const StopRequestScope&) = delete;
  StopRequestScope& operator=(const StopRequestScope&) = delete;

 private:
  struct sigaction previous_term_ {};
  struct sigaction previous_int_ {};
};

// True once SIGTERM or SIGINT arrived while a StopRequestScope was installed.
bool stop_requested();
// The first signal that requested the stop (SIGTERM or SIGINT), 0 if none.
int stop_signal();
// Forgets a pending request (e.g. after acting on it).
void clear_stop_request();

}  // namespace plexus::engine
