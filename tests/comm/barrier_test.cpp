// barrier_test.cpp - plx_barrier on real ranks over tcp and shm (forked processes, real
// rendezvous, real libfabric transport). The shm cases skip where shm_available() says no.
//
// The ranks share one array of counters in a MAP_SHARED page mapped before the fork. Before
// barrier k every rank increments counter k; once out of barrier k it must read n there: no rank
// may leave a barrier before every rank has entered it. The ranks enter in a different order each
// round (the one "late" rank pauses briefly first), which only varies the interleaving; nothing
// asserts on time. World sizes 1, 2, 3, 4, 7 (2..7 on shm) include non-powers of two, where the
// dissemination rounds wrap around the ring.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <tuple>

#include "plexus/plexus.h"
#include "tests/comm/collective_reference.h"
#include "tests/comm/shm_available.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

constexpr int kRounds = 16;

struct SharedCounters {
  std::atomic<int> entered[kRounds];
};
static_assert(std::atomic<int>::is_always_lock_free, "counters must work across processes");

int barrier_rank(int rank, int n, const char* provider, SharedCounters* shared) {
  plx_comm_t comm = nullptr;
  const std::string init_error = init_world(n, provider, &comm);
  if (!init_error.empty()) return rank_failure(rank, init_error);
  int failures = 0;
  for (int k = 0; k < kRounds; ++k) {
    if (k % n == rank && k % 4 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    shared->entered[k].fetch_add(1);
    const plx_result_t rc = plx_barrier(comm);
    if (rc != PLX_SUCCESS) {
      rank_failure(rank, "barrier " + std::to_string(k) + ": plx_barrier returned " +
                             plx_get_error_string(rc) + ": " + plx_get_last_error(comm));
      plx_comm_abort(comm);
      return 1;
    }
    const int seen = shared->entered[k].load();
    if (seen != n) {
      rank_failure(rank, "left barrier " + std::to_string(k) + " when " + std::to_string(seen) +
                             " of " + std::to_string(n) + " ranks had entered it");
      ++failures;
    }
  }
  return finish_rank(rank, comm, failures);
}

using Param = std::tuple<std::string, int>;  // provider, world size

class BarrierRanks : public ::testing::TestWithParam<Param> {};

TEST_P(BarrierRanks, NoRankLeavesBeforeAllEntered) {
  const auto [provider, n] = GetParam();
  if (provider == "shm" && !shm_available()) GTEST_SKIP() << "shm does not work on this host";
  void* page = mmap(nullptr, sizeof(SharedCounters), PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  auto* shared = new (page) SharedCounters{};
  const EnvList env = {{"PLEXUS_FI_PROVIDER", provider}, {"PLEXUS_TIMEOUT_MS", "60000"}};
  const auto outcomes = run_ranks(
      n, [&](int rank) { return barrier_rank(rank, n, provider.c_str(), shared); }, 120.0, env);
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << provider << ", " << n << " ranks: " << why;
  for (int k = 0; k < kRounds; ++k) EXPECT_EQ(shared->entered[k].load(), n) << "barrier " << k;
  munmap(page, sizeof(SharedCounters));
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(Tcp, BarrierRanks,
                         ::testing::Combine(::testing::Values(std::string("tcp")),
                                            ::testing::Values(1, 2, 3, 4, 7)),
                         param_name);
INSTANTIATE_TEST_SUITE_P(Shm, BarrierRanks,
                         ::testing::Combine(::testing::Values(std::string("shm")),
                                            ::testing::Values(2, 3, 4, 7)),
                         param_name);

}  // namespace
}  // namespace plexus::test
