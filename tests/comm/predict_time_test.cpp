// predict_time_test.cpp - plx_comm_predict_time on real ranks (libfabric tcp): what the
// communicator's cost model predicts for a group of its ranks, against values worked out by hand
// from PLEXUS_COST_MODEL's parameters (alpha 10 us, beta 1 ns/B, gamma 0.5 ns/B), and its
// argument errors, each naming the argument and the rank.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "plexus/plexus.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

constexpr int kRanks = 4;

// "" or what differs.
std::string expect_near(const char* what, double got, double want) {
  if (std::fabs(got - want) <= 1e-12 + 1e-9 * std::fabs(want)) return "";
  return std::string(what) + ": got " + std::to_string(got * 1e6) + " us, want " +
         std::to_string(want * 1e6) + " us";
}

// "" or the failed call's message.
std::string predict(plx_comm_t comm, const char* collective, size_t count,
                    const std::vector<int>& ranks, double* seconds) {
  const plx_result_t r = plx_comm_predict_time(comm, collective, count, PLX_FLOAT32,
                                               ranks.empty() ? nullptr : ranks.data(),
                                               ranks.empty() ? kRanks : static_cast<int>(ranks.size()),
                                               seconds);
  return r == PLX_SUCCESS ? "" : std::string(collective) + ": " + plx_get_last_error(comm);
}

// "" or a message: the call fails with PLX_ERROR_INVALID_ARGUMENT and a message with `names`.
std::string expect_refused(plx_result_t r, plx_comm_t comm, const std::string& names) {
  if (r != PLX_ERROR_INVALID_ARGUMENT) {
    return "expected PLX_ERROR_INVALID_ARGUMENT for " + names + ", got " +
           plx_get_error_string(r);
  }
  const std::string message = plx_get_last_error(comm);
  if (message.find(names) == std::string::npos || message.find("rank ") == std::string::npos) {
    return "message '" + message + "' does not name '" + names + "' and the rank";
  }
  return "";
}

int body(int rank) {
  plx_comm_t comm = nullptr;
  if (plx_comm_init_from_env(&comm) != PLX_SUCCESS) {
    return rank_failure(rank, std::string("init: ") + plx_get_last_error(nullptr));
  }
  std::vector<std::string> problems;
  auto check = [&](const std::string& problem) {
    if (!problem.empty()) problems.push_back(problem);
  };
  double s = -1;
  // One message of 1000 floats: alpha + 4000 B * beta = 10 + 4 us.
  check(predict(comm, "sendrecv", 1000, {1, 3}, &s));
  check(expect_near("sendrecv", s, 14e-6));
  // One rank moves nothing.
  check(predict(comm, "allreduce", 1000, {2}, &s));
  check(expect_near("allreduce on one rank", s, 0.0));
  // Recursive doubling, forced: log2(n) steps of alpha + m beta + m gamma, m = 4000 B (one
  // slice): 16 us a step.
  if (plx_comm_set_algorithm(comm, "allreduce:recursive_doubling") != PLX_SUCCESS) {
    check(std::string("set_algorithm: ") + plx_get_last_error(comm));
  }
  check(predict(comm, "allreduce", 1000, {0, 2}, &s));
  check(expect_near("recursive doubling on 2 ranks", s, 16e-6));
  check(predict(comm, "allreduce", 1000, {}, &s));
  check(expect_near("recursive doubling on 4 ranks", s, 32e-6));
  plx_comm_set_algorithm(comm, nullptr);
  // The cost model's own choice: more data never costs less.
  double small = 0, large = 0;
  check(predict(comm, "allreduce", 1 << 10, {}, &small));
  check(predict(comm, "allreduce", 1 << 20, {}, &large));
  if (!(small > 0 && large > small)) {
    check("allreduce of 4 KiB (" + std::to_string(small) + " s) not cheaper than of 4 MiB (" +
          std::to_string(large) + " s)");
  }
  // Argument errors, each named.
  const int dup[] = {0, 0};
  const int out[] = {0, kRanks};
  check(expect_refused(plx_comm_predict_time(comm, "allgatherz", 1, PLX_FLOAT32, nullptr, kRanks, &s),
                       comm, "collective \"allgatherz\""));
  check(expect_refused(plx_comm_predict_time(comm, "allreduce", 1, PLX_FLOAT32, dup, 2, &s), comm,
                       "ranks[1] 0 is listed twice"));
  check(expect_refused(plx_comm_predict_time(comm, "allreduce", 1, PLX_FLOAT32, out, 2, &s), comm,
                       "ranks[1] 4 not in 0..3"));
  check(expect_refused(plx_comm_predict_time(comm, "allreduce", 1, PLX_FLOAT32, nullptr, 0, &s),
                       comm, "nranks 0 not in 1..4"));
  check(expect_refused(plx_comm_predict_time(comm, "allreduce", 1, PLX_FLOAT32, nullptr, 2, &s),
                       comm, "ranks is NULL"));
  check(expect_refused(plx_comm_predict_time(comm, "sendrecv", 1, PLX_FLOAT32, nullptr, kRanks, &s),
                       comm, "sendrecv needs nranks 2"));
  check(expect_refused(plx_comm_predict_time(comm, "allreduce", 1, PLX_FLOAT32, nullptr, kRanks,
                                             nullptr),
                       comm, "seconds"));
  plx_comm_destroy(comm);
  if (problems.empty()) return 0;
  std::string all;
  for (const std::string& p : problems) all += "\n  " + p;
  return rank_failure(rank, all);
}

TEST(PredictTime, HandWorkedValuesAndNamedErrors) {
  const EnvList env = {{"PLEXUS_FI_PROVIDER", "tcp"}, {"PLEXUS_COST_MODEL", "10,1,0.5"}};
  std::string why;
  EXPECT_TRUE(all_passed(run_ranks(kRanks, body, 120.0, env), &why)) << why;
}

}  // namespace
}  // namespace plexus::test
