// Pinning of a communicator's progress thread (PLEXUS_PIN), in real ranks: each rank starts its
// progress thread (a non-blocking barrier), reads that thread's affinity from the kernel
// (/proc/self/task/<tid>/status, the thread named "plx-progress") and checks it against hwloc's
// NUMA node or core; ranks allgather their sets to check that PLEXUS_PIN=core gives each its own.
// Also plan_pinning() itself, and a bad PLEXUS_PIN value.
#include <gtest/gtest.h>
#include <hwloc.h>
#include <sched.h>

#include <cstring>
#include <dirent.h>
#include <fstream>
#include <string>
#include <vector>

#include "plexus/plexus.h"
#include "tests/support/multiprocess.h"
#include "topology/cpu_binding.h"

namespace plexus::topology {
namespace {

using test::EnvList;
using test::rank_failure;
using test::run_ranks;

std::string read_line_after(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) {
      std::string value = line.substr(key.size());
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.erase(0, 1);
      return value;
    }
  return "";
}

// Cpus_allowed_list of this process's thread named `name`, as the kernel reports it.
std::string thread_cpus(const std::string& name) {
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return "";
  std::string found;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const std::string task = std::string("/proc/self/task/") + e->d_name;
    std::ifstream comm(task + "/comm");
    std::string comm_name;
    std::getline(comm, comm_name);
    if (comm_name == name) found = read_line_after(task + "/status", "Cpus_allowed_list:");
  }
  closedir(dir);
  return found;
}

// The cpulist of hwloc object `type` number index mod count among those that meet the
// process's cpus, within them (the reference the pinning must match).
std::string hwloc_reference(hwloc_obj_type_t type, int index) {
  hwloc_topology_t t;
  hwloc_topology_init(&t);
  hwloc_topology_load(t);
  hwloc_bitmap_t allowed = hwloc_bitmap_alloc();
  hwloc_get_cpubind(t, allowed, HWLOC_CPUBIND_PROCESS);
  std::vector<hwloc_obj_t> objs;
  for (int i = 0; i < hwloc_get_nbobjs_by_type(t, type); ++i) {
    hwloc_obj_t o = hwloc_get_obj_by_type(t, type, static_cast<unsigned>(i));
    if (hwloc_bitmap_intersects(o->cpuset, allowed)) objs.push_back(o);
  }
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  hwloc_bitmap_and(set, objs[static_cast<size_t>(index) % objs.size()]->cpuset, allowed);
  char* text = nullptr;
  hwloc_bitmap_list_asprintf(&text, set);
  std::string out = text;
  free(text);
  hwloc_bitmap_free(set);
  hwloc_bitmap_free(allowed);
  hwloc_topology_destroy(t);
  return out;
}

int numa_count() {
  hwloc_topology_t t;
  hwloc_topology_init(&t);
  hwloc_topology_load(t);
  const int n = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  hwloc_topology_destroy(t);
  return n;
}

std::string process_cpus() {
  ProcessBinding b;
  std::string error;
  if (process_binding(&b, &error) != PLX_SUCCESS) return "error: " + error;
  return b.allowed_cpus;
}

EnvList env(const std::string& pin) {
  EnvList e = {{"PLEXUS_FI_PROVIDER", "tcp"},
               {"PLEXUS_TIMEOUT_MS", "60000"},
               {"PLEXUS_COST_MODEL", "2.5,0.1,0.05"}};
  if (!pin.empty()) e.emplace_back("PLEXUS_PIN", pin);
  return e;
}

// Creates a communicator, runs a non-blocking barrier (which starts the progress thread), and
// returns the progress thread's cpus in *cpus and every rank's in *all (allgathered).
int progress_thread_cpus(int rank, std::string* cpus, std::vector<std::string>* all) {
  plx_comm_t comm = nullptr;
  if (plx_comm_init_from_env(&comm) != PLX_SUCCESS)
    return rank_failure(rank, std::string("init: ") + plx_get_last_error(nullptr));
  plx_request_t request = nullptr;
  if (plx_ibarrier(comm, &request) != PLX_SUCCESS || plx_wait(request) != PLX_SUCCESS)
    return rank_failure(rank, std::string("ibarrier: ") + plx_get_last_error(comm));
  *cpus = thread_cpus("plx-progress");
  int size = 0;
  plx_comm_size(comm, &size);
  constexpr size_t kWidth = 64;
  std::vector<char> mine(kWidth, 0), gathered(kWidth * static_cast<size_t>(size), 0);
  std::strncpy(mine.data(), cpus->c_str(), kWidth - 1);
  if (plx_allgather(mine.data(), gathered.data(), kWidth, PLX_INT8, comm, nullptr) != PLX_SUCCESS)
    return rank_failure(rank, std::string("allgather: ") + plx_get_last_error(comm));
  for (int r = 0; r < size; ++r) all->emplace_back(gathered.data() + r * kWidth);
  plx_comm_destroy(comm);
  if (cpus->empty()) return rank_failure(rank, "no thread named plx-progress");
  return 0;
}

TEST(Pinning, PlanNamesTheModeAndRejectsBadLocalRanks) {
  PinPlan plan;
  std::string error;
  ASSERT_EQ(plan_pinning(PinMode::None, 0, 1, &plan, &error), PLX_SUCCESS) << error;
  EXPECT_EQ(plan.mode, PinMode::None);
  EXPECT_EQ(plan.cpus, "");
  EXPECT_EQ(plan.reason, "PLEXUS_PIN=none: progress thread left as is");
  ASSERT_EQ(plan_pinning(PinMode::Core, 1, 2, &plan, &error), PLX_SUCCESS) << error;
  EXPECT_EQ(plan.cpus, hwloc_reference(HWLOC_OBJ_CORE, 1));
  EXPECT_EQ(plan_pinning(PinMode::Numa, 2, 2, &plan, &error), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error, "plan_pinning: local_rank 2 not in 0..1 (local_size 2)");
  EXPECT_EQ(parse_pin_mode("core"), PinMode::Core);
  EXPECT_EQ(parse_pin_mode("socket"), std::nullopt);
}

TEST(Pinning, DefaultPinsTheProgressThreadToTheRanksNumaNode) {
  const int nodes = numa_count();
  auto outcomes = run_ranks(
      2,
      [&](int rank) {
        std::string cpus;
        std::vector<std::string> all;
        if (int rc = progress_thread_cpus(rank, &cpus, &all)) return rc;
        // Unbound process: NUMA node local_rank * nodes / local_size.
        const std::string expected = hwloc_reference(HWLOC_OBJ_NUMANODE, rank * nodes / 2);
        if (cpus != expected)
          return rank_failure(rank, "progress thread on " + cpus + ", NUMA node cpus " + expected);
        return 0;
      },
      120.0, env(""));
  std::string why;
  EXPECT_TRUE(test::all_passed(outcomes, &why)) << why;
}

TEST(Pinning, CorePinsEachLocalRankToItsOwnCore) {
  auto outcomes = run_ranks(
      2,
      [&](int rank) {
        std::string cpus;
        std::vector<std::string> all;
        if (int rc = progress_thread_cpus(rank, &cpus, &all)) return rc;
        const std::string expected = hwloc_reference(HWLOC_OBJ_CORE, rank);
        if (cpus != expected)
          return rank_failure(rank, "progress thread on " + cpus + ", core cpus " + expected);
        // Two or more cores here: the two ranks' sets differ.
        if (hwloc_reference(HWLOC_OBJ_CORE, 0) != hwloc_reference(HWLOC_OBJ_CORE, 1) &&
            all.at(0) == all.at(1))
          return rank_failure(rank, "both ranks on " + all[0]);
        return 0;
      },
      120.0, env("core"));
  std::string why;
  EXPECT_TRUE(test::all_passed(outcomes, &why)) << why;
}

// A communicator split from the world (here one rank each) pins by the process's local rank, not
// by its own (0 in every one-rank split): each process's split thread gets its own core.
TEST(Pinning, CorePinsASplitCommunicatorByTheProcesssLocalRank) {
  auto outcomes = run_ranks(
      2,
      [&](int rank) {
        plx_comm_t world = nullptr, child = nullptr;
        if (plx_comm_init_from_env(&world) != PLX_SUCCESS)
          return rank_failure(rank, std::string("init: ") + plx_get_last_error(nullptr));
        if (plx_comm_split(world, rank, 0, &child) != PLX_SUCCESS || child == nullptr)
          return rank_failure(rank, std::string("split: ") + plx_get_last_error(world));
        // Only the split's progress thread runs: the world's starts with its first queued call.
        plx_request_t request = nullptr;
        if (plx_ibarrier(child, &request) != PLX_SUCCESS || plx_wait(request) != PLX_SUCCESS)
          return rank_failure(rank, std::string("ibarrier: ") + plx_get_last_error(child));
        const std::string cpus = thread_cpus("plx-progress");
        plx_comm_destroy(child);
        plx_comm_destroy(world);
        const std::string expected = hwloc_reference(HWLOC_OBJ_CORE, rank);
        if (cpus != expected)
          return rank_failure(rank, "split's progress thread on " + cpus + ", core cpus " + expected);
        return 0;
      },
      120.0, env("core"));
  std::string why;
  EXPECT_TRUE(test::all_passed(outcomes, &why)) << why;
}

TEST(Pinning, NoneLeavesTheThreadOnTheProcessCpus) {
  auto outcomes = run_ranks(
      2,
      [&](int rank) {
        const std::string before = process_cpus();
        std::string cpus;
        std::vector<std::string> all;
        if (int rc = progress_thread_cpus(rank, &cpus, &all)) return rc;
        if (cpus != before)
          return rank_failure(rank, "progress thread on " + cpus + ", process on " + before);
        return 0;
      },
      120.0, env("none"));
  std::string why;
  EXPECT_TRUE(test::all_passed(outcomes, &why)) << why;
}

TEST(Pinning, ABoundProcessIsLeftAsItIs) {
  auto outcomes = run_ranks(
      2,
      [&](int rank) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(0, &one);
        if (sched_setaffinity(0, sizeof(one), &one) != 0) return rank_failure(rank, "affinity");
        std::string cpus;
        std::vector<std::string> all;
        if (int rc = progress_thread_cpus(rank, &cpus, &all)) return rc;
        if (cpus != "0") return rank_failure(rank, "progress thread on " + cpus + ", expected 0");
        return 0;
      },
      120.0, env(""));
  std::string why;
  EXPECT_TRUE(test::all_passed(outcomes, &why)) << why;
}

TEST(Pinning, ABadValueFailsCreationWithItsName) {
  auto outcomes = run_ranks(
      2,
      [&](int rank) {
        plx_comm_t comm = nullptr;
        if (plx_comm_init_from_env(&comm) != PLX_ERROR_INVALID_ARGUMENT)
          return rank_failure(rank, "init did not fail with PLX_ERROR_INVALID_ARGUMENT");
        const std::string message = plx_get_last_error(nullptr);
        const std::string expected = "rank " + std::to_string(rank) +
                                     ": PLEXUS_PIN=socket is not one of none, numa, core";
        if (message.find(expected) == std::string::npos)
          return rank_failure(rank, "message: " + message);
        return 0;
      },
      120.0, env("socket"));
  std::string why;
  EXPECT_TRUE(test::all_passed(outcomes, &why)) << why;
}

}  // namespace
}  // namespace plexus::topology
