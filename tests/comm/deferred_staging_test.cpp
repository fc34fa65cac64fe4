// deferred_staging_test.cpp - comm/device/device_deferred.h on the CPU: device buffers in
// non-blocking calls and groups, staged through memory of the call's own, with a host copy
// engine standing in for CUDA (its copies are only done at wait(), as an asynchronous engine's
// would be), on real 2-rank worlds over libfabric tcp running the real shared bodies.
//
// Checked: the pinned layout (disjoint, in place, unused buffers, overflow); results of a
// non-blocking allreduce (counts 0 and a prime), an in-place allgather and an alltoallv whose
// holes survive, against closed forms; that the result reaches the caller's buffer only when
// the request completes (not when the operation has run); a group of allreduce, broadcast and
// send/recv, in place after plx_group_end; failures of the allocation and of a copy in (returned
// at once, no request, nothing queued, nothing left allocated), of the copy back (the request's
// result, naming the function, rank and recvbuf; freed); an abort (freed, nothing copied back);
// and a timeout, after which the staging is leaked on purpose (the transport may still write).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/api/c_api_calls.h"
#include "comm/base/error.h"
#include "comm/device/device_args.h"
#include "comm/device/device_deferred.h"
#include "plexus/plexus.h"
#include "tests/comm/collective_reference.h"
#include "tests/comm/transport_cases.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

namespace device = plexus::comm::device;
namespace capi = plexus::comm::capi;

// Allocations of one rank's engines.
struct Ledger {
  std::atomic<int> allocated{0};
  std::atomic<int> released{0};
};

// A CopyEngine over host memory; `fail_at` ("allocate", "to_pinned", "from_pinned") injects a
// failure there.
class HostCopyEngine final : public device::CopyEngine {
 public:
  HostCopyEngine(const char* fn, int rank, Ledger* ledger, std::string fail_at = "")
      : fn_(fn), rank_(rank), ledger_(ledger), fail_at_(std::move(fail_at)) {}

  plx_result_t allocate(size_t bytes, void** pinned, const std::string& what) override {
    if (fail_at_ == "allocate") return injected(what);
    *pinned = new unsigned char[bytes];
    ledger_->allocated++;
    return PLX_SUCCESS;
  }
  void release(void* pinned) noexcept override {
    delete[] static_cast<unsigned char*>(pinned);
    ledger_->released++;
  }
  plx_result_t to_pinned(void* pinned, const void* buffer, size_t bytes,
                         const std::string& what) override {
    if (fail_at_ == "to_pinned") return injected(what);
    pending_.push_back({pinned, buffer, bytes});
    return PLX_SUCCESS;
  }
  plx_result_t from_pinned(void* buffer, const void* pinned, size_t bytes,
                           const std::string& what) override {
    if (fail_at_ == "from_pinned") return injected(what);
    pending_.push_back({buffer, pinned, bytes});
    return PLX_SUCCESS;
  }
  plx_result_t wait(const std::string&) override {
    for (const Copy& c : pending_) std::memcpy(c.dst, c.src, c.bytes);
    pending_.clear();
    return PLX_SUCCESS;
  }

 private:
  struct Copy {
    void* dst;
    const void* src;
    size_t bytes;
  };
  plx_result_t injected(const std::string& what) {
    return plexus::set_error(PLX_ERROR_SYSTEM, std::string(fn_) + ": rank " +
                                                   std::to_string(rank_) + ": " + what +
                                                   ": injected failure");
  }
  const char* fn_;
  int rank_;
  Ledger* ledger_;
  std::string fail_at_;
  std::vector<Copy> pending_;
};

// "" when got == want, else the first differing index.
std::string compare(const std::vector<int64_t>& got, const std::vector<int64_t>& want,
                    const std::string& what) {
  if (got.size() != want.size()) return what + ": size differs";
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      return what + ": index " + std::to_string(i) + " is " + std::to_string(got[i]) +
             ", expected " + std::to_string(want[i]);
    }
  }
  return "";
}

std::string balanced(const Ledger& ledger, int allocated, const std::string& what) {
  if (ledger.allocated != allocated || ledger.released != allocated) {
    return what + ": " + std::to_string(ledger.allocated.load()) + " allocated, " +
           std::to_string(ledger.released.load()) + " released, expected " +
           std::to_string(allocated) + " each";
  }
  return "";
}

// A non-blocking allreduce of `count` int64 through the staging; *request is its request.
plx_result_t iallreduce(plx_comm_t comm, int rank, const std::vector<int64_t>& send,
                        std::vector<int64_t>* recv, size_t count,
                        std::shared_ptr<device::CopyEngine> engine, plx_request_t* request) {
  constexpr const char* fn = "plx_iallreduce";
  device::DeviceArgs args =
      device::allreduce_args(send.data(), recv->data(), count, PLX_INT64, PLX_SUM);
  args.nonblocking = true;
  return device::stage_deferred(fn, rank, args, std::move(engine),
                                [&](const void* s, void* r) {
                                  return capi::submit_allreduce(s, r, count, PLX_INT64, PLX_SUM,
                                                                comm, request);
                                });
}

// Results of the non-blocking calls, and the copy back waiting for the request.
std::string results(plx_comm_t comm, int rank, int n) {
  Ledger ledger;
  constexpr size_t kCount = 1031;
  const auto send = ramp(rank, kCount);
  {
    std::vector<int64_t> recv(kCount, -1);
    plx_request_t request = nullptr;
    if (auto why = expect_success(
            iallreduce(comm, rank, send, &recv, kCount,
                       std::make_shared<HostCopyEngine>("plx_iallreduce", rank, &ledger),
                       &request),
            "staged plx_iallreduce");
        !why.empty()) {
      return why;
    }
    // The operation has run once a later blocking call returns; the result is still pinned.
    if (auto why = expect_success(plx_barrier(comm), "plx_barrier"); !why.empty()) return why;
    if (recv != std::vector<int64_t>(kCount, -1)) return "recvbuf written before plx_wait";
    if (ledger.released != 0) return "staging released before plx_wait";
    if (auto why = expect_success(plx_wait(request), "plx_wait"); !why.empty()) return why;
    if (auto why = compare(recv, ramp_sum(n, kCount), "iallreduce"); !why.empty()) return why;
    if (auto why = balanced(ledger, 1, "iallreduce"); !why.empty()) return why;
  }
  {  // count 0: one byte of staging, no copies
    std::vector<int64_t> recv(1, -1);
    plx_request_t request = nullptr;
    if (auto why = expect_success(
            iallreduce(comm, rank, send, &recv, 0,
                       std::make_shared<HostCopyEngine>("plx_iallreduce", rank, &ledger),
                       &request),
            "staged plx_iallreduce of 0");
        !why.empty()) {
      return why;
    }
    if (auto why = expect_success(plx_wait(request), "plx_wait (count 0)"); !why.empty()) {
      return why;
    }
    if (recv[0] != -1) return "count 0 wrote recvbuf";
    if (auto why = balanced(ledger, 2, "count 0"); !why.empty()) return why;
  }
  {  // allgather in place: sendbuf is this rank's block of recvbuf
    constexpr const char* fn = "plx_iallgather";
    const size_t c = 97;
    std::vector<int64_t> recv(c * n, -1);
    const auto mine = ramp(rank, c);
    std::copy(mine.begin(), mine.end(), recv.begin() + static_cast<ptrdiff_t>(c * rank));
    const int64_t* block = recv.data() + c * rank;
    device::DeviceArgs args = device::allgather_args(block, recv.data(), c, PLX_INT64, n);
    args.nonblocking = true;
    plx_request_t request = nullptr;
    if (auto why = expect_success(
            device::stage_deferred(fn, rank, args,
                                   std::make_shared<HostCopyEngine>(fn, rank, &ledger),
                                   [&](const void* s, void* r) {
                                     return capi::submit_allgather(s, r, c, PLX_INT64, comm,
                                                                   &request);
                                   }),
            "staged in-place plx_iallgather");
        !why.empty()) {
      return why;
    }
    if (auto why = expect_success(plx_wait(request), "plx_wait (allgather)"); !why.empty()) {
      return why;
    }
    std::vector<int64_t> want;
    for (int q = 0; q < n; ++q) {
      const auto v = ramp(q, c);
      want.insert(want.end(), v.begin(), v.end());
    }
    if (auto why = compare(recv, want, "in-place iallgather"); !why.empty()) return why;
  }
  {  // alltoallv: blocks of 3 at displacements 5j; the holes keep -7
    constexpr const char* fn = "plx_ialltoallv";
    std::vector<size_t> counts(n, 3), sdispls(n), rdispls(n);
    std::vector<int64_t> sendv(3 * n), recv(5 * (n - 1) + 3, -7);
    for (int j = 0; j < n; ++j) {
      sdispls[j] = 3 * j;
      rdispls[j] = 5 * j;
      for (int i = 0; i < 3; ++i) sendv[3 * j + i] = rank * 100 + j * 10 + i;
    }
    device::DeviceArgs args =
        device::alltoallv_args(sendv.data(), counts.data(), sdispls.data(), recv.data(),
                               counts.data(), rdispls.data(), PLX_INT64, n);
    args.nonblocking = true;
    plx_request_t request = nullptr;
    if (auto why = expect_success(
            device::stage_deferred(fn, rank, args,
                                   std::make_shared<HostCopyEngine>(fn, rank, &ledger),
                                   [&](const void* s, void* r) {
                                     return capi::submit_alltoallv(
                                         s, counts.data(), sdispls.data(), r, counts.data(),
                                         rdispls.data(), PLX_INT64, comm, &request);
                                   }),
            "staged plx_ialltoallv");
        !why.empty()) {
      return why;
    }
    if (auto why = expect_success(plx_wait(request), "plx_wait (alltoallv)"); !why.empty()) {
      return why;
    }
    std::vector<int64_t> want(recv.size(), -7);
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < 3; ++i) want[5 * j + i] = j * 100 + rank * 10 + i;
    }
    if (auto why = compare(recv, want, "ialltoallv"); !why.empty()) return why;
  }
  return balanced(ledger, 4, "all results");
}

// allreduce + broadcast + send/recv in one group, each staged on its own.
std::string grouped(plx_comm_t comm, int rank, int n) {
  Ledger ledger;
  constexpr size_t kCount = 509;
  const int peer = (rank + 1) % n;
  const int from = (rank + n - 1) % n;
  const auto send = ramp(rank, kCount);
  std::vector<int64_t> sum(kCount, -1), bcast(kCount, -1), got(kCount, -1);
  const auto root_data = rank == 0 ? ramp(0, kCount) : std::vector<int64_t>(kCount, -2);
  const auto engine = [&](const char* fn) {
    return std::make_shared<HostCopyEngine>(fn, rank, &ledger);
  };
  if (plx_group_start() != PLX_SUCCESS) return "plx_group_start: " + last_error_text();
  std::string queued = expect_success(
      device::stage_deferred(
          "plx_allreduce", rank,
          device::allreduce_args(send.data(), sum.data(), kCount, PLX_INT64, PLX_SUM),
          engine("plx_allreduce"),
          [&](const void* s, void* r) {
            return capi::submit_allreduce(s, r, kCount, PLX_INT64, PLX_SUM, comm, nullptr);
          }),
      "grouped allreduce");
  if (queued.empty()) {
    queued = expect_success(
        device::stage_deferred(
            "plx_broadcast", rank,
            device::broadcast_args(root_data.data(), bcast.data(), kCount, PLX_INT64, rank == 0),
            engine("plx_broadcast"),
            [&](const void* s, void* r) {
              return capi::submit_broadcast(s, r, kCount, PLX_INT64, 0, comm, nullptr);
            }),
        "grouped broadcast");
  }
  if (queued.empty()) {
    queued = expect_success(
        device::stage_deferred("plx_send", rank, device::send_args(send.data(), kCount, PLX_INT64),
                               engine("plx_send"),
                               [&](const void* s, void*) {
                                 return capi::submit_p2p(true, s, kCount, PLX_INT64, peer, comm,
                                                         nullptr);
                               }),
        "grouped send");
  }
  if (queued.empty()) {
    queued = expect_success(
        device::stage_deferred("plx_recv", rank, device::recv_args(got.data(), kCount, PLX_INT64),
                               engine("plx_recv"),
                               [&](const void*, void* r) {
                                 return capi::submit_p2p(false, r, kCount, PLX_INT64, from, comm,
                                                         nullptr);
                               }),
        "grouped recv");
  }
  const bool untouched = sum == std::vector<int64_t>(kCount, -1) &&
                         bcast == std::vector<int64_t>(kCount, -1) &&
                         got == std::vector<int64_t>(kCount, -1);
  const plx_result_t ended = plx_group_end();
  if (!queued.empty()) return queued;
  if (auto why = expect_success(ended, "plx_group_end"); !why.empty()) return why;
  if (!untouched) return "a grouped result was written before plx_group_end";
  for (auto why : {compare(sum, ramp_sum(n, kCount), "grouped allreduce"),
                   compare(bcast, ramp(0, kCount), "grouped broadcast"),
                   compare(got, ramp(from, kCount), "grouped recv"),
                   balanced(ledger, 4, "group")}) {
    if (!why.empty()) return why;
  }
  return "";
}

// Failures at each step; the communicator stays usable after those found before queueing.
std::string failures(plx_comm_t comm, int rank, int n) {
  Ledger ledger;
  constexpr size_t kCount = 64;
  const auto send = ramp(rank, kCount);
  const std::string r = "rank " + std::to_string(rank) + ": ";
  for (const char* step : {"allocate", "to_pinned"}) {
    std::vector<int64_t> recv(kCount, -1);
    plx_request_t request = nullptr;
    const plx_result_t rc = iallreduce(
        comm, rank, send, &recv, kCount,
        std::make_shared<HostCopyEngine>("plx_iallreduce", rank, &ledger, step), &request);
    const std::string message = plexus::last_error();
    const std::string want = std::string("plx_iallreduce: ") + r +
                             (std::string(step) == "allocate" ? "cudaMallocHost of "
                                                              : "copying sendbuf ");
    if (rc != PLX_ERROR_SYSTEM || message.rfind(want, 0) != 0 ||
        message.find("injected failure") == std::string::npos) {
      return std::string("failed ") + step + ": " + plx_get_error_string(rc) + " \"" + message +
             "\", expected \"" + want + "...\"";
    }
    if (request != nullptr) return std::string("failed ") + step + ": a request was made";
  }
  if (auto why = balanced(ledger, 1, "failures before queueing"); !why.empty()) return why;
  {  // the copy back fails: the request's result; nothing written; freed
    std::vector<int64_t> recv(kCount, -1);
    plx_request_t request = nullptr;
    if (auto why = expect_success(
            iallreduce(comm, rank, send, &recv, kCount,
                       std::make_shared<HostCopyEngine>("plx_iallreduce", rank, &ledger,
                                                        "from_pinned"),
                       &request),
            "plx_iallreduce with a failing copy back");
        !why.empty()) {
      return why;
    }
    const plx_result_t rc = plx_wait(request);
    const std::string message = last_error_text();
    const std::string want = "plx_wait: plx_iallreduce: " + r + "copying the result (" +
                             std::to_string(kCount * 8) + " bytes) from pinned staging to recvbuf ";
    if (rc != PLX_ERROR_SYSTEM || message.rfind(want, 0) != 0) {
      return "failed copy back: " + std::string(plx_get_error_string(rc)) + " \"" + message +
             "\", expected \"" + want + "...\"";
    }
    if (recv != std::vector<int64_t>(kCount, -1)) return "failed copy back wrote recvbuf";
    if (auto why = balanced(ledger, 2, "failed copy back"); !why.empty()) return why;
  }
  // Nothing was numbered by the refused calls: the next collective matches on every rank.
  std::vector<int64_t> recv(kCount, -1);
  if (auto why = expect_success(
          plx_allreduce(send.data(), recv.data(), kCount, PLX_INT64, PLX_SUM, comm, nullptr),
          "plx_allreduce after the failures");
      !why.empty()) {
    return why;
  }
  return compare(recv, ramp_sum(n, kCount), "plx_allreduce after the failures");
}

// A staged receive nobody sends, then an abort (want_result PLX_ERROR_ABORTED) or the wait for
// the timeout; what plx_wait returns (want_result, or also_ok) and whether the staging was
// released.
std::string unmatched_receive(plx_comm_t comm, int rank, plx_result_t want_result,
                              int want_released, OwnedComm* owned,
                              plx_result_t also_ok = PLX_ERROR_ABORTED) {
  Ledger ledger;
  std::vector<int64_t> got(32, -1);
  plx_request_t request = nullptr;
  if (auto why = expect_success(
          device::stage_deferred("plx_irecv", rank, device::recv_args(got.data(), 32, PLX_INT64),
                                 std::make_shared<HostCopyEngine>("plx_irecv", rank, &ledger),
                                 [&](const void*, void* r) {
                                   return capi::submit_p2p(false, r, 32, PLX_INT64, 1 - rank, comm,
                                                           &request);
                                 }),
          "staged plx_irecv");
      !why.empty()) {
    return why;
  }
  if (want_result == PLX_ERROR_ABORTED) {
    if (auto why = owned->abort("abort with a staged receive"); !why.empty()) return why;
  }
  const plx_result_t rc = plx_wait(request);
  if (rc != want_result && rc != also_ok) {
    return std::string("unmatched receive: plx_wait gave ") + plx_get_error_string(rc) +
           " \"" + last_error_text() + "\", expected " + plx_get_error_string(want_result);
  }
  if (got != std::vector<int64_t>(32, -1)) return "unmatched receive: recvbuf written";
  if (ledger.allocated != 1 || ledger.released != want_released) {
    return "unmatched receive: " + std::to_string(ledger.released.load()) +
           " released, expected " + std::to_string(want_released);
  }
  return "";
}

void run_world(const std::function<std::string(OwnedComm*, int)>& body, int timeout_ms = 30000) {
  const auto outcomes = run_ranks(2, [&](int rank) {
    OwnedComm comm;
    std::string why = open_world(2, &comm);
    if (why.empty()) why = body(&comm, rank);
    return rank_result(rank, why);
  }, 120.0, transport_env("tcp", timeout_ms));
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST(DeferredStaging, Layout) {
  int64_t buf[64];
  device::PinnedLayout l;
  // Disjoint: recvbuf from the next 256-byte boundary.
  ASSERT_TRUE(device::pinned_layout(
      device::allreduce_args(buf, buf + 32, 5, PLX_INT64, PLX_SUM), &l));
  EXPECT_EQ(l.send_bytes, 40u);
  EXPECT_EQ(l.recv_bytes, 40u);
  EXPECT_EQ(l.send_at, 0u);
  EXPECT_EQ(l.recv_at, 256u);
  EXPECT_EQ(l.total_bytes, 296u);
  // In place (allgather: sendbuf is block 1 of 4 of recvbuf): one range, same offsets.
  ASSERT_TRUE(device::pinned_layout(device::allgather_args(buf + 3, buf, 3, PLX_INT64, 4), &l));
  EXPECT_EQ(l.send_at, 24u);
  EXPECT_EQ(l.recv_at, 0u);
  EXPECT_EQ(l.total_bytes, 96u);
  // A buffer the rank does not use (broadcast's sendbuf off the root), count 0: at least 1 byte.
  ASSERT_TRUE(device::pinned_layout(
      device::broadcast_args(buf, buf + 8, 4, PLX_FLOAT32, false), &l));
  EXPECT_EQ(l.send_bytes, 0u);
  EXPECT_EQ(l.recv_bytes, 16u);
  EXPECT_EQ(l.recv_at, 0u);
  ASSERT_TRUE(device::pinned_layout(
      device::allreduce_args(buf, buf + 8, 0, PLX_FLOAT32, PLX_SUM), &l));
  EXPECT_EQ(l.total_bytes, 1u);
  // Bytes that overflow size_t.
  EXPECT_FALSE(device::pinned_layout(
      device::allreduce_args(buf, buf + 8, SIZE_MAX / 4, PLX_INT64, PLX_SUM), &l));
}

TEST(DeferredStaging, WhichFailuresMayStillWrite) {
  for (plx_result_t freed : {PLX_SUCCESS, PLX_ERROR_ABORTED, PLX_ERROR_MISMATCH,
                             PLX_ERROR_INVALID_ARGUMENT, PLX_ERROR_INVALID_USAGE}) {
    EXPECT_FALSE(device::may_still_be_written(freed)) << plx_get_error_string(freed);
  }
  for (plx_result_t leaked : {PLX_ERROR_TIMEOUT, PLX_ERROR_REMOTE, PLX_ERROR_TRANSPORT}) {
    EXPECT_TRUE(device::may_still_be_written(leaked)) << plx_get_error_string(leaked);
  }
}

TEST(DeferredStaging, Results) {
  run_world([](OwnedComm* comm, int rank) {
    std::string why = results(comm->get(), rank, 2);
    return why.empty() ? comm->destroy("results") : why;
  });
}

TEST(DeferredStaging, Group) {
  run_world([](OwnedComm* comm, int rank) {
    std::string why = grouped(comm->get(), rank, 2);
    return why.empty() ? comm->destroy("group") : why;
  });
}

TEST(DeferredStaging, Failures) {
  run_world([](OwnedComm* comm, int rank) {
    std::string why = failures(comm->get(), rank, 2);
    return why.empty() ? comm->destroy("failures") : why;
  });
}

TEST(DeferredStaging, AbortFreesTheStaging) {
  run_world([](OwnedComm* comm, int rank) {
    return unmatched_receive(comm->get(), rank, PLX_ERROR_ABORTED, 1, comm);
  });
}

TEST(DeferredStaging, TimeoutLeaksTheStaging) {
  run_world([](OwnedComm* comm, int rank) {
    // The rank that times out first aborts: the other may see it lost (PLX_ERROR_REMOTE)
    // before its own timeout; either way the transport may still write, so it leaks.
    std::string why =
        unmatched_receive(comm->get(), rank, PLX_ERROR_TIMEOUT, 0, comm, PLX_ERROR_REMOTE);
    return why.empty() ? comm->abort("after the timeout") : why;
  }, 3000);
}

}  // namespace
}  // namespace plexus::test
