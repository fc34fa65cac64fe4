// resource_leak_test.cpp - long runs of creating and freeing leave a process as they found it.
//
// 1000 cycles of split, allreduce on the child and destroy, on real ranks over libfabric shm and
// tcp, and 10000 plx_mem_alloc/plx_mem_free pairs: the process's open descriptors, threads and
// its own /dev/shm regions (named plexus_<pid>_...) after the last cycle equal those after the
// first. At a descriptor limit with no room left, communicator creation fails with an error that
// names the cause instead of crashing or hanging.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "plexus/plexus.h"
#include "tests/comm/transport_cases.h"

namespace plexus::test {
namespace {

int count_entries(const char* folder, const std::string& prefix = "") {
  int count = 0;
  if (DIR* dir = opendir(folder)) {
    while (const dirent* entry = readdir(dir)) {
      const std::string name = entry->d_name;
      if (name == "." || name == "..") continue;
      if (name.rfind(prefix, 0) == 0) ++count;
    }
    closedir(dir);
  }
  return count;
}

struct Footprint {
  int descriptors = 0;
  int threads = 0;
  int shm_regions = 0;
  bool operator==(const Footprint&) const = default;
  std::string text() const {
    return std::to_string(descriptors) + " descriptors, " + std::to_string(threads) +
           " threads, " + std::to_string(shm_regions) + " /dev/shm regions";
  }
};

Footprint footprint() {
  Footprint f;
  f.descriptors = count_entries("/proc/self/fd") - 1;  // opendir's own
  f.threads = count_entries("/proc/self/task");
  f.shm_regions = count_entries("/dev/shm", "plexus_" + std::to_string(getpid()) + "_");
  return f;
}

class ResourceLeakTest : public ::testing::TestWithParam<RankCase> {
 protected:
  void SetUp() override {
    if (!transport_available(GetParam().transport)) {
      GTEST_SKIP() << GetParam().transport << " does not work here";
    }
  }
};

TEST_P(ResourceLeakTest, AThousandSplitAllreduceDestroyCyclesLeaveNothingBehind) {
  const RankCase c = GetParam();
  auto outcomes = run_ranks(c.ranks, [n = c.ranks](int rank) {
    plx_comm_t world = nullptr;
    if (plx_comm_init_from_env(&world) != PLX_SUCCESS) {
      return rank_failure(rank, "init: " + last_error_text());
    }
    constexpr int kCycles = 1000;
    Footprint first;
    for (int cycle = 1; cycle <= kCycles; ++cycle) {
      plx_comm_t child = nullptr;
      if (plx_comm_split(world, 0, rank, &child) != PLX_SUCCESS) {
        return rank_failure(rank, "cycle " + std::to_string(cycle) + ": split: " +
                                      last_error_text());
      }
      int64_t value = rank + cycle, sum = 0;
      if (plx_allreduce(&value, &sum, 1, PLX_INT64, PLX_SUM, child, nullptr) != PLX_SUCCESS ||
          sum != int64_t{n} * cycle + int64_t{n} * (n - 1) / 2) {
        return rank_failure(rank, "cycle " + std::to_string(cycle) + ": allreduce: " +
                                      last_error_text());
      }
      if (plx_comm_destroy(child) != PLX_SUCCESS) {
        return rank_failure(rank, "cycle " + std::to_string(cycle) + ": destroy: " +
                                      last_error_text());
      }
      if (cycle == 1) first = footprint();
    }
    const Footprint last = footprint();
    if (!(last == first)) {
      return rank_failure(rank, "after cycle 1: " + first.text() + "; after cycle " +
                                    std::to_string(kCycles) + ": " + last.text());
    }
    if (rank == 0) std::printf("after %d cycles: %s\n", kCycles, last.text().c_str());
    return plx_comm_destroy(world) == PLX_SUCCESS ? 0 : rank_failure(rank, last_error_text());
  }, 600, transport_env(c.transport, 60000));
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

INSTANTIATE_TEST_SUITE_P(Transports, ResourceLeakTest,
                         ::testing::Values(RankCase{"shm", 2}, RankCase{"tcp", 2}),
                         rank_case_name);

TEST(ResourceLeak, TenThousandMemAllocFreePairsLeaveNothingBehind) {
  auto outcomes = run_ranks(1, [](int rank) {
    Footprint first;
    for (int i = 1; i <= 10000; ++i) {
      void* memory = nullptr;
      const size_t bytes = size_t{4096} << (i % 8);
      if (plx_mem_alloc(&memory, bytes) != PLX_SUCCESS || memory == nullptr) {
        return rank_failure(rank, "plx_mem_alloc #" + std::to_string(i) + ": " +
                                      last_error_text());
      }
      static_cast<char*>(memory)[bytes - 1] = 1;  // the whole range is usable
      if (plx_mem_free(memory) != PLX_SUCCESS) {
        return rank_failure(rank, "plx_mem_free #" + std::to_string(i) + ": " +
                                      last_error_text());
      }
      if (i == 1) first = footprint();
    }
    const Footprint last = footprint();
    if (!(last == first)) {
      return rank_failure(rank, "after pair 1: " + first.text() + "; after 10000: " +
                                    last.text());
    }
    return 0;
  });
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST(ResourceLeak, AtTheDescriptorLimitCreationFailsWithAClearError) {
  auto outcomes = run_ranks(2, [](int rank) {
    if (rank == 1) {
      // No descriptor left beyond those open now: the rendezvous socket cannot even be made.
      const int open_now = footprint().descriptors;
      const rlimit limit{static_cast<rlim_t>(open_now), static_cast<rlim_t>(open_now)};
      if (setrlimit(RLIMIT_NOFILE, &limit) != 0) return rank_failure(rank, "setrlimit");
    }
    plx_comm_t comm = nullptr;
    const plx_result_t result = plx_comm_init_from_env(&comm);
    const std::string message = last_error_text();
    if (result == PLX_SUCCESS) return rank_failure(rank, "creation succeeded");
    if (message.empty()) return rank_failure(rank, "no message");
    std::printf("rank %d: %s: %s\n", rank, plx_get_error_string(result), message.c_str());
    return 0;
  }, 120, transport_env("tcp", 5000));
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

}  // namespace
}  // namespace plexus::test
