// refused_call_test.cpp - one rank's bad arguments fail every rank at once, naming it.
//
// A collective whose arguments one rank refuses (a NULL buffer, an op out of range) returns
// PLX_ERROR_INVALID_ARGUMENT on that rank without waiting, and that rank still takes part in the
// signature comparison, so the others return PLX_ERROR_MISMATCH naming it within seconds
// (PLEXUS_TIMEOUT_MS is 60 s here) instead of waiting for data that never comes; afterwards a
// correct collective succeeds on every rank. Blocking and non-blocking, on every transport.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "plexus/plexus.h"
#include "tests/comm/transport_cases.h"

namespace plexus::test {
namespace {

using Clock = std::chrono::steady_clock;

class RefusedCallTest : public ::testing::TestWithParam<RankCase> {
 protected:
  void SetUp() override {
    if (!transport_available(GetParam().transport)) {
      GTEST_SKIP() << GetParam().transport << " does not work here";
    }
  }
};

// Calls an allreduce of 1024 floats, blocking or through plx_iallreduce + plx_wait; `refusing`
// passes a NULL send buffer.
plx_result_t allreduce(plx_comm_t comm, bool refusing, bool nonblocking, std::vector<float>* data,
                       std::string* message) {
  const void* send = refusing ? nullptr : data->data();
  plx_result_t result = PLX_SUCCESS;
  if (!nonblocking) {
    result = plx_allreduce(send, data->data(), data->size(), PLX_FLOAT32, PLX_SUM, comm, nullptr);
  } else {
    plx_request_t request = nullptr;
    result = plx_iallreduce(send, data->data(), data->size(), PLX_FLOAT32, PLX_SUM, comm,
                            &request);
    if (result == PLX_SUCCESS) result = plx_wait(request);
  }
  *message = last_error_text();
  return result;
}

TEST_P(RefusedCallTest, TheOtherRanksFailAtOnceNamingTheRefusingRank) {
  const RankCase c = GetParam();
  auto outcomes = run_ranks(c.ranks, [n = c.ranks](int rank) {
    plx_comm_t comm = nullptr;
    if (plx_comm_init_from_env(&comm) != PLX_SUCCESS) {
      return rank_failure(rank, "init: " + last_error_text());
    }
    const int refusing = n - 1;
    for (bool nonblocking : {false, true}) {
      const char* form = nonblocking ? "plx_iallreduce" : "plx_allreduce";
      std::vector<float> data(1024, static_cast<float>(rank + 1));
      std::string message;
      const auto start = Clock::now();
      const plx_result_t result = allreduce(comm, rank == refusing, nonblocking, &data, &message);
      const double took = std::chrono::duration<double>(Clock::now() - start).count();
      if (rank == refusing) {
        if (result != PLX_ERROR_INVALID_ARGUMENT ||
            message.find(std::string(form) + ": rank " + std::to_string(rank) + ": sendbuf") ==
                std::string::npos) {
          return rank_failure(rank, std::string(form) + " with a NULL sendbuf: " +
                                        plx_get_error_string(result) + " \"" + message + "\"");
        }
      } else {
        const std::string expected = "rank " + std::to_string(refusing) +
                                     " called allreduce with arguments it refused";
        if (result != PLX_ERROR_MISMATCH || message.find(expected) == std::string::npos) {
          return rank_failure(rank, std::string(form) + ": " + plx_get_error_string(result) +
                                        " \"" + message + "\", expected a mismatch naming rank " +
                                        std::to_string(refusing));
        }
        if (rank == 0) std::printf("%s: rank 0 failed after %.3f s: %s\n", form, took,
                                   message.c_str());
        if (took > 5.0) return rank_failure(rank, "took " + std::to_string(took) + " s");
      }
      // Nothing was lost: a correct call succeeds everywhere.
      std::vector<float> again(1024, static_cast<float>(rank + 1));
      if (allreduce(comm, false, nonblocking, &again, &message) != PLX_SUCCESS ||
          again[0] != static_cast<float>(n * (n + 1) / 2)) {
        return rank_failure(rank, std::string(form) + " after the refusal: " + message);
      }
    }
    return plx_comm_destroy(comm) == PLX_SUCCESS ? 0 : rank_failure(rank, last_error_text());
  }, 240, transport_env(c.transport, 60000));
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

INSTANTIATE_TEST_SUITE_P(Transports, RefusedCallTest,
                         ::testing::Values(RankCase{"tcp", 3}, RankCase{"shm", 3},
                                           RankCase{"ucx", 2}),
                         rank_case_name);

}  // namespace
}  // namespace plexus::test
