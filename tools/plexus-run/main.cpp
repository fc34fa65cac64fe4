// plexus-run - starts N ranks of a program on this host, like `torchrun --standalone`.
//
//   plexus-run -n 4 [--master-addr A] [--master-port P] [--grace-seconds S]
//              [--term-grace-seconds S] [--no-prefix] -- PROGRAM ARGS...
//
// Rank r runs with PLEXUS_RANK=r, PLEXUS_WORLD_SIZE=N, PLEXUS_LOCAL_RANK=r,
// PLEXUS_LOCAL_WORLD_SIZE=N, PLEXUS_MASTER_ADDR and PLEXUS_MASTER_PORT (unless given, a port
// the launcher already listens on and passes to rank 0 as PLEXUS_RENDEZVOUS_FD), PLEXUS_JOB_TOKEN (random per job, unless set: only this job's ranks can join), and
// OPENBLAS_NUM_THREADS / OMP_NUM_THREADS = max(1, physical cores / N) where unset.
// SIGTERM or SIGINT to the launcher is forwarded to every rank, which then has
// --term-grace-seconds (default 60) to finish its step, save and exit before SIGKILL.
// Exit codes: 0 when every rank exits 0 (also after a forwarded SIGTERM); 2 for bad usage or a
// program that cannot be started; otherwise the first failing rank's code (128 + signal), see
// supervisor.h.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include <unistd.h>

#include "tools/plexus-run/launch_options.h"
#include "tools/plexus-run/rank_environment.h"
#include "tools/plexus-run/signal_pipe.h"
#include "tools/plexus-run/spawn.h"
#include "tools/plexus-run/supervisor.h"

namespace {

constexpr int kUsageError = 2;
constexpr int kMaxRanks = 4096;

using plexus::launcher::launcher_message;
using plexus::launcher::LaunchOptions;

// Parses argv into *options; returns -1 to go on, else the exit code to return now.
int parse_options(int argc, char** argv, LaunchOptions* options) {
  CLI::App app{"plexus-run: start N ranks of PROGRAM on this host (a local launcher):\n"
               "  plexus-run -n N [OPTIONS] -- PROGRAM [ARGS...]",
               "plexus-run"};
  app.add_option("-n,--nproc-per-node", options->nranks, "number of ranks to start (>= 1)")
      ->required();
  app.add_option("--master-addr", options->master_addr, "rendezvous address for rank 0")
      ->capture_default_str();
  app.add_option("--master-port", options->master_port,
                 "rendezvous TCP port (default: a free port)");
  app.add_option("--grace-seconds", options->grace_seconds,
                 "after a rank fails, how long the others may take to exit before SIGTERM")
      ->capture_default_str();
  app.add_option("--term-grace-seconds", options->term_grace_seconds,
                 "after forwarding SIGTERM/SIGINT to the ranks, how long they may take to save "
                 "and exit before SIGKILL")
      ->capture_default_str();
  bool no_prefix = false;
  app.add_flag("--no-prefix", no_prefix, "do not prefix output lines with \"[RANK] \"");
  // Everything from the first positional (or after "--") on is PROGRAM ARGS..., untouched.
  app.prefix_command();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kUsageError;
  }
  options->command = app.remaining();
  if (!options->command.empty() && options->command.front() == "--") {
    options->command.erase(options->command.begin());
  }
  options->prefix = !no_prefix;

  std::string error;
  if (!options->command.empty() && options->command.front().starts_with("-")) {
    error = fmt::format("unknown option '{}' (see plexus-run --help)", options->command.front());
  } else if (options->nranks < 1 || options->nranks > kMaxRanks) {
    error = fmt::format("-n {} not in 1..{}", options->nranks, kMaxRanks);
  } else if (options->command.empty()) {
    error = "no PROGRAM given (usage: plexus-run -n N [options] -- PROGRAM [ARGS...])";
  } else if (options->master_port < 0 || options->master_port > 65535) {
    error = fmt::format("--master-port {} not in 1..65535", options->master_port);
  } else if (!(options->grace_seconds >= 0 && options->grace_seconds <= 86400)) {
    error = fmt::format("--grace-seconds {} not in 0..86400", options->grace_seconds);
  } else if (!(options->term_grace_seconds >= 0 && options->term_grace_seconds <= 86400)) {
    error = fmt::format("--term-grace-seconds {} not in 0..86400", options->term_grace_seconds);
  } else if (options->master_addr.empty()) {
    error = "--master-addr is empty";
  }
  if (!error.empty()) {
    launcher_message(error);
    return kUsageError;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace plexus::launcher;
  LaunchOptions options;
  if (int code = parse_options(argc, argv, &options); code >= 0) return code;

  int port = options.master_port;
  // No port given: listen on one the kernel picks and hand the socket to rank 0, so nothing can
  // take the port before rank 0's rendezvous serves it (rank_environment.h).
  // One rank has no rendezvous; an IPv6 address or a host name is left to rank 0 to bind.
  int listener = -1;
  if (port == 0 && options.nranks > 1) {
    listener = open_rendezvous_listener(options.master_addr, &port);
  }
  if (port == 0 && (options.nranks == 1 || errno == EAFNOSUPPORT)) {
    port = find_free_port(options.master_addr);
  }
  if (port == 0) {
    launcher_message(fmt::format("no free TCP port found on {}: {}", options.master_addr,
                                 std::strerror(errno)));
    return 1;
  }

  const std::string job_token = random_job_token();
  if (job_token.empty()) {
    launcher_message(fmt::format("cannot make a job token: getrandom: {}", std::strerror(errno)));
    return 1;
  }

  SignalPipe signals;
  if (!signals.install()) {
    launcher_message(fmt::format("cannot install signal handlers: {}", std::strerror(errno)));
    return 1;
  }
  Supervisor supervisor(options, signals);
  for (int rank = 0; rank < options.nranks; ++rank) {
    SpawnResult spawned =
        spawn_rank(rank, options.command, rank_environment(options, port, job_token, rank,
                                                           listener),
                   rank == 0 ? listener : -1);
    if (rank == 0 && listener >= 0) {
      close(listener);  // rank 0 holds it now (or failed to start, reported below)
      listener = -1;
    }
    if (!spawned.ok) {
      launcher_message(spawned.error);
      supervisor.kill_all();
      return kUsageError;
    }
    supervisor.add(spawned.process);
  }
  return supervisor.run();
}
