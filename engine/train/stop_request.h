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
// Set-up is different: it has nothing to save and may take long (building a large model,
// reading a checkpoint), so a stop request there must not wait for the end of a first step.
// While a SetupStopScope lives (inside a StopRequestScope), SIGTERM or SIGINT writes
//   "<prefix>stopped by SIGTERM during set-up (<stage>): nothing was trained or saved\n"
// to stderr and ends the process at once with the signal's default action (the launcher sees
// the rank killed by that signal, as for a signal during communicator creation). The handler
// only calls write, signal and raise (async-signal-safe).
//
// Thread safety: stop_requested(), stop_signal() and setup_stage() may be called from any
// thread. Install at most one StopRequestScope and one SetupStopScope at a time (constructing a
// second throws std::logic_error).
#pragma once

#include <signal.h>

#include <string>

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

// The set-up phase (see above). `prefix` is copied (its first 255 bytes), e.g.
// "plexus-train: rank 3: ". A stop already requested when it is constructed ends the process
// the same way at once. The destructor returns to recording requests.
class SetupStopScope {
 public:
  explicit SetupStopScope(const std::string& prefix);
  ~SetupStopScope();
  SetupStopScope(const SetupStopScope&) = delete;
  SetupStopScope& operator=(const SetupStopScope&) = delete;
};

// Names what set-up is doing, for the stop message above and for out-of-memory messages:
// `stage` must outlive its use (a string literal), e.g. "building the model". Kept after the
// scope ends (the trainer sets "training" and so on).
void set_setup_stage(const char* stage);
// The last stage set ("starting" before any).
const char* setup_stage();

}  // namespace plexus::engine
