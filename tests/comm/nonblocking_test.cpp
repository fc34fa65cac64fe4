// nonblocking_test.cpp - the non-blocking collectives, plx_wait and plx_test, on real ranks over
// libfabric tcp and shm and over UCX.
//
// The acceptance case: two split communicators (even and odd world ranks) run different
// collectives concurrently without interference - the even ranks many iallreduce, the odd ranks
// ialltoall and iallgather - interleaved with operations on the parent, all posted before any
// wait, every result checked exactly against its closed form. Then: plx_test polling until done
// (a peer holds the operation back until every poller has seen it unfinished, so "not done" is
// observed for certain); 64 outstanding requests on one communicator, chained so that each reads
// what the one before wrote, completing in order; plx_wait and plx_test from other threads;
// plx_comm_destroy flushing outstanding requests; and a waiting rank's process CPU time staying
// well below the wall time of its wait (plx_wait, a blocking call and an idle communicator sleep,
// they do not spin; this asserts blocking, not speed).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "plexus/plexus.h"
#include "tests/comm/transport_cases.h"
#include "tests/support/multiprocess.h"
#include "tests/support/temp_dir.h"

namespace plexus::test {
namespace {

using Clock = std::chrono::steady_clock;

// One posted operation: its buffers (which must not move while it runs), its request, and the
// check of its result.
struct Posted {
  std::string label;
  std::vector<int64_t> send, recv;
  plx_request_t request = nullptr;
  std::function<std::string(const Posted&)> check;
};

// Compares recv with expected(i) for every i; "" or the first difference.
std::string check_values(const Posted& p, const std::function<int64_t(size_t)>& expected) {
  for (size_t i = 0; i < p.recv.size(); ++i) {
    if (p.recv[i] != expected(i)) {
      return p.label + ": index " + std::to_string(i) + " is " + std::to_string(p.recv[i]) +
             ", expected " + std::to_string(expected(i));
    }
  }
  return "";
}

std::unique_ptr<Posted> make_posted(std::string label, size_t send_count, size_t recv_count) {
  auto p = std::make_unique<Posted>();
  p->label = std::move(label);
  p->send.assign(send_count, 0);
  p->recv.assign(recv_count, -1);
  return p;
}

class NonblockingTest : public RankCaseTest {};

// Posts the even/odd child operations of round k and, every third round, one on the parent.
std::string post_round(int k, int rank, int n, plx_comm_t world, plx_comm_t child,
                       const std::vector<int>& members, int c,
                       std::vector<std::unique_ptr<Posted>>* posted) {
  const int m = static_cast<int>(members.size());
  const std::string round = " (round " + std::to_string(k) + ")";
  std::unique_ptr<Posted> p;
  plx_result_t rc = PLX_SUCCESS;
  if (rank % 2 == 0) {
    // Even ranks: iallreduce of growing counts, one of them 1 MiB.
    const size_t count = k == 1 ? size_t{1} << 17 : 1 + 257 * static_cast<size_t>(k);
    p = make_posted("child iallreduce" + round, count, count);
    for (size_t i = 0; i < count; ++i) p->send[i] = (rank + 1) * static_cast<int64_t>(i % 101 + k);
    int64_t members_sum = 0;
    for (int w : members) members_sum += w + 1;
    p->check = [members_sum, k](const Posted& q) {
      return check_values(
          q, [&](size_t i) { return members_sum * static_cast<int64_t>(i % 101 + k); });
    };
    rc = plx_iallreduce(p->send.data(), p->recv.data(), count, PLX_INT64, PLX_SUM, child,
                        &p->request);
  } else if (k % 2 == 0) {
    // Odd ranks: ialltoall ...
    const size_t count = 3 + static_cast<size_t>(k);
    p = make_posted("child ialltoall" + round, count * m, count * m);
    for (size_t i = 0; i < count * m; ++i) {
      p->send[i] = rank * int64_t{1000000} + static_cast<int64_t>((i / count) * 1000 + i % count);
    }
    p->check = [members, count, c](const Posted& q) {
      return check_values(q, [&](size_t i) {
        return members[i / count] * int64_t{1000000} + c * 1000 + static_cast<int64_t>(i % count);
      });
    };
    rc = plx_ialltoall(p->send.data(), p->recv.data(), count, PLX_INT64, child, &p->request);
  } else {
    // ... and iallgather.
    const size_t count = 5 + 2 * static_cast<size_t>(k);
    p = make_posted("child iallgather" + round, count, count * m);
    for (size_t i = 0; i < count; ++i) {
      p->send[i] = rank * int64_t{1000000} + k * 1000 + static_cast<int64_t>(i);
    }
    p->check = [members, count, k](const Posted& q) {
      return check_values(q, [&](size_t i) {
        return members[i / count] * int64_t{1000000} + k * 1000 + static_cast<int64_t>(i % count);
      });
    };
    rc = plx_iallgather(p->send.data(), p->recv.data(), count, PLX_INT64, child, &p->request);
  }
  if (rc != PLX_SUCCESS) return expect_success(rc, p->label);
  posted->push_back(std::move(p));
  if (k % 3 != 0) return "";
  // The parent, every third round: iallreduce and ibroadcast in turn.
  const size_t count = 64 + static_cast<size_t>(k);
  if (k % 6 == 0) {
    p = make_posted("parent iallreduce" + round, count, count);
    for (size_t i = 0; i < count; ++i) p->send[i] = (rank + 1) * static_cast<int64_t>(i + 1);
    p->check = [n](const Posted& q) {
      return check_values(
          q, [&](size_t i) { return int64_t{n} * (n + 1) / 2 * static_cast<int64_t>(i + 1); });
    };
    rc = plx_iallreduce(p->send.data(), p->recv.data(), count, PLX_INT64, PLX_SUM, world,
                        &p->request);
  } else {
    const int root = (k / 3) % n;
    p = make_posted("parent ibroadcast" + round, count, count);
    for (size_t i = 0; i < count; ++i) p->send[i] = rank * 1000 + k + static_cast<int64_t>(i);
    p->check = [root, k](const Posted& q) {
      return check_values(q, [&](size_t i) { return root * 1000 + k + static_cast<int64_t>(i); });
    };
    rc = plx_ibroadcast(p->send.data(), p->recv.data(), count, PLX_INT64, root, world, &p->request);
  }
  if (rc != PLX_SUCCESS) return expect_success(rc, p->label);
  posted->push_back(std::move(p));
  return "";
}

TEST_P(NonblockingTest, EvenAndOddSplitsRunDifferentCollectivesConcurrently) {
  const int n = GetParam().ranks;
  run([n](int rank) {
    return rank_result(rank, [&]() -> std::string {
      OwnedComm world;
      if (auto why = open_world(n, &world); !why.empty()) return why;
      OwnedComm child;
      if (auto why = expect_success(plx_comm_split(world.get(), rank % 2, rank, child.out()),
                                    "plx_comm_split");
          !why.empty()) {
        return why;
      }
      std::vector<int> members;  // world ranks of my child, in child order
      for (int r = rank % 2; r < n; r += 2) members.push_back(r);
      const int c = rank / 2;
      std::vector<std::unique_ptr<Posted>> posted;
      constexpr int kRounds = 24;
      for (int k = 0; k < kRounds; ++k) {
        if (auto why = post_round(k, rank, n, world.get(), child.get(), members, c, &posted);
            !why.empty()) {
          return why;
        }
      }
      // Wait newest first: every request stays valid until its own wait.
      for (auto it = posted.rbegin(); it != posted.rend(); ++it) {
        if (auto why = expect_success(plx_wait((*it)->request), "plx_wait: " + (*it)->label);
            !why.empty()) {
          return why;
        }
      }
      for (const auto& p : posted) {
        if (auto why = p->check(*p); !why.empty()) return why;
      }
      if (auto why = expect_success(plx_barrier(world.get()), "barrier"); !why.empty()) return why;
      if (auto why = child.destroy("child"); !why.empty()) return why;
      return world.destroy("world");
    }());
  });
}

// Waits (bounded) until every file dir/<stage>.<r> for r != skip exists.
bool wait_for_files(const std::string& dir, const std::string& stage, int n, int skip) {
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  for (int r = 0; r < n; ++r) {
    if (r == skip) continue;
    const std::string path = dir + "/" + stage + "." + std::to_string(r);
    while (!std::filesystem::exists(path)) {
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  return true;
}

// plx_test: argument errors, "not done" while the last rank holds the operations back (it
// waits for every other rank's signal file first), then polling until done.
std::string poll_until_done(plx_comm_t world, int rank, int n, const std::string& signals) {
  const std::string r = "rank " + std::to_string(rank) + ": ";
  // Argument errors come back at once, and no request is made.
  int32_t value = rank + 1, sum = -1;
  plx_request_t request = reinterpret_cast<plx_request_t>(uintptr_t{0x5eed});
  if (auto why =
          expect_failure(plx_iallreduce(&value, &sum, 1, PLX_INT32, PLX_SUM, world, nullptr),
                         PLX_ERROR_INVALID_ARGUMENT, "plx_iallreduce: " + r + "request is NULL");
      !why.empty()) {
    return why;
  }
  if (auto why = expect_failure(plx_ibroadcast(&value, &sum, 1, PLX_INT32, n, world, &request),
                                PLX_ERROR_INVALID_ARGUMENT,
                                "plx_ibroadcast: " + r + "root " + std::to_string(n) +
                                    " not in 0.." + std::to_string(n - 1));
      !why.empty()) {
    return why;
  }
  if (request != reinterpret_cast<plx_request_t>(uintptr_t{0x5eed})) {
    return "request written by a failed call";
  }
  int done = -1;
  if (auto why = expect_failure(plx_test(nullptr, &done), PLX_ERROR_INVALID_ARGUMENT,
                                "plx_test: request is NULL");
      !why.empty()) {
    return why;
  }
  if (auto why = expect_failure(plx_wait(nullptr), PLX_ERROR_INVALID_ARGUMENT,
                                "plx_wait: request is NULL");
      !why.empty()) {
    return why;
  }
  // The last rank holds the operations back until every other rank has seen them unfinished.
  const int late = n - 1;
  plx_request_t barrier = nullptr, reduce = nullptr;
  if (rank == late && !wait_for_files(signals, "tested", n, late)) {
    return "the other ranks never reported their first plx_test";
  }
  if (auto why = expect_success(plx_ibarrier(world, &barrier), "plx_ibarrier"); !why.empty()) {
    return why;
  }
  std::vector<int32_t> send(1000), recv(1000, -1);
  for (size_t i = 0; i < send.size(); ++i) send[i] = (rank + 1) * static_cast<int32_t>(i);
  if (auto why = expect_success(
          plx_iallreduce(send.data(), recv.data(), send.size(), PLX_INT32, PLX_SUM, world, &reduce),
          "plx_iallreduce");
      !why.empty()) {
    return why;
  }
  long polls_not_done = 0;
  if (rank != late) {
    for (plx_request_t req : {barrier, reduce}) {
      done = -1;
      if (auto why = expect_success(plx_test(req, &done), "first plx_test"); !why.empty()) {
        return why;
      }
      if (done != 0) return "first plx_test reported done before the late rank posted";
    }
    if (auto why = expect_failure(plx_test(barrier, nullptr), PLX_ERROR_INVALID_ARGUMENT,
                                  "plx_test: done is NULL");
        !why.empty()) {
      return why;
    }
    std::ofstream(signals + "/tested." + std::to_string(rank)) << "1";
  }
  // Poll both until done (bounded); each is freed by the plx_test that reports it done.
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  bool barrier_done = false, reduce_done = false;
  while (!(barrier_done && reduce_done)) {
    if (Clock::now() > deadline) return "plx_test never reported done";
    for (auto [req, flag] : {std::pair{barrier, &barrier_done}, std::pair{reduce, &reduce_done}}) {
      if (*flag) continue;
      done = -1;
      if (auto why = expect_success(plx_test(req, &done), "plx_test"); !why.empty()) {
        return why;
      }
      if (done != 0 && done != 1) return "plx_test set done to " + std::to_string(done);
      *flag = done == 1;
      polls_not_done += done == 0;
    }
    if (!(barrier_done && reduce_done)) usleep(500);
  }
  for (size_t i = 0; i < recv.size(); ++i) {
    if (recv[i] != n * (n + 1) / 2 * static_cast<int32_t>(i)) {
      return "iallreduce index " + std::to_string(i) + " is " + std::to_string(recv[i]);
    }
  }
  if (rank != late && polls_not_done == 0) return "never saw an unfinished request";
  return "";
}

// Sixty-four requests outstanding on one communicator complete in order.
std::string many_outstanding_in_order(plx_comm_t world, int rank, int n) {
  // Step k reads buffer k and writes buffer k+1, so any step run early or concurrently with
  // its predecessor reads a wrong value. Steps with k % 5 == 4 broadcast, others sum.
  constexpr int kSteps = 64;
  constexpr size_t kCount = 4;
  std::vector<std::vector<uint64_t>> bufs(kSteps + 2, std::vector<uint64_t>(kCount, 0));
  std::vector<std::vector<uint64_t>> expected = bufs;
  for (size_t i = 0; i < kCount; ++i) {
    bufs[0][i] = static_cast<uint64_t>(rank + 1) * (i + 1);
    expected[1][i] = static_cast<uint64_t>(n) * (n + 1) / 2 * (i + 1);
  }
  std::vector<plx_request_t> requests(kSteps, nullptr);
  for (int k = 0; k < kSteps; ++k) {
    plx_result_t rc;
    if (k % 5 == 4) {
      rc = plx_ibroadcast(bufs[k].data(), bufs[k + 1].data(), kCount, PLX_UINT64, k % n, world,
                          &requests[k]);
    } else {
      rc = plx_iallreduce(bufs[k].data(), bufs[k + 1].data(), kCount, PLX_UINT64, PLX_SUM, world,
                          &requests[k]);
    }
    if (rc != PLX_SUCCESS) return expect_success(rc, "post " + std::to_string(k));
    if (k == 0) continue;
    for (size_t i = 0; i < kCount; ++i) {
      expected[k + 1][i] = k % 5 == 4 ? expected[k][i] : expected[k][i] * n;  // wraps mod 2^64
    }
  }
  // A blocking call queues behind them all and reads the last one's output.
  if (auto why = expect_success(plx_allreduce(bufs[kSteps].data(), bufs[kSteps + 1].data(), kCount,
                                              PLX_UINT64, PLX_SUM, world, nullptr),
                                "blocking allreduce after the posts");
      !why.empty()) {
    return why;
  }
  for (size_t i = 0; i < kCount; ++i) expected[kSteps + 1][i] = expected[kSteps][i] * n;
  // It returned, so every earlier request has finished: one plx_test each says so.
  for (int k = 0; k < kSteps; ++k) {
    int done = -1;
    if (auto why = expect_success(plx_test(requests[k], &done), "plx_test"); !why.empty()) {
      return why;
    }
    if (done != 1) return "request " + std::to_string(k) + " unfinished after a later call";
  }
  for (int k = 1; k <= kSteps + 1; ++k) {
    if (bufs[k] != expected[k]) {
      return "buffer " + std::to_string(k) + "[0] is " + std::to_string(bufs[k][0]) +
             ", expected " + std::to_string(expected[k][0]);
    }
  }
  // The same with a wait on the newest request: the older ones are then done too.
  std::vector<int64_t> values(kSteps), sums(kSteps, -1);
  for (int k = 0; k < kSteps; ++k) {
    values[k] = (rank + 1) * int64_t{k};
    if (auto why = expect_success(
            plx_iallreduce(&values[k], &sums[k], 1, PLX_INT64, PLX_SUM, world, &requests[k]),
            "iallreduce");
        !why.empty()) {
      return why;
    }
  }
  if (auto why = expect_success(plx_wait(requests[kSteps - 1]), "wait on the newest");
      !why.empty()) {
    return why;
  }
  for (int k = 0; k + 1 < kSteps; ++k) {
    int done = -1;
    if (plx_test(requests[k], &done) != PLX_SUCCESS || done != 1) {
      return "request " + std::to_string(k) + " unfinished after the newest";
    }
  }
  for (int k = 0; k < kSteps; ++k) {
    if (sums[k] != int64_t{k} * n * (n + 1) / 2) {
      return "sum " + std::to_string(k) + " is " + std::to_string(sums[k]);
    }
  }
  return "";
}

// Requests waited for or polled on other threads while this one makes a blocking call.
std::string wait_from_other_threads(plx_comm_t world, int rank, int n) {
  constexpr int kRequests = 8;
  constexpr size_t kCount = 3001;
  std::vector<std::vector<float>> send(kRequests, std::vector<float>(kCount));
  std::vector<std::vector<float>> recv(kRequests, std::vector<float>(kCount, -1.0f));
  std::vector<plx_request_t> requests(kRequests);
  for (int k = 0; k < kRequests; ++k) {
    for (size_t i = 0; i < kCount; ++i) send[k][i] = static_cast<float>((rank + 1) * (k + 1));
    if (auto why = expect_success(plx_iallreduce(send[k].data(), recv[k].data(), kCount,
                                                 PLX_FLOAT32, PLX_SUM, world, &requests[k]),
                                  "iallreduce");
        !why.empty()) {
      return why;
    }
  }
  // Each request is waited for (even k) or polled (odd k) on its own thread, while this
  // thread makes a blocking call that queues behind them.
  std::vector<plx_result_t> results(kRequests, PLX_IN_PROGRESS);
  std::vector<std::string> messages(kRequests);
  std::vector<std::thread> threads;
  for (int k = 0; k < kRequests; ++k) {
    threads.emplace_back([&, k] {
      if (k % 2 == 0) {
        results[k] = plx_wait(requests[k]);
      } else {
        const auto deadline = Clock::now() + std::chrono::seconds(60);
        int done = 0;
        plx_result_t rc = PLX_SUCCESS;
        while (rc == PLX_SUCCESS && done == 0 && Clock::now() < deadline) {
          rc = plx_test(requests[k], &done);
          if (done == 0) usleep(1000);
        }
        results[k] = rc == PLX_SUCCESS && done == 0 ? PLX_ERROR_TIMEOUT : rc;
      }
      messages[k] = last_error_text();
    });
  }
  int32_t value = rank, total = -1;
  const plx_result_t blocking =
      plx_allreduce(&value, &total, 1, PLX_INT32, PLX_SUM, world, nullptr);
  const std::string blocking_error = last_error_text();
  for (auto& t : threads) t.join();
  if (blocking != PLX_SUCCESS || total != n * (n - 1) / 2) {
    return "blocking allreduce: " + std::to_string(total) + " " + blocking_error;
  }
  for (int k = 0; k < kRequests; ++k) {
    if (results[k] != PLX_SUCCESS) {
      return "request " + std::to_string(k) + ": " + plx_get_error_string(results[k]) + " " +
             messages[k];
    }
    const float want = static_cast<float>((k + 1) * n * (n + 1) / 2);
    for (size_t i = 0; i < kCount; ++i) {
      if (recv[k][i] != want) {
        return "request " + std::to_string(k) + " index " + std::to_string(i) + " is " +
               std::to_string(recv[k][i]);
      }
    }
  }
  return "";
}

// plx_comm_destroy with requests outstanding flushes them first (as NCCL does): each finishes
// with its result, and plx_wait after the destroy returns it.
std::string destroy_with_requests_outstanding(OwnedComm* world, int rank, int n) {
  constexpr int kRequests = 4;
  int64_t values[kRequests], sums[kRequests];
  plx_request_t requests[kRequests];
  for (int k = 0; k < kRequests; ++k) {
    values[k] = (rank + 1) * int64_t{k + 1};
    sums[k] = -1;
    if (auto why = expect_success(
            plx_iallreduce(&values[k], &sums[k], 1, PLX_INT64, PLX_SUM, world->get(), &requests[k]),
            "iallreduce before the destroy");
        !why.empty()) {
      return why;
    }
  }
  if (auto why = world->destroy("world with requests outstanding"); !why.empty()) return why;
  for (int k = 0; k < kRequests; ++k) {
    if (auto why = expect_success(plx_wait(requests[k]), "plx_wait after the destroy");
        !why.empty()) {
      return why;
    }
    if (sums[k] != int64_t{k + 1} * n * (n + 1) / 2) {
      return "request " + std::to_string(k) + " flushed by the destroy gave " +
             std::to_string(sums[k]);
    }
  }
  return "";
}

INSTANTIATE_TEST_SUITE_P(Transports, NonblockingTest, ::testing::ValuesIn(rank_cases({4, 5})),
                         rank_case_name);

// One launch per transport runs the request scenarios in turn (a fork of 4-5 ranks costs
// seconds on a loaded 2-core runner).
class RequestTest : public RankCaseTest {};

TEST_P(RequestTest, PollWaitFromThreadsCompleteInOrderAndFlushOnDestroy) {
  const int n = GetParam().ranks;
  TempDir dir("plexus-nonblocking");  // this test's signal files
  ASSERT_FALSE(dir.path().empty()) << "mkdtemp failed";
  const std::string signals = dir.path();
  run([n, signals](int rank) {
    return rank_result(rank, [&]() -> std::string {
      OwnedComm world;
      if (auto why = open_world(n, &world); !why.empty()) return why;
      if (auto why = poll_until_done(world.get(), rank, n, signals); !why.empty()) {
        return "plx_test: " + why;
      }
      if (auto why = many_outstanding_in_order(world.get(), rank, n); !why.empty()) {
        return "in order: " + why;
      }
      if (auto why = wait_from_other_threads(world.get(), rank, n); !why.empty()) {
        return "other threads: " + why;
      }
      return destroy_with_requests_outstanding(&world, rank, n);
    }());
  });
}

INSTANTIATE_TEST_SUITE_P(Transports, RequestTest,
                         ::testing::Values(RankCase{"tcp", 4}, RankCase{"shm", 5},
                                           RankCase{"ucx", 5}),
                         rank_case_name);

// ---- Waiting sleeps. ----

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);  // every thread of this process
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

// CPU and wall seconds of one call.
struct Usage {
  double cpu = 0;
  double wall = 0;
};

template <typename Call>
Usage measure(Call&& call) {
  const double cpu0 = cpu_seconds();
  const auto wall0 = Clock::now();
  call();
  return {cpu_seconds() - cpu0, std::chrono::duration<double>(Clock::now() - wall0).count()};
}

// A wait of about a second may burn at most this share of one core. An idle wait polls its
// transport at most every millisecond (a few microseconds each); a spinning one burns ~100%.
constexpr double kMaxBusyShare = 0.3;

std::string check_idle(const Usage& u, const std::string& what) {
  // A rank descheduled for most of the peer's second (a heavily loaded runner) waited too
  // briefly to judge; its result was still checked.
  if (u.wall < 0.4) return "";
  if (u.cpu > kMaxBusyShare * u.wall) {
    return what + " used " + std::to_string(u.cpu) + " s of CPU in " + std::to_string(u.wall) +
           " s: it spins";
  }
  return "";
}

class IdleWaitTest : public RankCaseTest {};

TEST_P(IdleWaitTest, WaitingForASlowPeerSleeps) {
  const int n = GetParam().ranks;
  run([n](int rank) {
    return rank_result(rank, [&]() -> std::string {
      OwnedComm world;
      if (auto why = open_world(n, &world); !why.empty()) return why;
      const int slow = n - 1;
      int64_t value = rank, sum = -1;
      // 1. plx_wait on a request the slow peer holds back for a second.
      if (auto why = expect_success(plx_barrier(world.get()), "barrier"); !why.empty()) return why;
      if (rank == slow) usleep(1000 * 1000);
      plx_request_t request = nullptr;
      plx_result_t rc = PLX_SUCCESS;
      const Usage waited = measure([&] {
        rc = plx_iallreduce(&value, &sum, 1, PLX_INT64, PLX_SUM, world.get(), &request);
        if (rc == PLX_SUCCESS) rc = plx_wait(request);
      });
      if (auto why = expect_success(rc, "iallreduce + plx_wait"); !why.empty()) return why;
      if (sum != int64_t{n} * (n - 1) / 2) return "iallreduce gave " + std::to_string(sum);
      std::string report = "plx_wait: cpu " + std::to_string(waited.cpu) + " s in " +
                           std::to_string(waited.wall) + " s";
      // 2. A blocking collective held back the same way (it runs on this thread).
      if (auto why = expect_success(plx_barrier(world.get()), "barrier"); !why.empty()) return why;
      if (rank == slow) usleep(1000 * 1000);
      const Usage blocked = measure(
          [&] { rc = plx_allreduce(&value, &sum, 1, PLX_INT64, PLX_SUM, world.get(), nullptr); });
      if (auto why = expect_success(rc, "blocking allreduce"); !why.empty()) return why;
      report += "; plx_allreduce: cpu " + std::to_string(blocked.cpu) + " s in " +
                std::to_string(blocked.wall) + " s";
      // 3. An idle communicator whose progress thread has started.
      const Usage idle = measure([] { usleep(500 * 1000); });
      report += "; idle: cpu " + std::to_string(idle.cpu) + " s in " + std::to_string(idle.wall);
      if (rank != slow) {
        if (auto why = check_idle(waited, "plx_wait"); !why.empty()) {
          return why + " (" + report + ")";
        }
        if (auto why = check_idle(blocked, "plx_allreduce"); !why.empty()) {
          return why + " (" + report + ")";
        }
      }
      if (idle.cpu > kMaxBusyShare * idle.wall) {
        return "an idle communicator spins (" + report + ")";
      }
      return world.destroy("world");
    }());
  });
}

INSTANTIATE_TEST_SUITE_P(Transports, IdleWaitTest, ::testing::ValuesIn(rank_cases({3})),
                         rank_case_name);

}  // namespace
}  // namespace plexus::test
