// supervisor.h - watches the ranks until they have all exited, and decides the exit code.
//
// One poll() loop (it blocks; its timeout is the next deadline, at most 1 s) over every rank's
// stdout and stderr and the signal pipe:
//  - output is copied line by line with the "[R] " prefix (line_prefixer.h);
//  - SIGINT/SIGTERM to the launcher are forwarded to every rank's process group; a second
//    SIGINT sends SIGKILL; ranks still alive term_grace_seconds after a forwarded signal get
//    SIGKILL (the time a trainer has to finish its step and save a checkpoint);
//  - the first rank that exits non-zero or dies of a signal is reported, the others get
//    grace_seconds to exit on their own (they normally detect the lost peer), then SIGTERM,
//    then SIGKILL kill_after_seconds later;
//  - after SIGKILL a rank that is still not reaped 5 s later is abandoned with a message;
//  - when a rank is reaped, whatever is left in its process group (background jobs) is SIGKILLed,
//    so no descendant outlives the launcher while holding its pipes.
// Exit code: the first failing rank's code (128 + signal for a signal), else 1 if a rank was
// abandoned, else 0: every rank exited 0, also when they did so after a forwarded SIGTERM or
// SIGINT (a trainer that saved and stopped cleanly).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tools/plexus-run/launch_options.h"
#include "tools/plexus-run/line_prefixer.h"
#include "tools/plexus-run/signal_pipe.h"
#include "tools/plexus-run/spawn.h"

namespace plexus::launcher {

class Supervisor {
 public:
  using Clock = std::chrono::steady_clock;

  Supervisor(const LaunchOptions& options, SignalPipe& signals)
      : options_(options), signals_(signals) {}

  // Takes ownership of the rank's pipes.
  void add(const SpawnedRank& rank);
  // Runs until every rank is reaped (or abandoned) and returns the launcher's exit code.
  int run();
  // SIGKILLs every rank and reaps them (bounded): used when a later rank could not be started.
  void kill_all();

 private:
  struct Rank {
    int rank;
    pid_t pid;
    bool running = true;
  };
  struct Stream {
    int rank;
    int fd;
    LinePrefixer prefixer;
  };

  void reap();
  void report_exit(const Rank& rank, int status);
  void handle_signal(int sig);
  void check_deadlines();
  void signal_running(int sig);
  void pump(Stream& stream);
  void pump_rank(int rank);
  void close_stream(Stream& stream);
  int running_count() const;
  std::string running_list() const;  // "rank 2" or "ranks 0, 3"
  std::optional<Clock::time_point> next_deadline() const;

  const LaunchOptions& options_;
  SignalPipe& signals_;
  std::vector<Rank> ranks_;
  std::vector<Stream> streams_;
  std::vector<char> buffer_ = std::vector<char>(1 << 16);

  int first_failure_code_ = 0;   // 0: no rank has failed yet
  int launcher_signal_ = 0;      // the first SIGINT/SIGTERM the launcher received
  int sigint_count_ = 0;
  std::optional<Clock::time_point> term_at_;     // SIGTERM the ranks still running
  std::optional<Clock::time_point> kill_at_;     // SIGKILL them
  std::optional<Clock::time_point> abandon_at_;  // stop waiting for unkillable ranks
  std::optional<Clock::time_point> drain_until_; // all reaped: stop waiting for pipe EOF
};

// "SIGKILL (9)"
std::string signal_description(int sig);

// Writes "plexus-run: <message>\n" to stderr in one write.
void launcher_message(const std::string& message);

}  // namespace plexus::launcher
