// refused_call_test.cpp - one rank's bad arguments fail every rank at once, naming it.
//
// A collective whose arguments one rank refuses (a NULL buffer, an op out of range) returns
// PLX_ERROR_INVALID_ARGUMENT on that rank without waiting, and that rank still takes part in the
// signature comparison, so the others return PLX_ERROR_MISMATCH naming it within seconds
// (PLEXUS_TIMEOUT_MS is 60 s here) instead of waiting for data that never comes; afterwards a
// correct collective succeeds on every rank. Blocking, non-blocking and inside a group, on every
// transport.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
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

// Runs `body` on every rank of the case with a world communicator (PLEXUS_TIMEOUT_MS 60 s),
// then destroys it; body returns 0 or rank_failure(...).
void on_every_rank(const RankCase& c,
                   const std::function<int(int rank, int n, plx_comm_t)>& body) {
  auto outcomes = run_ranks(c.ranks, [&, n = c.ranks](int rank) {
    plx_comm_t comm = nullptr;
    if (plx_comm_init_from_env(&comm) != PLX_SUCCESS) {
      return rank_failure(rank, "init: " + last_error_text());
    }
    if (const int failed = body(rank, n, comm); failed != 0) return failed;
    return plx_comm_destroy(comm) == PLX_SUCCESS ? 0 : rank_failure(rank, last_error_text());
  }, 240, transport_env(c.transport, 60000));
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST_P(RefusedCallTest, TheOtherRanksFailAtOnceNamingTheRefusingRank) {
  on_every_rank(GetParam(), [](int rank, int n, plx_comm_t comm) {
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
    return 0;
  });
}

// Inside a group: a ring exchange (a send to the next rank, a receive from the previous), an
// allreduce every rank calls correctly, then one that the last rank (or, in the second round,
// every rank) refuses with a NULL send buffer, then a broadcast. The refusing call fails at
// once; plx_group_end fails on every rank within seconds, with a mismatch naming the refusing
// rank (PLX_ERROR_INVALID_ARGUMENT where every rank refused); the exchange and the first
// allreduce completed with the right values everywhere, the broadcast after the refusal did not
// run; afterwards a correct group succeeds.
TEST_P(RefusedCallTest, ARefusalInsideAGroupFailsTheGroupEverywhereAfterTheCallsBeforeIt) {
  on_every_rank(GetParam(), [](int rank, int n, plx_comm_t comm) {
    const int refusing = n - 1;
    const float expected_sum = static_cast<float>(n * (n + 1) / 2);
    enum Round { kOneRefuses, kAllRefuse, kNoneRefuses };
    for (Round round : {kOneRefuses, kAllRefuse, kNoneRefuses}) {
      std::vector<float> first(256, static_cast<float>(rank + 1));
      std::vector<float> second(1024, static_cast<float>(rank + 1));
      std::vector<float> third(64, rank == 0 ? 7.0f : 0.0f);
      std::vector<float> outgoing(512, static_cast<float>(100 + rank)), incoming(512, -1.0f);
      const auto start = Clock::now();
      if (plx_group_start() != PLX_SUCCESS) return rank_failure(rank, "group_start");
      plx_result_t call = plx_send(outgoing.data(), outgoing.size(), PLX_FLOAT32,
                                   (rank + 1) % n, comm, nullptr);
      if (call == PLX_SUCCESS) {
        call = plx_recv(incoming.data(), incoming.size(), PLX_FLOAT32, (rank + n - 1) % n, comm,
                        nullptr);
      }
      if (call == PLX_SUCCESS) {
        call = plx_allreduce(first.data(), first.data(), first.size(), PLX_FLOAT32, PLX_SUM,
                             comm, nullptr);
      }
      if (call != PLX_SUCCESS) return rank_failure(rank, "queueing: " + last_error_text());
      const bool refusing_now =
          round == kAllRefuse || (round == kOneRefuses && rank == refusing);
      call = plx_allreduce(refusing_now ? nullptr : second.data(), second.data(), second.size(),
                           PLX_FLOAT32, PLX_SUM, comm, nullptr);
      const std::string call_message = last_error_text();
      if (refusing_now != (call == PLX_ERROR_INVALID_ARGUMENT)) {
        return rank_failure(rank, std::string("the grouped allreduce returned ") +
                                      plx_get_error_string(call) + " \"" + call_message + "\"");
      }
      if (refusing_now && call_message.find("sendbuf") == std::string::npos) {
        return rank_failure(rank, "the refusal does not name sendbuf: " + call_message);
      }
      call = plx_broadcast(third.data(), third.data(), third.size(), PLX_FLOAT32, 0, comm,
                           nullptr);
      if (call != PLX_SUCCESS) return rank_failure(rank, "queueing the broadcast");
      const plx_result_t ended = plx_group_end();
      const std::string message = last_error_text();
      const double took = std::chrono::duration<double>(Clock::now() - start).count();
      const std::string in_round = " (round " + std::to_string(round) + ")";
      if (first[0] != expected_sum || first[255] != expected_sum) {
        return rank_failure(rank, "the allreduce before the refusal gave " +
                                      std::to_string(first[0]) + in_round);
      }
      const float sent_to_me = static_cast<float>(100 + (rank + n - 1) % n);
      if (incoming[0] != sent_to_me || incoming[511] != sent_to_me) {
        return rank_failure(rank, "the grouped receive holds " + std::to_string(incoming[0]) +
                                      ", expected " + std::to_string(sent_to_me) + in_round);
      }
      if (round == kNoneRefuses) {
        if (ended != PLX_SUCCESS || second[1023] != expected_sum || third[63] != 7.0f) {
          return rank_failure(rank, "the correct group after the refusals: " + message);
        }
        continue;
      }
      if (rank != 0 && third[0] != 0.0f) {
        return rank_failure(rank, "the broadcast after the refused call ran" + in_round);
      }
      const plx_result_t expected_code =
          round == kAllRefuse ? PLX_ERROR_INVALID_ARGUMENT : PLX_ERROR_MISMATCH;
      const std::string named = round == kAllRefuse
                                    ? std::string("every rank refused the arguments of its "
                                                  "allreduce")
                                    : "rank " + std::to_string(refusing) +
                                          " called allreduce with arguments it refused";
      if (ended != expected_code ||
          (rank != refusing && message.find(named) == std::string::npos)) {
        return rank_failure(rank, std::string("plx_group_end: ") + plx_get_error_string(ended) +
                                      " \"" + message + "\", expected " +
                                      plx_get_error_string(expected_code) + " saying \"" +
                                      named + "\"" + in_round);
      }
      if (rank == 0) std::printf("group: rank 0 failed after %.3f s: %s\n", took, message.c_str());
      if (took > 5.0) return rank_failure(rank, "took " + std::to_string(took) + " s" + in_round);
    }
    return 0;
  });
}

INSTANTIATE_TEST_SUITE_P(Transports, RefusedCallTest,
                         ::testing::Values(RankCase{"tcp", 3}, RankCase{"shm", 3},
                                           RankCase{"ucx", 2}),
                         rank_case_name);

}  // namespace
}  // namespace plexus::test
