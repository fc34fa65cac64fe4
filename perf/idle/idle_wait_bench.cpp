// plexus-idle-bench - what a rank waiting in a collective costs the machine: the CPU time each
// waiting rank's process uses (all its threads: the caller, the progress and liveness threads)
// while rank 0 keeps it waiting, as a share of one core.
//
//   plexus-run -n 4 -- plexus-idle-bench [--wait-seconds 2] [--rounds 3] [--collective barrier]
//
// Each round: every rank meets in a barrier; rank 0 then sleeps --wait-seconds before it calls
// the collective (a barrier, or a 4-byte allreduce), while the other ranks call it at once and
// wait. Each waiting rank measures its process CPU time (getrusage RUSAGE_SELF: user + system)
// and the wall time across its call; how much later than rank 0's measured sleep that call
// returned ("late") is what waking up costs it (with the collective's own latency). Rank 0
// prints one row per rank and round and the largest share, with what shapes it: ranks on this
// host against the CPUs this process may run on (sched_getaffinity; more ranks than CPUs is
// oversubscribed), and the transport.
// A figure to read, never a pass/fail: docs/performance.md records it. Exit codes: 0 done,
// 1 a failed Plexus call (its message printed), 2 bad usage.
#include <sched.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "plexus/plexus.h"

namespace {

struct Options {
  double wait_seconds = 2.0;
  int rounds = 3;
  std::string collective = "barrier";
};

double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

// Returns 1 after printing the failed call's message (naming the rank), else 0.
int failed(plx_result_t result, const char* what, plx_comm_t comm) {
  if (result == PLX_SUCCESS) return 0;
  std::fprintf(stderr, "plexus-idle-bench: %s: %s: %s\n", what, plx_get_error_string(result),
               plx_get_last_error(comm));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"plexus-idle-bench: CPU used by ranks waiting in a collective"};
  app.add_option("--wait-seconds", o.wait_seconds, "how long rank 0 keeps the others waiting")
      ->check(CLI::Range(0.01, 600.0));
  app.add_option("--rounds", o.rounds, "rounds, each a row per waiting rank")
      ->check(CLI::Range(1, 1000));
  app.add_option("--collective", o.collective, "what the ranks wait in")
      ->check(CLI::IsMember({"barrier", "allreduce"}));
  CLI11_PARSE(app, argc, argv);

  plx_comm_t comm = nullptr;
  if (failed(plx_comm_init_from_env(&comm), "plx_comm_init_from_env", nullptr)) return 1;
  int rank = 0, size = 1, local_size = 1;
  plx_comm_rank(comm, &rank);
  plx_comm_size(comm, &size);
  plx_comm_local_size(comm, &local_size);
  const char* transport = "";
  plx_comm_transport_name(comm, &transport);

  // Per round and rank: {wall seconds, CPU seconds} of the wait (rank 0: of its sleep),
  // gathered on rank 0.
  std::vector<double> mine(2 * o.rounds), all(rank == 0 ? 2 * o.rounds * size : 0);
  int32_t token = 1, sum = 0;
  for (int round = 0; round < o.rounds; ++round) {
    if (failed(plx_barrier(comm), "plx_barrier", comm)) return 1;
    if (rank == 0) {
      const auto start = std::chrono::steady_clock::now();
      std::this_thread::sleep_for(std::chrono::duration<double>(o.wait_seconds));
      mine[2 * round] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                            .count();
    }
    const double cpu0 = process_cpu_seconds();
    const auto wall0 = std::chrono::steady_clock::now();
    const plx_result_t r = o.collective == "barrier"
                               ? plx_barrier(comm)
                               : plx_allreduce(&token, &sum, 1, PLX_INT32, PLX_SUM, comm, nullptr);
    if (failed(r, o.collective.c_str(), comm)) return 1;
    const auto waited = std::chrono::steady_clock::now() - wall0;
    if (rank != 0) mine[2 * round] = std::chrono::duration<double>(waited).count();
    mine[2 * round + 1] = process_cpu_seconds() - cpu0;
  }
  if (failed(plx_gather(mine.data(), all.data(), mine.size(), PLX_FLOAT64, 0, comm, nullptr),
             "plx_gather", comm)) {
    return 1;
  }
  if (rank == 0) {
    const int cpus = usable_cpus();
    std::printf("# plexus-idle-bench: %d ranks, %d on this host, %d usable CPUs (%s), transport "
                "%s; rank 0 keeps the others waiting %.2f s in %s\n",
                size, local_size, cpus,
                local_size > cpus ? "oversubscribed" : "not oversubscribed", transport,
                o.wait_seconds, o.collective.c_str());
    std::printf("# %5s %5s %10s %10s %12s %10s\n", "round", "rank", "wait (s)", "CPU (s)",
                "% of a core", "late (us)");
    double worst = 0;
    for (int round = 0; round < o.rounds; ++round) {
      for (int r = 1; r < size; ++r) {
        const double wall = all[2 * o.rounds * r + 2 * round];
        const double cpu = all[2 * o.rounds * r + 2 * round + 1];
        const double share = wall > 0 ? 100.0 * cpu / wall : 0;
        const double late_us = 1e6 * (wall - all[2 * round]);  // rank 0's sleep
        worst = std::max(worst, share);
        std::printf("  %5d %5d %10.3f %10.4f %12.2f %10.0f\n", round, r, wall, cpu, share,
                    late_us);
      }
    }
    std::printf("# largest share of a core used by a waiting rank: %.2f %%\n", worst);
  }
  return failed(plx_comm_destroy(comm), "plx_comm_destroy", comm);
}
