// comm_lifecycle_test.cpp - the C ABI's promises about arguments, failure and shutdown.
//
// Argument checks run in this process where no communicator is needed and in real ranks where
// the message must name the rank; the failure cases run real ranks over tcp and shm: a rank that
// aborts, an abort from another thread, a rank killed with SIGKILL, a rank that never joins, and
// a clean destroy. Every failure asserts the result code and the text of plx_get_last_error().
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <ostream>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "plexus/plexus.h"
#include "tests/comm/shm_available.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

using Clock = std::chrono::steady_clock;

std::string last_error() { return plx_get_last_error(nullptr); }

bool contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

// Checks a call's result and exact message; returns "" or what went wrong.
std::string expect_failure(plx_result_t got, plx_result_t want, const std::string& message) {
  if (got != want) {
    return "result " + std::string(plx_get_error_string(got)) + ", expected " +
           plx_get_error_string(want) + " (" + last_error() + ")";
  }
  if (last_error() != message)
    return "message \"" + last_error() + "\", expected \"" + message + "\"";
  return "";
}

// --- In this process: no communicator needed. ---

// plx_get_log_level gives PLEXUS_DEBUG's level as the library reads it at communicator creation.
TEST(CAbi, LogLevelIsTheLibrarys) {
  EXPECT_EQ(plx_get_log_level(nullptr), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(plx_get_last_error(nullptr), "plx_get_log_level: level is NULL");
  for (const auto& [text, want] : {std::pair{"info", 1}, std::pair{"TRACE", 2},
                                   std::pair{"WARN", 0}, std::pair{"loud", 0}}) {
    const auto outcomes = run_ranks(
        1,
        [want = want](int rank) {
          plx_comm_t comm = nullptr;
          if (plx_comm_init_from_env(&comm) != PLX_SUCCESS) return rank_failure(rank, last_error());
          int level = -1;
          const plx_result_t rc = plx_get_log_level(&level);
          plx_comm_destroy(comm);
          if (rc != PLX_SUCCESS || level != want)
            return rank_failure(rank, "level " + std::to_string(level) + ", expected " +
                                          std::to_string(want));
          return 0;
        },
        60.0, {{"PLEXUS_FI_PROVIDER", "tcp"}, {"PLEXUS_DEBUG", text}});
    std::string why;
    EXPECT_TRUE(all_passed(outcomes, &why)) << "PLEXUS_DEBUG=" << text << ": " << why;
  }
}

TEST(CAbi, VersionAndErrorStrings) {
  int version = -1;
  ASSERT_EQ(plx_get_version(&version), PLX_SUCCESS);
  EXPECT_EQ(version, PLX_VERSION_MAJOR * 10000 + PLX_VERSION_MINOR * 100 + PLX_VERSION_PATCH);
  EXPECT_STREQ(plx_get_last_error(nullptr), "");
  EXPECT_EQ(plx_get_version(nullptr), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(plx_get_last_error(nullptr), "plx_get_version: version is NULL");
  const std::pair<plx_result_t, const char*> codes[] = {
      {PLX_SUCCESS, "PLX_SUCCESS"},
      {PLX_ERROR_INVALID_ARGUMENT, "PLX_ERROR_INVALID_ARGUMENT"},
      {PLX_ERROR_INVALID_USAGE, "PLX_ERROR_INVALID_USAGE"},
      {PLX_ERROR_UNSUPPORTED, "PLX_ERROR_UNSUPPORTED"},
      {PLX_IN_PROGRESS, "PLX_IN_PROGRESS"},
      {PLX_ERROR_REMOTE, "PLX_ERROR_REMOTE"},
      {PLX_ERROR_TIMEOUT, "PLX_ERROR_TIMEOUT"},
      {PLX_ERROR_TRANSPORT, "PLX_ERROR_TRANSPORT"},
      {PLX_ERROR_ABORTED, "PLX_ERROR_ABORTED"},
      {PLX_ERROR_SYSTEM, "PLX_ERROR_SYSTEM"},
      {PLX_ERROR_INTERNAL, "PLX_ERROR_INTERNAL"}};
  for (const auto& [code, name] : codes) {
    const std::string text = plx_get_error_string(code);
    EXPECT_EQ(text.rfind(std::string(name) + ": ", 0), 0u) << text;
  }
  EXPECT_STREQ(plx_get_error_string(static_cast<plx_result_t>(99)), "unknown plx_result_t");
  EXPECT_STREQ(plx_get_error_string(PLX_ERROR_REMOTE),
               "PLX_ERROR_REMOTE: a peer died or disconnected");
}

TEST(CAbi, DatatypeSizes) {
  const size_t expected[PLX_NUM_DATATYPES] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
  for (int t = 0; t < PLX_NUM_DATATYPES; ++t) {
    EXPECT_EQ(plx_datatype_size(static_cast<plx_datatype_t>(t)), expected[t]) << t;
  }
  EXPECT_EQ(plx_datatype_size(static_cast<plx_datatype_t>(-1)), 0u);
  EXPECT_EQ(plx_datatype_size(PLX_NUM_DATATYPES), 0u);
}

TEST(CAbi, NullCommunicatorArguments) {
  int value = -7;
  const char* name = "untouched";
  plx_result_t async = PLX_ERROR_INTERNAL;
  EXPECT_EQ(expect_failure(plx_comm_rank(nullptr, &value), PLX_ERROR_INVALID_ARGUMENT,
                           "plx_comm_rank: comm is NULL"), "");
  EXPECT_EQ(expect_failure(plx_comm_size(nullptr, &value), PLX_ERROR_INVALID_ARGUMENT,
                           "plx_comm_size: comm is NULL"), "");
  EXPECT_EQ(expect_failure(plx_comm_local_rank(nullptr, &value), PLX_ERROR_INVALID_ARGUMENT,
                           "plx_comm_local_rank: comm is NULL"), "");
  EXPECT_EQ(expect_failure(plx_comm_local_size(nullptr, &value), PLX_ERROR_INVALID_ARGUMENT,
                           "plx_comm_local_size: comm is NULL"), "");
  EXPECT_EQ(expect_failure(plx_comm_transport_name(nullptr, &name), PLX_ERROR_INVALID_ARGUMENT,
                           "plx_comm_transport_name: comm is NULL"), "");
  EXPECT_EQ(expect_failure(plx_comm_get_async_error(nullptr, &async), PLX_ERROR_INVALID_ARGUMENT,
                           "plx_comm_get_async_error: comm is NULL"), "");
  EXPECT_EQ(value, -7);
  EXPECT_STREQ(name, "untouched");
  EXPECT_EQ(async, PLX_ERROR_INTERNAL);
  int data = 0;
  EXPECT_EQ(expect_failure(plx_allreduce(&data, &data, 1, PLX_INT32, PLX_SUM, nullptr, nullptr),
                           PLX_ERROR_INVALID_ARGUMENT, "plx_allreduce: comm is NULL"), "");
  EXPECT_EQ(expect_failure(plx_broadcast(&data, &data, 1, PLX_INT32, 0, nullptr, nullptr),
                           PLX_ERROR_INVALID_ARGUMENT, "plx_broadcast: comm is NULL"), "");
  EXPECT_EQ(expect_failure(plx_barrier(nullptr), PLX_ERROR_INVALID_ARGUMENT,
                           "plx_barrier: comm is NULL"), "");
  EXPECT_EQ(plx_comm_destroy(nullptr), PLX_SUCCESS);
  EXPECT_EQ(plx_comm_abort(nullptr), PLX_SUCCESS);
  EXPECT_STREQ(plx_get_last_error(nullptr), "");
}

TEST(CAbi, InitArguments) {
  plx_unique_id_t id = {};
  plx_comm_t comm = nullptr;
  EXPECT_EQ(expect_failure(plx_comm_init_rank(nullptr, 2, id, 0), PLX_ERROR_INVALID_ARGUMENT,
                           "plx_comm_init_rank: comm is NULL"), "");
  EXPECT_EQ(expect_failure(plx_comm_init_rank(&comm, 0, id, 0), PLX_ERROR_INVALID_ARGUMENT,
                           "plx_comm_init_rank: rank 0: nranks 0 is below 1"), "");
  EXPECT_EQ(expect_failure(plx_comm_init_rank(&comm, 3, id, 5), PLX_ERROR_INVALID_ARGUMENT,
                           "plx_comm_init_rank: rank 5: rank 5 not in 0..2"), "");
  EXPECT_EQ(expect_failure(plx_comm_init_rank(&comm, 3, id, -1), PLX_ERROR_INVALID_ARGUMENT,
                           "plx_comm_init_rank: rank -1: rank -1 not in 0..2"), "");
  EXPECT_EQ(expect_failure(plx_comm_init_from_env(nullptr), PLX_ERROR_INVALID_ARGUMENT,
                           "plx_comm_init_from_env: comm is NULL"), "");
  EXPECT_EQ(comm, nullptr);
}

// --- In real ranks. ---

struct Case {
  std::string provider;
  int ranks;
};

void PrintTo(const Case& c, std::ostream* out) {
  *out << c.provider << ", " << c.ranks << " ranks";
}

class LifecycleTestBase : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (GetParam().provider == "shm" && !shm_available()) GTEST_SKIP() << "no shm here";
  }
  EnvList env(const std::string& timeout_ms = "60000") const {
    return {{"PLEXUS_FI_PROVIDER", GetParam().provider}, {"PLEXUS_TIMEOUT_MS", timeout_ms}};
  }
};

// Healthy communicators: world sizes 1, 2, 3, 5.
class LifecycleTest : public LifecycleTestBase {};
// A peer aborts, dies or never comes: world sizes 2, 3, 5.
class PeerFailureTest : public LifecycleTestBase {};
// Abort from a second thread: two ranks.
class ThreadedAbortTest : public LifecycleTestBase {};
// A rank never joins: three ranks (each case waits out a short rendezvous timeout).
class MissingRankTest : public LifecycleTestBase {};

int init(int rank, plx_comm_t* comm) {
  if (plx_comm_init_from_env(comm) != PLX_SUCCESS) {
    return rank_failure(rank, "plx_comm_init_from_env: " + last_error());
  }
  return 0;
}

// Runs every argument check of one rank; "" when all behave.
std::string argument_checks(plx_comm_t comm, int rank, int n) {
  const std::string r = "rank " + std::to_string(rank) + ": ";
  int data[5] = {rank, 0, 0, 0, 0};
  int out[5] = {-1, -1, -1, -1, -1};
  std::string why;
  auto check = [&](plx_result_t got, plx_result_t want, const std::string& message) {
    if (why.empty()) why = expect_failure(got, want, message);
  };
  check(plx_allreduce(data, out, 5, static_cast<plx_datatype_t>(42), PLX_SUM, comm, nullptr),
        PLX_ERROR_INVALID_ARGUMENT, "plx_allreduce: " + r + "datatype 42 not in 0..9");
  check(plx_allreduce(data, out, 5, PLX_INT32, static_cast<plx_red_op_t>(7), comm, nullptr),
        PLX_ERROR_INVALID_ARGUMENT, "plx_allreduce: " + r + "op 7 not in 0..4 and not a live pre-multiplied sum of this communicator");
  check(plx_allreduce(data, nullptr, 5, PLX_INT32, PLX_SUM, comm, nullptr),
        PLX_ERROR_INVALID_ARGUMENT, "plx_allreduce: " + r + "recvbuf is NULL with count 5");
  check(plx_allreduce(nullptr, out, 5, PLX_INT32, PLX_SUM, comm, nullptr),
        PLX_ERROR_INVALID_ARGUMENT, "plx_allreduce: " + r + "sendbuf is NULL with count 5");
  check(plx_allreduce(data, out, SIZE_MAX / 2, PLX_INT32, PLX_SUM, comm, nullptr),
        PLX_ERROR_INVALID_ARGUMENT,
        "plx_allreduce: " + r + "count " + std::to_string(SIZE_MAX / 2) +
            " of 4-byte elements overflows size_t");
  const plx_result_t streamed =
      plx_allreduce(data, out, 5, PLX_INT32, PLX_SUM, comm, reinterpret_cast<void*>(0x10));
  if (why.empty() && (streamed != PLX_ERROR_UNSUPPORTED ||
                      last_error().rfind("plx_allreduce: " + r + "stream ", 0) != 0)) {
    why = "non-NULL stream: " + last_error();
  }
  check(plx_broadcast(data, out, 3, PLX_INT32, n + 7, comm, nullptr), PLX_ERROR_INVALID_ARGUMENT,
        "plx_broadcast: " + r + "root " + std::to_string(n + 7) + " not in 0.." +
            std::to_string(n - 1));
  check(plx_broadcast(data, out, 3, PLX_INT32, -1, comm, nullptr), PLX_ERROR_INVALID_ARGUMENT,
        "plx_broadcast: " + r + "root -1 not in 0.." + std::to_string(n - 1));
  check(plx_broadcast(data, nullptr, 3, PLX_INT32, 0, comm, nullptr), PLX_ERROR_INVALID_ARGUMENT,
        "plx_broadcast: " + r + "recvbuf is NULL with count 3");
  check(plx_broadcast(data, out, 3, static_cast<plx_datatype_t>(-3), 0, comm, nullptr),
        PLX_ERROR_INVALID_ARGUMENT, "plx_broadcast: " + r + "datatype -3 not in 0..9");
  // Only the root reads sendbuf: the root refuses its call, and the others, whose identical
  // call is valid, learn it at once from the signature comparison (PLX_ERROR_MISMATCH naming
  // the root) instead of waiting for the root's data; nothing is written anywhere.
  const plx_result_t rooted = plx_broadcast(nullptr, out, 3, PLX_INT32, 0, comm, nullptr);
  if (rank == 0) {
    check(rooted, PLX_ERROR_INVALID_ARGUMENT,
          "plx_broadcast: " + r + "sendbuf is NULL with count 3");
  } else if (why.empty() &&
             (rooted != PLX_ERROR_MISMATCH ||
              last_error().find("rank 0 called broadcast with arguments it refused") ==
                  std::string::npos)) {
    why = "broadcast whose root refused its sendbuf: " +
          std::string(plx_get_error_string(rooted)) + " \"" + last_error() + "\"";
  }
  check(plx_comm_rank(comm, nullptr), PLX_ERROR_INVALID_ARGUMENT,
        "plx_comm_rank: " + r + "rank is NULL");
  check(plx_comm_transport_name(comm, nullptr), PLX_ERROR_INVALID_ARGUMENT,
        "plx_comm_transport_name: " + r + "name is NULL");
  check(plx_comm_get_async_error(comm, nullptr), PLX_ERROR_INVALID_ARGUMENT,
        "plx_comm_get_async_error: " + r + "async_error is NULL");
  for (int v : out) {
    if (why.empty() && v != -1) why = "an output was written by a failed call";
  }
  // count 0: nothing to do, NULL buffers allowed, no message.
  if (why.empty() && (plx_allreduce(nullptr, nullptr, 0, PLX_INT32, PLX_SUM, comm, nullptr) !=
                          PLX_SUCCESS ||
                      !last_error().empty())) {
    why = "count 0 allreduce: " + last_error();
  }
  return why;
}

TEST_P(LifecycleTest, BadArgumentsLeaveTheCommunicatorUsable) {
  const int n = GetParam().ranks;
  auto outcomes = run_ranks(n, [n](int rank) {
    plx_comm_t comm = nullptr;
    if (int failed = init(rank, &comm)) return failed;
    const std::string why = argument_checks(comm, rank, n);
    if (!why.empty()) return rank_failure(rank, why);
    // Argument errors need no rebuild: the communicator still works.
    if (plx_barrier(comm) != PLX_SUCCESS) return rank_failure(rank, "barrier: " + last_error());
    int value = rank + 1, sum = 0;
    if (plx_allreduce(&value, &sum, 1, PLX_INT32, PLX_SUM, comm, nullptr) != PLX_SUCCESS ||
        sum != n * (n + 1) / 2) {
      return rank_failure(rank, "allreduce after bad calls: " + std::to_string(sum) + " " +
                                    last_error());
    }
    if (plx_comm_destroy(comm) != PLX_SUCCESS) return rank_failure(rank, last_error());
    return 0;
  }, 120, env());
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST_P(LifecycleTest, DestroyWaitsForEveryRankAndSucceeds) {
  const int n = GetParam().ranks;
  auto outcomes = run_ranks(n, [n](int rank) {
    plx_comm_t comm = nullptr;
    if (int failed = init(rank, &comm)) return failed;
    for (int i = 0; i < 3; ++i) {
      if (plx_barrier(comm) != PLX_SUCCESS) return rank_failure(rank, last_error());
    }
    usleep(100 * 1000 * (n - 1 - rank));  // ranks arrive at destroy at different times
    if (plx_comm_destroy(comm) != PLX_SUCCESS) return rank_failure(rank, last_error());
    return 0;
  }, 120, env());
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST_P(PeerFailureTest, AbortedRankIsReportedToPeers) {
  const int n = GetParam().ranks;
  const int victim = n - 1;
  auto outcomes = run_ranks(n, [victim](int rank) {
    plx_comm_t comm = nullptr;
    if (int failed = init(rank, &comm)) return failed;
    if (rank == victim) {
      return plx_comm_abort(comm) == PLX_SUCCESS ? 0 : rank_failure(rank, last_error());
    }
    const auto start = Clock::now();
    const plx_result_t result = plx_barrier(comm);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const std::string lost = "rank " + std::to_string(victim) + " lost";
    if (result != PLX_ERROR_REMOTE || !contains(last_error(), lost) ||
        last_error().rfind("plx_barrier: rank " + std::to_string(rank) + ": ", 0) != 0) {
      return rank_failure(rank, "barrier after a peer's abort: " +
                                    std::string(plx_get_error_string(result)) + " " +
                                    last_error());
    }
    if (seconds > 30) return rank_failure(rank, "took " + std::to_string(seconds) + " s");
    plx_result_t async = PLX_SUCCESS;
    if (plx_comm_get_async_error(comm, &async) != PLX_SUCCESS || async != PLX_ERROR_REMOTE) {
      return rank_failure(rank, "async error not PLX_ERROR_REMOTE");
    }
    if (plx_comm_destroy(comm) != PLX_ERROR_REMOTE || !contains(last_error(), lost)) {
      return rank_failure(rank, "destroy after a lost peer: " + last_error());
    }
    return 0;
  }, 120, env());
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST_P(PeerFailureTest, KilledRankIsReportedWithinSeconds) {
  const int n = GetParam().ranks;
  // Rank 0 hosts the rendezvous server, so killing it also tests losing the root. The victim
  // dies while the others wait in a barrier for it. (It takes part in no collective first: a
  // rank killed right after one may take its last messages with it, legitimately failing a
  // peer's copy of that collective.)
  for (int victim : {n - 1, 0}) {
    auto outcomes = run_ranks(n, [victim](int rank) {
      plx_comm_t comm = nullptr;
      if (int failed = init(rank, &comm)) return failed;
      if (rank == victim) {
        usleep(300 * 1000);
        raise(SIGKILL);
      }
      const auto start = Clock::now();
      const plx_result_t result = plx_barrier(comm);
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      const std::string lost = "rank " + std::to_string(victim) + " lost";
      if (result != PLX_ERROR_REMOTE || !contains(last_error(), lost)) {
        return rank_failure(rank, "barrier with a killed peer: " +
                                      std::string(plx_get_error_string(result)) + " " +
                                      last_error());
      }
      if (seconds > 30) return rank_failure(rank, "took " + std::to_string(seconds) + " s");
      if (plx_comm_destroy(comm) != PLX_ERROR_REMOTE) {
        return rank_failure(rank, "destroy after a lost peer: " + last_error());
      }
      return 0;
    }, 120, env());
    for (const auto& o : outcomes) {
      if (o.rank == victim) {
        EXPECT_FALSE(o.exited) << "victim " << victim << " was not killed";
        EXPECT_EQ(o.signal, SIGKILL) << "victim " << victim;
      } else {
        EXPECT_TRUE(o.exited && o.exit_code == 0)
            << "victim " << victim << ": rank " << o.rank << " failed";
      }
    }
  }
}

TEST_P(ThreadedAbortTest, AbortFromAnotherThreadEndsTheCallInProgress) {
  auto outcomes = run_ranks(2, [](int rank) {
    plx_comm_t comm = nullptr;
    if (int failed = init(rank, &comm)) return failed;
    if (rank == 0) {
      // Rank 1 never enters this barrier, so it blocks until the abort.
      std::atomic<plx_result_t> result{PLX_IN_PROGRESS};
      std::string message;
      std::thread waiter([&] {
        result = plx_barrier(comm);
        message = last_error();  // thread-local: read on the thread that failed
      });
      usleep(300 * 1000);
      if (plx_comm_abort(comm) != PLX_SUCCESS) return rank_failure(rank, last_error());
      waiter.join();
      if (result != PLX_ERROR_ABORTED || !contains(message, "aborted")) {
        return rank_failure(rank, "barrier during abort: " +
                                      std::string(plx_get_error_string(result)) + " " + message);
      }
      return 0;
    }
    // Rank 1 learns of rank 0's abort on the liveness channel, then fails fast.
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    plx_result_t async = PLX_SUCCESS;
    while (async == PLX_SUCCESS && Clock::now() < deadline) {
      usleep(10 * 1000);
      if (plx_comm_get_async_error(comm, &async) != PLX_SUCCESS) {
        return rank_failure(rank, last_error());
      }
    }
    if (async != PLX_ERROR_REMOTE) return rank_failure(rank, "no async error after the abort");
    if (plx_barrier(comm) != PLX_ERROR_REMOTE || !contains(last_error(), "rank 0 lost")) {
      return rank_failure(rank, "barrier: " + last_error());
    }
    plx_comm_destroy(comm);
    return 0;
  }, 120, env());
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST_P(MissingRankTest, MissingRankTimesOutTheRendezvous) {
  const int n = GetParam().ranks;
  // First a missing ordinary rank (the root reports it), then a missing rank 0 (nobody to
  // connect to).
  for (int missing : {n - 1, 0}) {
    auto outcomes = run_ranks(n, [missing](int rank) {
      if (rank == missing) return 0;
      plx_comm_t comm = nullptr;
      const auto start = Clock::now();
      const plx_result_t result = plx_comm_init_from_env(&comm);
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      const std::string expected =
          missing == 0 ? "could not connect within PLEXUS_TIMEOUT_MS=2000 ms"
                       : "missing ranks: " + std::to_string(missing);
      if (result != PLX_ERROR_TIMEOUT || !contains(last_error(), expected) ||
          last_error().rfind("plx_comm_init_from_env: rank " + std::to_string(rank) + ": ", 0) !=
              0) {
        return rank_failure(rank, "init without rank " + std::to_string(missing) + ": " +
                                      std::string(plx_get_error_string(result)) + " " +
                                      last_error());
      }
      if (comm != nullptr) return rank_failure(rank, "comm written on failure");
      if (seconds > 30) return rank_failure(rank, "took " + std::to_string(seconds) + " s");
      return 0;
    }, 120, env("2000"));
    std::string why;
    EXPECT_TRUE(all_passed(outcomes, &why)) << "missing rank " << missing << ": " << why;
  }
}

std::vector<Case> cases(std::initializer_list<int> sizes) {
  std::vector<Case> out;
  for (const char* provider : {"tcp", "shm"}) {
    for (int n : sizes) out.push_back({provider, n});
  }
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return info.param.provider + "_" + std::to_string(info.param.ranks) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(Providers, LifecycleTest, ::testing::ValuesIn(cases({1, 2, 3, 5})),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Providers, PeerFailureTest, ::testing::ValuesIn(cases({2, 3, 5})),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Providers, ThreadedAbortTest, ::testing::ValuesIn(cases({2})),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Providers, MissingRankTest, ::testing::ValuesIn(cases({3})), case_name);

}  // namespace
}  // namespace plexus::test
