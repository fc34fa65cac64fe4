// device_async_test.cpp - device buffers in the non-blocking forms and inside groups (issue 6,
// comm/device/device_deferred.h), on real 2-rank worlds sharing one GPU.
//
// The ranks are fresh processes (this binary run again with PLX_DEVICE_ASYNC_CASE set): a
// forked child of a process that initialised CUDA cannot use CUDA. Every rank uses device 0.
// Inputs are written on a stream of the rank's own (cudaStreamNonBlocking) just before each
// call without waiting: the non-blocking forms must wait for the device, a grouped call for its
// stream. Every result is checked against its closed form:
//   - plx_iallreduce (counts 0, 1 and 1000003, and in place) and plx_iallgather (out of place and
//     in place) on device buffers, then plx_wait; the result reaches recvbuf when the request
//     completes, not before (a blocking barrier after the call leaves recvbuf as it was);
//   - three requests in flight at once (two allreduces and an allgather) and plx_waitall, then
//     one completed by plx_wait on another thread, one by plx_test;
//   - a group of plx_allreduce + plx_broadcast + plx_send/plx_recv on device buffers with a
//     stream, and a plx_iallreduce inside a group, plx_wait after plx_group_end;
//   - host and device buffers mixed in a non-blocking call is still refused, and the
//     communicator stays usable.
// Worlds: default (peer memory, so the blocking calls of the same communicator use CUDA IPC) and
// PLEXUS_SHM=0.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "plexus/plexus.h"
#include "tests/comm/device_rank.h"
#include "tests/comm/transport_cases.h"
#include "tests/support/gpu_available.h"
#include "tests/support/multiprocess.h"
#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

constexpr size_t kBig = 1000003;  // a prime

// Rank q's element i: exact in int32 for every sum below.
int32_t value(int q, size_t i) { return static_cast<int32_t>(q * 1000003 + i % 100003); }

int32_t sum_value(int n, size_t i) {
  int32_t s = 0;
  for (int q = 0; q < n; ++q) s += value(q, i);
  return s;
}

std::vector<int32_t> values(int q, size_t count) {
  std::vector<int32_t> out(count);
  for (size_t i = 0; i < count; ++i) out[i] = value(q, i);
  return out;
}

// put, poison and get in int32 elements, and get waits for the whole device: the non-blocking
// calls under test copy back on the legacy stream, not the rank's.
class Rank : public DeviceRank {
 public:
  using DeviceRank::DeviceRank;

  // Writes values on the rank's stream WITHOUT waiting: the call must.
  bool put(int32_t* dst, const std::vector<int32_t>& src) {
    staged_.push_back(src);  // the source must outlive the asynchronous copy
    return src.empty() ||
           cuda(cudaMemcpyAsync(dst, staged_.back().data(), src.size() * 4,
                                cudaMemcpyHostToDevice, stream_),
                "cudaMemcpyAsync to the device");
  }
  bool poison(int32_t* dst, size_t count) {
    return count == 0 || cuda(cudaMemsetAsync(dst, 0xee, count * 4, stream_), "cudaMemsetAsync");
  }
  // Reads device values back after everything queued on the device (synchronous).
  std::vector<int32_t> get(const int32_t* src, size_t count) {
    std::vector<int32_t> out(count);
    cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    if (count > 0) {
      cuda(cudaMemcpy(out.data(), src, count * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
    }
    return out;
  }
  // "" when count device values equal want(i).
  void check(const std::string& what, const int32_t* dev, size_t count,
             const std::function<int32_t(size_t)>& want) {
    const auto got = get(dev, count);
    for (size_t i = 0; i < count; ++i) {
      if (got[i] != want(i)) {
        fail(what + ": index " + std::to_string(i) + " is " + std::to_string(got[i]) +
             ", expected " + std::to_string(want(i)));
        return;
      }
    }
  }

  void nonblocking_cases();
  void in_flight();
  void groups();
  void errors();

 private:
  std::vector<std::vector<int32_t>> staged_;
};

void Rank::nonblocking_cases() {
  DeviceBytes send(kBig * 4), recv(kBig * 4 * static_cast<size_t>(n_));
  if (!send.ptr || !recv.ptr) {
    fail("cudaMalloc");
    return;
  }
  const auto sum = [&](size_t i) { return sum_value(n_, i); };
  for (size_t count : {size_t{0}, size_t{1}, kBig}) {
    const std::string what = "iallreduce count " + std::to_string(count);
    if (!put(send.int32_at(), values(r_, count)) || !poison(recv.int32_at(), count)) return;
    plx_request_t request = nullptr;
    if (!ok(plx_iallreduce(send.ptr, recv.ptr, count, PLX_INT32, PLX_SUM, comm_, &request),
            what)) {
      continue;
    }
    if (count == kBig) {
      // The operation has run once a blocking call after it returns; recvbuf is still poison.
      ok(plx_barrier(comm_), "plx_barrier");
      const int32_t poisoned = static_cast<int32_t>(0xeeeeeeeeu);
      check(what + " before plx_wait", recv.int32_at(), count, [&](size_t) { return poisoned; });
    }
    if (ok(plx_wait(request), what + ": plx_wait")) check(what, recv.int32_at(), count, sum);
  }
  // In place.
  if (put(send.int32_at(), values(r_, kBig))) {
    plx_request_t request = nullptr;
    if (ok(plx_iallreduce(send.ptr, send.ptr, kBig, PLX_INT32, PLX_SUM, comm_, &request),
           "iallreduce in place") &&
        ok(plx_wait(request), "iallreduce in place: plx_wait")) {
      check("iallreduce in place", send.int32_at(), kBig, sum);
    }
  }
  // Allgather, then in place (sendbuf = block r of recvbuf).
  const size_t c = 100003;
  const auto gathered = [&](size_t i) { return value(static_cast<int>(i / c), i % c); };
  if (put(send.int32_at(), values(r_, c)) && poison(recv.int32_at(), c * n_)) {
    plx_request_t request = nullptr;
    if (ok(plx_iallgather(send.ptr, recv.ptr, c, PLX_INT32, comm_, &request), "iallgather") &&
        ok(plx_wait(request), "iallgather: plx_wait")) {
      check("iallgather", recv.int32_at(), c * n_, gathered);
    }
  }
  if (poison(recv.int32_at(), c * n_) && put(recv.int32_at(c * r_), values(r_, c))) {
    plx_request_t request = nullptr;
    if (ok(plx_iallgather(recv.int32_at(c * r_), recv.ptr, c, PLX_INT32, comm_, &request),
           "iallgather in place") &&
        ok(plx_wait(request), "iallgather in place: plx_wait")) {
      check("iallgather in place", recv.int32_at(), c * n_, gathered);
    }
  }
}

// Several requests at once, each staged on its own; completed by plx_waitall, by plx_wait on
// another thread and by plx_test.
void Rank::in_flight() {
  const size_t c = 65537;
  DeviceBytes a_in(c * 4), a_out(c * 4), b_in(c * 4), b_out(c * 4 * n_), d_io(c * 4);
  if (!a_in.ptr || !a_out.ptr || !b_in.ptr || !b_out.ptr || !d_io.ptr) {
    fail("cudaMalloc");
    return;
  }
  const auto sum = [&](size_t i) { return sum_value(n_, i); };
  if (!put(a_in.int32_at(), values(r_, c)) || !put(b_in.int32_at(), values(r_, c)) ||
      !put(d_io.int32_at(), values(r_, c)) || !poison(a_out.int32_at(), c) ||
      !poison(b_out.int32_at(), c * n_)) {
    return;
  }
  plx_request_t reqs[3] = {nullptr, nullptr, nullptr};
  if (!ok(plx_iallreduce(a_in.ptr, a_out.ptr, c, PLX_INT32, PLX_SUM, comm_, &reqs[0]), "A") ||
      !ok(plx_iallgather(b_in.ptr, b_out.ptr, c, PLX_INT32, comm_, &reqs[1]), "B") ||
      !ok(plx_iallreduce(d_io.ptr, d_io.ptr, c, PLX_INT32, PLX_SUM, comm_, &reqs[2]), "C")) {
    for (plx_request_t r : reqs) {
      if (r) plx_wait(r);
    }
    return;
  }
  if (ok(plx_waitall(3, reqs), "plx_waitall")) {
    check("in flight A", a_out.int32_at(), c, sum);
    check("in flight B", b_out.int32_at(), c * n_,
          [&](size_t i) { return value(static_cast<int>(i / c), i % c); });
    check("in flight C", d_io.int32_at(), c, sum);
  }
  // plx_wait on a thread that never touched CUDA; then plx_test polled (bounded).
  if (!put(a_in.int32_at(), values(r_, c)) || !poison(a_out.int32_at(), c)) return;
  plx_request_t request = nullptr;
  if (ok(plx_iallreduce(a_in.ptr, a_out.ptr, c, PLX_INT32, PLX_SUM, comm_, &request), "D")) {
    plx_result_t rc = PLX_IN_PROGRESS;
    std::string message;
    std::thread waiter([&] {
      rc = plx_wait(request);
      message = plx_get_last_error(nullptr);
    });
    waiter.join();
    if (rc != PLX_SUCCESS) {
      fail("plx_wait on another thread: " + std::string(plx_get_error_string(rc)) + " " + message);
    } else {
      check("completed on another thread", a_out.int32_at(), c, sum);
    }
  }
  if (!put(a_in.int32_at(), values(r_, c)) || !poison(a_out.int32_at(), c)) return;
  if (ok(plx_iallreduce(a_in.ptr, a_out.ptr, c, PLX_INT32, PLX_SUM, comm_, &request), "E")) {
    int done = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!done && std::chrono::steady_clock::now() < deadline) {
      if (!ok(plx_test(request, &done), "plx_test")) return;
      if (!done) usleep(1000);
    }
    if (!done) {
      fail("plx_test: not done after 60 s");
      return;
    }
    check("completed by plx_test", a_out.int32_at(), c, sum);
  }
}

void Rank::groups() {
  const size_t c = 100003;
  DeviceBytes in(c * 4), sum(c * 4), bcast(c * 4), sent(c * 4), got(c * 4);
  if (!in.ptr || !sum.ptr || !bcast.ptr || !sent.ptr || !got.ptr) {
    fail("cudaMalloc");
    return;
  }
  const int root = n_ - 1;
  const int peer = r_ ^ 1;
  const auto values_of = [&](int q) { return [q](size_t i) { return value(q, i); }; };
  if (!put(in.int32_at(), values(r_, c)) || !poison(sum.int32_at(), c) ||
      !poison(got.int32_at(), c) ||
      !put(bcast.int32_at(), r_ == root ? values(root, c) : std::vector<int32_t>(c, -3)) ||
      !put(sent.int32_at(), values(r_ + 10, c))) {
    return;
  }
  // Blocking calls with the stream; every input written on it just before, not waited for.
  ok(plx_group_start(), "plx_group_start");
  ok(plx_allreduce(in.ptr, sum.ptr, c, PLX_INT32, PLX_SUM, comm_, stream_), "group allreduce");
  ok(plx_broadcast(bcast.ptr, bcast.ptr, c, PLX_INT32, root, comm_, stream_), "group broadcast");
  if (peer < n_) {
    ok(plx_send(sent.ptr, c, PLX_INT32, peer, comm_, stream_), "group send");
    ok(plx_recv(got.ptr, c, PLX_INT32, peer, comm_, stream_), "group recv");
  }
  if (ok(plx_group_end(), "plx_group_end")) {
    check("group allreduce", sum.int32_at(), c, [&](size_t i) { return sum_value(n_, i); });
    check("group broadcast", bcast.int32_at(), c, values_of(root));
    if (peer < n_) check("group send/recv", got.int32_at(), c, values_of(peer + 10));
  }
  // A non-blocking call inside a group: finished (and copied back) by plx_group_end.
  if (!put(in.int32_at(), values(r_, c)) || !poison(sum.int32_at(), c)) return;
  plx_request_t request = nullptr;
  ok(plx_group_start(), "plx_group_start");
  const bool posted =
      ok(plx_iallreduce(in.ptr, sum.ptr, c, PLX_INT32, PLX_SUM, comm_, &request),
         "iallreduce in a group");
  if (ok(plx_group_end(), "plx_group_end (iallreduce)") && posted) {
    check("iallreduce in a group", sum.int32_at(), c, [&](size_t i) { return sum_value(n_, i); });
  }
  if (posted) ok(plx_wait(request), "plx_wait after plx_group_end");
}

void Rank::errors() {
  DeviceBytes dev(64);
  std::vector<int32_t> host(16, 1);
  plx_request_t request = nullptr;
  const plx_result_t rc =
      plx_iallreduce(host.data(), dev.ptr, 5, PLX_INT32, PLX_SUM, comm_, &request);
  const std::string message = plx_get_last_error(nullptr);
  const std::string prefix = "plx_iallreduce: rank " + std::to_string(r_) + ": sendbuf ";
  if (rc != PLX_ERROR_INVALID_ARGUMENT || message.rfind(prefix, 0) != 0 ||
      message.find("is host memory but recvbuf") == std::string::npos) {
    fail("mixed kinds: " + std::string(plx_get_error_string(rc)) + " \"" + message + "\"");
  }
  if (request != nullptr) fail("a refused plx_iallreduce wrote its request");
  // Still usable.
  if (put(dev.int32_at(), values(r_, 16))) {
    if (ok(plx_iallreduce(dev.ptr, dev.ptr, 16, PLX_INT32, PLX_SUM, comm_, &request),
           "iallreduce after the error") &&
        ok(plx_wait(request), "plx_wait after the error")) {
      check("iallreduce after the error", dev.int32_at(), 16,
            [&](size_t i) { return sum_value(n_, i); });
    }
  }
}

int rank_main() {
  const int rank = std::atoi(std::getenv("PLEXUS_RANK"));
  const int n = std::atoi(std::getenv("PLEXUS_WORLD_SIZE"));
  cudaStream_t stream = nullptr;
  if (const std::string failed = start_device_rank(&stream); !failed.empty()) {
    return rank_failure(rank, failed);
  }
  plx_comm_t comm = nullptr;
  if (plx_comm_init_from_env(&comm) != PLX_SUCCESS) {
    return rank_failure(rank, std::string("plx_comm_init_from_env: ") +
                                  plx_get_last_error(nullptr));
  }
  int failures = 0;
  {
    Rank me(rank, n, comm, stream);
    me.nonblocking_cases();
    me.in_flight();
    me.groups();
    me.errors();
    failures = me.failures();
  }
  const plx_result_t destroyed = plx_comm_destroy(comm);
  cudaStreamDestroy(stream);
  if (destroyed != PLX_SUCCESS) return rank_failure(rank, "plx_comm_destroy");
  return failures == 0 ? 0 : 1;
}

// ---- the test side --------------------------------------------------------------------------

void run_world(int n, const EnvList& extra) {
  EnvList env = transport_env("tcp", 60000);
  env.push_back({"PLEXUS_CHUNK_BYTES", "65536"});
  env.insert(env.end(), extra.begin(), extra.end());
  const auto ranks = start_self_world(n, "PLX_DEVICE_ASYNC_CASE=1", env);
  for (int r = 0; r < n; ++r) {
    const ProcessResult result = ranks[r]->wait(240.0);
    EXPECT_TRUE(result.exited && result.exit_code == 0)
        << "world of " << n << ", rank " << r << ": "
        << (result.timed_out ? "timed out" : "exit code " + std::to_string(result.exit_code))
        << "\n" << result.err << result.out;
  }
}

TEST(DeviceAsync, TwoRanksOneGpu) {
  PLX_REQUIRE_GPU();
  run_world(2, {});
}

TEST(DeviceAsync, TwoRanksOneGpuWithoutPeerMemory) {
  PLX_REQUIRE_GPU();
  run_world(2, {{"PLEXUS_SHM", "0"}});
}

}  // namespace
}  // namespace plexus::test

int main(int argc, char** argv) {
  if (std::getenv("PLX_DEVICE_ASYNC_CASE") != nullptr) return plexus::test::rank_main();
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
