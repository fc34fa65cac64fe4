// completion_hook_test.cpp - the completion steps of comm/core/task.h, attached to operations
// through comm/core/submit.h's CompletionScope, on real 2-rank worlds over libfabric tcp.
//
// A step records how often it ran, the outcome it was given, and whether the operation's result
// was already in the buffer when it ran. Checked: it runs exactly once, after the operation,
// never before the request (or group) is completed, on plx_wait, on plx_test (polled until
// done), on plx_waitall, at plx_group_end (for blocking calls and for requests in the group,
// whose later plx_wait does not run it again), and on the blocking call itself outside a group;
// on failure: a failing step becomes the request's result (and the communicator stays usable),
// a mismatched operation gives the step PLX_ERROR_MISMATCH (plx_waitall names the failed entry),
// an aborted one PLX_ERROR_ABORTED; a call refused for a bad argument takes no step, and what a
// step captured is released once it ran or was dropped; plx_waitall refuses a NULL array, a
// request of an open group (this thread's or another's; plx_test too) and a request listed
// twice (freeing nothing).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/base/error.h"
#include "comm/core/submit.h"
#include "plexus/plexus.h"
#include "tests/comm/collective_reference.h"
#include "tests/comm/transport_cases.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

using plexus::comm::CompletionScope;

// What one completion step saw.
struct Probe {
  int runs = 0;
  plx_result_t outcome = PLX_IN_PROGRESS;
  bool result_in_place = false;  // the watched buffer held the expected values when it ran
};

// A step for `probe`; when `watched` is given it checks watched == want as it runs.
comm::Completion step_for(Probe* probe, const std::vector<int64_t>* watched = nullptr,
                          std::vector<int64_t> want = {},
                          plx_result_t returns = PLX_SUCCESS) {
  return [probe, watched, want = std::move(want), returns](plx_result_t outcome) {
    ++probe->runs;
    probe->outcome = outcome;
    probe->result_in_place = watched == nullptr || *watched == want;
    if (returns != PLX_SUCCESS) {
      return plexus::set_error(returns, "rank ?: the test's step failed on purpose");
    }
    return PLX_SUCCESS;
  };
}

// "" when the probe ran once after a successful operation with its result in place.
std::string ran_once(const Probe& probe, const std::string& what) {
  if (probe.runs != 1) return what + ": the step ran " + std::to_string(probe.runs) + " times";
  if (probe.outcome != PLX_SUCCESS) {
    return what + ": the step saw " + plx_get_error_string(probe.outcome);
  }
  if (!probe.result_in_place) return what + ": the step ran before the result was written";
  return "";
}

constexpr size_t kCount = 1031;  // a prime

// plx_wait, plx_test and plx_waitall; the blocking call; a step's captured state released.
std::string requests(plx_comm_t comm, int rank, int n) {
  const auto send = ramp(rank, kCount);
  const auto want = ramp_sum(n, kCount);
  {  // plx_wait
    std::vector<int64_t> recv(kCount, -1);
    Probe probe;
    auto captured = std::make_shared<int>(7);
    plx_request_t request = nullptr;
    {
      CompletionScope scope([step = step_for(&probe, &recv, want), captured](plx_result_t o) {
        return step(o);
      });
      if (auto why = expect_success(plx_iallreduce(send.data(), recv.data(), kCount, PLX_INT64,
                                                   PLX_SUM, comm, &request),
                                    "plx_iallreduce");
          !why.empty()) {
        return why;
      }
      if (!scope.attached()) return "plx_iallreduce: the step was not attached";
    }
    // A blocking call after it runs after it (call order): the operation is done, the step not.
    if (auto why = expect_success(plx_barrier(comm), "plx_barrier"); !why.empty()) return why;
    if (probe.runs != 0) return "plx_iallreduce: the step ran before plx_wait";
    if (captured.use_count() != 2) return "plx_iallreduce: the step was dropped early";
    if (auto why = expect_success(plx_wait(request), "plx_wait"); !why.empty()) return why;
    if (auto why = ran_once(probe, "plx_wait"); !why.empty()) return why;
    if (captured.use_count() != 1) return "plx_wait: the step's captured state was not released";
  }
  {  // plx_test, polled until done (bounded)
    std::vector<int64_t> recv(kCount, -1);
    Probe probe;
    plx_request_t request = nullptr;
    {
      CompletionScope scope(step_for(&probe, &recv, want));
      if (auto why = expect_success(plx_iallreduce(send.data(), recv.data(), kCount, PLX_INT64,
                                                   PLX_SUM, comm, &request),
                                    "plx_iallreduce for plx_test");
          !why.empty()) {
        return why;
      }
    }
    int done = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done && std::chrono::steady_clock::now() < deadline) {
      if (auto why = expect_success(plx_test(request, &done), "plx_test"); !why.empty()) {
        return why;
      }
      if (!done) {
        if (probe.runs != 0) return "plx_test: the step ran before the request was done";
        usleep(1000);
      }
    }
    if (!done) return "plx_test: not done after 30 s";
    if (auto why = ran_once(probe, "plx_test"); !why.empty()) return why;
  }
  {  // plx_waitall over three requests (and a NULL entry)
    std::vector<std::vector<int64_t>> recv(3, std::vector<int64_t>(kCount, -1));
    Probe probes[3];
    plx_request_t reqs[4] = {nullptr, nullptr, nullptr, nullptr};
    for (int k = 0; k < 3; ++k) {
      CompletionScope scope(step_for(&probes[k], &recv[k], want));
      if (auto why = expect_success(plx_iallreduce(send.data(), recv[k].data(), kCount,
                                                   PLX_INT64, PLX_SUM, comm, &reqs[k == 2 ? 3 : k]),
                                    "plx_iallreduce for plx_waitall");
          !why.empty()) {
        return why;
      }
    }
    if (auto why = expect_success(plx_waitall(4, reqs), "plx_waitall"); !why.empty()) return why;
    for (int k = 0; k < 3; ++k) {
      if (auto why = ran_once(probes[k], "plx_waitall request " + std::to_string(k));
          !why.empty()) {
        return why;
      }
    }
    for (plx_request_t r : reqs) {
      if (r != nullptr) return "plx_waitall left a request entry set";
    }
  }
  {  // a blocking call outside a group completes itself
    std::vector<int64_t> recv(kCount, -1);
    Probe probe;
    CompletionScope scope(step_for(&probe, &recv, want));
    if (auto why = expect_success(
            plx_allreduce(send.data(), recv.data(), kCount, PLX_INT64, PLX_SUM, comm, nullptr),
            "plx_allreduce");
        !why.empty()) {
      return why;
    }
    if (auto why = ran_once(probe, "plx_allreduce (blocking)"); !why.empty()) return why;
  }
  return "";
}

// A group of a blocking allreduce, a broadcast and a send/recv pair, and a request in it.
std::string group(plx_comm_t comm, int rank, int n) {
  const int peer = (rank + 1) % n;
  const int from = (rank + n - 1) % n;
  const auto send = ramp(rank, kCount);
  std::vector<int64_t> sum(kCount, -1), bcast(kCount, -1), got(kCount, -1);
  std::vector<int64_t> bsrc = rank == 0 ? ramp(0, kCount) : std::vector<int64_t>(kCount, -2);
  Probe p_sum, p_bcast, p_send, p_recv;
  plx_request_t recv_request = nullptr;
  if (plx_group_start() != PLX_SUCCESS) return "plx_group_start: " + last_error_text();
  std::string queued;
  {
    CompletionScope scope(step_for(&p_sum, &sum, ramp_sum(n, kCount)));
    queued = expect_success(
        plx_allreduce(send.data(), sum.data(), kCount, PLX_INT64, PLX_SUM, comm, nullptr),
        "grouped plx_allreduce");
  }
  if (queued.empty()) {
    CompletionScope scope(step_for(&p_bcast, &bcast, ramp(0, kCount)));
    queued = expect_success(plx_broadcast(bsrc.data(), bcast.data(), kCount, PLX_INT64, 0, comm,
                                          nullptr),
                            "grouped plx_broadcast");
  }
  if (queued.empty()) {
    CompletionScope scope(step_for(&p_send));
    queued = expect_success(plx_send(send.data(), kCount, PLX_INT64, peer, comm, nullptr),
                            "grouped plx_send");
  }
  if (queued.empty()) {
    CompletionScope scope(step_for(&p_recv, &got, ramp(from, kCount)));
    queued = expect_success(plx_irecv(got.data(), kCount, PLX_INT64, from, comm, &recv_request),
                            "grouped plx_irecv");
  }
  const int runs_before_end = p_sum.runs + p_bcast.runs + p_send.runs + p_recv.runs;
  const plx_result_t ended = plx_group_end();
  if (!queued.empty()) return queued;
  if (auto why = expect_success(ended, "plx_group_end"); !why.empty()) return why;
  if (runs_before_end != 0) return "a grouped step ran before plx_group_end";
  for (auto why : {ran_once(p_sum, "group allreduce"), ran_once(p_bcast, "group broadcast"),
                   ran_once(p_send, "group send"), ran_once(p_recv, "group irecv")}) {
    if (!why.empty()) return why;
  }
  // The request of the group finished with it: plx_wait returns its result, no second run.
  if (auto why = expect_success(plx_wait(recv_request), "plx_wait on the group's request");
      !why.empty()) {
    return why;
  }
  if (p_recv.runs != 1) return "plx_wait ran the group request's step again";
  return "";
}

// A failing step, a mismatched operation, a refused call.
std::string failures(plx_comm_t comm, int rank, int n) {
  const auto send = ramp(rank, kCount);
  {  // the step's failure is the request's result; the communicator stays usable
    std::vector<int64_t> recv(kCount, -1);
    Probe probe;
    plx_request_t request = nullptr;
    {
      CompletionScope scope(step_for(&probe, &recv, ramp_sum(n, kCount), PLX_ERROR_SYSTEM));
      if (auto why = expect_success(plx_iallreduce(send.data(), recv.data(), kCount, PLX_INT64,
                                                   PLX_SUM, comm, &request),
                                    "plx_iallreduce with a failing step");
          !why.empty()) {
        return why;
      }
    }
    const plx_result_t rc = plx_wait(request);
    const bool named = last_error_text().find("failed on purpose") != std::string::npos;
    if (rc != PLX_ERROR_SYSTEM || !named) {
      return "a failing step: plx_wait gave " + std::string(plx_get_error_string(rc)) + " \"" +
             last_error_text() + "\"";
    }
    if (probe.runs != 1) return "a failing step ran " + std::to_string(probe.runs) + " times";
  }
  {  // a mismatch: rank 0 reduces one element more than the others
    const size_t count = rank == 0 ? 5 : 4;
    std::vector<int64_t> in(5, 1), out(5, -1);
    Probe probe;
    plx_request_t request = nullptr;
    {
      CompletionScope scope(step_for(&probe));
      if (auto why = expect_success(plx_iallreduce(in.data(), out.data(), count, PLX_INT64,
                                                   PLX_SUM, comm, &request),
                                    "mismatched plx_iallreduce");
          !why.empty()) {
        return why;
      }
    }
    plx_request_t reqs[2] = {nullptr, request};
    const plx_result_t rc = plx_waitall(2, reqs);
    const bool named = last_error_text().rfind("plx_waitall: requests[1]: ", 0) == 0;
    if (rc != PLX_ERROR_MISMATCH || !named) {
      return "a mismatch: plx_waitall gave " + std::string(plx_get_error_string(rc)) + " \"" +
             last_error_text() + "\"";
    }
    if (reqs[1] != nullptr) return "a mismatch: plx_waitall left the failed request set";
    if (probe.runs != 1 || probe.outcome != PLX_ERROR_MISMATCH) {
      return "a mismatch: the step ran " + std::to_string(probe.runs) + " times, saw " +
             plx_get_error_string(probe.outcome);
    }
  }
  {  // a bad argument: nothing queued, the step dropped unrun, its state released
    Probe probe;
    auto captured = std::make_shared<int>(1);
    plx_request_t request = nullptr;
    {
      CompletionScope scope([step = step_for(&probe), captured](plx_result_t o) {
        return step(o);
      });
      const plx_result_t rc = plx_iallreduce(send.data(), nullptr, kCount, PLX_INT64, PLX_SUM,
                                             comm, &request);
      if (rc != PLX_ERROR_INVALID_ARGUMENT) return "NULL recvbuf was not refused";
      if (scope.attached()) return "a refused call took the step";
    }
    if (request != nullptr || probe.runs != 0 || captured.use_count() != 1) {
      return "a refused call: request set, step run or its state kept";
    }
  }
  {  // plx_waitall's own refusals: NULL array, a request of the open group (nothing freed)
    if (plx_waitall(0, nullptr) != PLX_SUCCESS) return "plx_waitall(0, NULL) failed";
    if (auto why = expect_failure(plx_waitall(1, nullptr), PLX_ERROR_INVALID_ARGUMENT,
                                  "plx_waitall: requests is NULL");
        !why.empty()) {
      return "plx_waitall(1, NULL): " + why;
    }
    std::vector<int64_t> recv(kCount, -1);
    plx_request_t request = nullptr;
    if (plx_group_start() != PLX_SUCCESS) return "plx_group_start: " + last_error_text();
    std::string why = expect_success(
        plx_iallreduce(send.data(), recv.data(), kCount, PLX_INT64, PLX_SUM, comm, &request),
        "plx_iallreduce in a group");
    if (why.empty()) {
      why = expect_failure(plx_waitall(1, &request), PLX_ERROR_INVALID_USAGE,
                           "plx_waitall: requests[0] belongs to an open group; call "
                           "plx_group_end() first");
      if (!why.empty()) why = "plx_waitall in the open group: " + why;
    }
    if (why.empty()) {  // plx_test refuses it too (it would never report done)
      int done = 1;
      why = expect_failure(plx_test(request, &done), PLX_ERROR_INVALID_USAGE,
                           "plx_test: the request belongs to an open group; call "
                           "plx_group_end() first");
      if (why.empty() && done != 0) why = "a refused plx_test set *done";
      if (!why.empty()) why = "plx_test in the open group: " + why;
    }
    if (why.empty()) {  // and so does another thread (it would wait for this thread forever)
      std::thread other([&] {
        why = expect_failure(plx_waitall(1, &request), PLX_ERROR_INVALID_USAGE,
                             "plx_waitall: requests[0] belongs to an open group; call "
                             "plx_group_end() first");
      });
      other.join();
      if (!why.empty()) why = "plx_waitall of another thread's open group: " + why;
    }
    const plx_result_t ended = plx_group_end();
    if (!why.empty()) return why;
    if (auto e = expect_success(ended, "plx_group_end"); !e.empty()) return e;
    if (request == nullptr) return "plx_waitall in the open group cleared the request";
    if (auto e = expect_success(plx_waitall(1, &request), "plx_waitall after plx_group_end");
        !e.empty()) {
      return e;
    }
    if (recv != ramp_sum(n, kCount)) return "iallreduce in a group: wrong values";
  }
  {  // a request listed twice is refused (it would be freed twice); nothing is freed
    std::vector<int64_t> recv(kCount, -1);
    plx_request_t reqs[3] = {nullptr, nullptr, nullptr};
    if (auto why = expect_success(plx_iallreduce(send.data(), recv.data(), kCount, PLX_INT64,
                                                 PLX_SUM, comm, &reqs[0]),
                                  "plx_iallreduce for the duplicate entry");
        !why.empty()) {
      return why;
    }
    reqs[2] = reqs[0];
    if (auto why = expect_failure(plx_waitall(3, reqs), PLX_ERROR_INVALID_ARGUMENT,
                                  "plx_waitall: requests[0] and requests[2] are the same request");
        !why.empty()) {
      return "plx_waitall with a request twice: " + why;
    }
    if (reqs[0] == nullptr || reqs[2] != reqs[0]) return "a refused plx_waitall cleared entries";
    if (auto why = expect_success(plx_wait(reqs[0]), "plx_wait after the refused plx_waitall");
        !why.empty()) {
      return why;
    }
    if (recv != ramp_sum(n, kCount)) return "the request refused by plx_waitall: wrong values";
  }
  // Still usable: one more allreduce.
  std::vector<int64_t> recv(kCount, -1);
  if (auto why = expect_success(
          plx_allreduce(send.data(), recv.data(), kCount, PLX_INT64, PLX_SUM, comm, nullptr),
          "plx_allreduce after the failures");
      !why.empty()) {
    return why;
  }
  if (recv != ramp_sum(n, kCount)) return "plx_allreduce after the failures: wrong values";
  return "";
}

TEST(CompletionHook, RequestsAndBlockingCalls) {
  const auto outcomes = run_ranks(2, [](int rank) {
    OwnedComm comm;
    std::string why = open_world(2, &comm);
    if (why.empty()) why = requests(comm.get(), rank, 2);
    if (why.empty()) why = comm.destroy("requests");
    return rank_result(rank, why);
  }, 120.0, transport_env("tcp"));
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST(CompletionHook, GroupEnd) {
  const auto outcomes = run_ranks(2, [](int rank) {
    OwnedComm comm;
    std::string why = open_world(2, &comm);
    if (why.empty()) why = group(comm.get(), rank, 2);
    if (why.empty()) why = comm.destroy("group");
    return rank_result(rank, why);
  }, 120.0, transport_env("tcp"));
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST(CompletionHook, Failures) {
  const auto outcomes = run_ranks(2, [](int rank) {
    OwnedComm comm;
    std::string why = open_world(2, &comm);
    if (why.empty()) why = failures(comm.get(), rank, 2);
    if (why.empty()) why = comm.destroy("failures");
    return rank_result(rank, why);
  }, 120.0, transport_env("tcp"));
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

// Both ranks post a receive nobody sends, then abort: the step runs once, with ABORTED.
TEST(CompletionHook, Abort) {
  const auto outcomes = run_ranks(2, [](int rank) {
    OwnedComm comm;
    std::string why = open_world(2, &comm);
    if (!why.empty()) return rank_result(rank, why);
    std::vector<int64_t> recv(16, -1);
    Probe probe;
    plx_request_t request = nullptr;
    {
      CompletionScope scope(step_for(&probe));
      why = expect_success(plx_irecv(recv.data(), 16, PLX_INT64, 1 - rank, comm.get(), &request),
                           "plx_irecv");
    }
    if (!why.empty()) return rank_result(rank, why);
    if (probe.runs != 0) return rank_result(rank, "the step ran before the abort");
    why = comm.abort("abort with a posted receive");
    if (!why.empty()) return rank_result(rank, why);
    const plx_result_t rc = plx_wait(request);
    if (rc != PLX_ERROR_ABORTED) {
      return rank_result(rank, "plx_wait after the abort gave " +
                                   std::string(plx_get_error_string(rc)));
    }
    if (probe.runs != 1 || probe.outcome != PLX_ERROR_ABORTED) {
      return rank_result(rank, "after the abort the step ran " + std::to_string(probe.runs) +
                                   " times, saw " + plx_get_error_string(probe.outcome));
    }
    return 0;
  }, 120.0, transport_env("tcp"));
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

}  // namespace
}  // namespace plexus::test
