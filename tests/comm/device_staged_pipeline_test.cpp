// device_staged_pipeline_test.cpp - the pipelined staged path (comm/device/staged_pipeline.h)
// on a GPU: allreduce, reduce, broadcast, send and recv on device buffers cut into chunks, each
// copied into a ring of pinned slots on the communicator's copy stream, run by the host
// collective and copied back on the caller's stream.
//
// Worlds of 2 and 4 ranks share one GPU, as fresh processes (this binary run again with
// PLX_STAGED_TEST_RANK set: a forked child of a CUDA process cannot use CUDA). PLEXUS_SHM=0
// keeps them off CUDA IPC, so every call is staged, and PLEXUS_CHUNK_BYTES=65536 makes a chunk
// 16384 int32 elements: the counts cross many chunks (1000003: 62 chunks, the last short), sit
// just above two chunks (3 chunks, the last of one element), or at exactly two (the whole-buffer
// path, for contrast). Inputs are written on the stream just before each call and results read
// on it after. Values depend on the index (not periodic), so a chunk copied to or from the wrong
// place, or a ring slot reused too early, shows. With PLEXUS_DEBUG=INFO, each rank's log must
// say that each of the five calls ran pipelined.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "plexus/plexus.h"
#include "tests/comm/collective_reference.h"
#include "tests/comm/device_rank.h"
#include "tests/comm/transport_cases.h"
#include "tests/support/gpu_available.h"
#include "tests/support/multiprocess.h"
#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

constexpr size_t kChunkBytes = 65536;
constexpr size_t kChunk32 = kChunkBytes / 4;  // int32 elements per chunk
constexpr size_t kBig = 1000003;              // a prime: 62 chunks of int32, the last short
// int32 counts: at two chunks (whole buffer), just above (3 chunks, the last of 1), 7.5 chunks
// and kBig.
const size_t kCounts[] = {2 * kChunk32, 2 * kChunk32 + 1, 7 * kChunk32 + kChunk32 / 2, kBig};

// Rank q's element i: exact in int32 summed over 4 ranks.
int32_t value(int q, size_t i) { return static_cast<int32_t>(q * 1000003 + static_cast<int>(i)); }

std::vector<unsigned char> int32s(size_t count, const std::function<int32_t(size_t)>& f) {
  std::vector<unsigned char> out(count * 4);
  for (size_t i = 0; i < count; ++i) {
    const int32_t v = f(i);
    std::memcpy(&out[i * 4], &v, 4);
  }
  return out;
}

class Rank : public DeviceRank {
 public:
  using DeviceRank::DeviceRank;

  // count int32 elements at dev against want(i); names the first wrong index.
  void check(const std::string& what, const void* dev, size_t count,
             const std::function<int32_t(size_t)>& want) {
    const auto got = get(dev, count * 4);
    for (size_t i = 0; i < count; ++i) {
      int32_t g;
      std::memcpy(&g, &got[i * 4], 4);
      if (g != want(i)) {
        fail(what + ": index " + std::to_string(i) + " (chunk " + std::to_string(i / kChunk32) +
             "): got " + std::to_string(g) + ", want " + std::to_string(want(i)));
        return;
      }
    }
  }
  void not_ipc(const std::string& what) {
    if (last_algorithm() == "allreduce:cuda_ipc") fail(what + ": ran as cuda_ipc");
  }

  void allreduce_cases();
  void reduce_cases();
  void broadcast_cases();
  void p2p_cases();
};

void Rank::allreduce_cases() {
  DeviceBytes send(kBig * 8), recv(kBig * 8);
  if (!send.ptr || !recv.ptr) {
    fail("cudaMalloc of the allreduce buffers");
    return;
  }
  const int32_t rank_sum = static_cast<int32_t>(1000003LL * n_ * (n_ - 1) / 2);
  for (size_t count : kCounts) {
    for (bool in_place : {false, true}) {
      const std::string what = "allreduce int32 sum count " + std::to_string(count) +
                               (in_place ? " in place" : "");
      void* out = in_place ? send.ptr : recv.ptr;
      put(send.ptr, int32s(count, [&](size_t i) { return value(r_, i); }));
      if (!in_place) poison(recv.ptr, count * 4);
      if (!ok(plx_allreduce(send.ptr, out, count, PLX_INT32, PLX_SUM, comm_, stream_), what)) {
        continue;
      }
      not_ipc(what);
      check(what, out, count,
            [&](size_t i) { return rank_sum + n_ * static_cast<int32_t>(i); });
    }
  }
  // 2-, 4- and 8-byte elements (other chunk sizes), with sum, avg and max.
  for (plx_datatype_t dt : {PLX_BFLOAT16, PLX_FLOAT32, PLX_FLOAT64}) {
    const size_t elem = plx_datatype_size(dt);
    for (plx_red_op_t op : {PLX_SUM, PLX_AVG, PLX_MAX}) {
      const std::string what = std::string("allreduce ") + datatype_name(dt) + " " +
                               op_name(op) + " count " + std::to_string(kBig);
      std::vector<unsigned char> input(kBig * elem);
      fill_periodic(input.data(), kBig, elem, input_pattern(op, dt, r_));
      put(send.ptr, input);
      poison(recv.ptr, kBig * elem);
      if (!ok(plx_allreduce(send.ptr, recv.ptr, kBig, dt, op, comm_, stream_), what)) continue;
      const auto got = get(recv.ptr, kBig * elem);
      const std::string why = check_periodic(got.data(), kBig, dt, expected_pattern(op, dt, n_));
      if (!why.empty()) fail(what + ": " + why);
    }
  }
}

void Rank::reduce_cases() {
  DeviceBytes send(kBig * 4), recv(kBig * 4);
  if (!send.ptr || !recv.ptr) {
    fail("cudaMalloc of the reduce buffers");
    return;
  }
  const int32_t rank_sum = static_cast<int32_t>(1000003LL * n_ * (n_ - 1) / 2);
  for (int root : {0, n_ - 1}) {
    for (size_t count : kCounts) {
      for (bool in_place : {false, true}) {
        const std::string what = "reduce to " + std::to_string(root) + " count " +
                                 std::to_string(count) + (in_place ? " in place" : "");
        void* out = in_place ? send.ptr : recv.ptr;
        put(send.ptr, int32s(count, [&](size_t i) { return value(r_, i); }));
        if (!in_place) poison(recv.ptr, count * 4);
        if (!ok(plx_reduce(send.ptr, out, count, PLX_INT32, PLX_SUM, root, comm_, stream_),
                what)) {
          continue;
        }
        if (r_ == root) {
          check(what, out, count,
                [&](size_t i) { return rank_sum + n_ * static_cast<int32_t>(i); });
        } else {
          // Off the root sendbuf is only read.
          check(what + " (sendbuf kept)", send.ptr, count, [&](size_t i) { return value(r_, i); });
        }
      }
    }
  }
}

void Rank::broadcast_cases() {
  DeviceBytes send(kBig * 4), recv(kBig * 4);
  if (!send.ptr || !recv.ptr) {
    fail("cudaMalloc of the broadcast buffers");
    return;
  }
  for (int root : {0, n_ - 1}) {
    for (size_t count : kCounts) {
      for (bool in_place : {false, true}) {
        const std::string what = "broadcast from " + std::to_string(root) + " count " +
                                 std::to_string(count) + (in_place ? " in place" : "");
        void* out = in_place ? send.ptr : recv.ptr;
        put(send.ptr, int32s(count, [&](size_t i) { return r_ == root ? value(root, i) : -1; }));
        if (!in_place) poison(recv.ptr, count * 4);
        if (!ok(plx_broadcast(send.ptr, out, count, PLX_INT32, root, comm_, stream_), what)) {
          continue;
        }
        check(what, out, count, [&](size_t i) { return value(root, i); });
      }
    }
  }
}

// Pairs (0,1), (2,3): the even rank sends first, then receives.
void Rank::p2p_cases() {
  const int peer = r_ ^ 1;
  if (peer >= n_) return;
  DeviceBytes send(kBig * 4), recv(kBig * 4);
  if (!send.ptr || !recv.ptr) {
    fail("cudaMalloc of the send/recv buffers");
    return;
  }
  for (size_t count : kCounts) {
    const std::string what = "send/recv count " + std::to_string(count);
    put(send.ptr, int32s(count, [&](size_t i) { return value(r_, i); }));
    poison(recv.ptr, count * 4);
    bool done = false;
    if (r_ % 2 == 0) {
      done = ok(plx_send(send.ptr, count, PLX_INT32, peer, comm_, stream_), what + ": send") &&
             ok(plx_recv(recv.ptr, count, PLX_INT32, peer, comm_, stream_), what + ": recv");
    } else {
      done = ok(plx_recv(recv.ptr, count, PLX_INT32, peer, comm_, stream_), what + ": recv") &&
             ok(plx_send(send.ptr, count, PLX_INT32, peer, comm_, stream_), what + ": send");
    }
    if (done) check(what, recv.ptr, count, [&](size_t i) { return value(peer, i); });
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
  const std::string why = init_world(n, "tcp", &comm);
  if (!why.empty()) return rank_failure(rank, why);
  Rank me(rank, n, comm, stream);
  me.allreduce_cases();
  me.reduce_cases();
  me.broadcast_cases();
  me.p2p_cases();
  const int code = finish_rank(rank, comm, me.failures());
  cudaStreamDestroy(stream);
  return code;
}

// ---- the test side --------------------------------------------------------------------------

// The INFO line run_pipelined (staged_collective.cpp) logs for a call of `count` int32s.
std::string pipelined_line(const char* fn, int rank, size_t count) {
  const size_t chunks = (count + kChunk32 - 1) / kChunk32;
  return std::string(fn) + ": rank " + std::to_string(rank) + ": " + std::to_string(count) +
         " elements staged in " + std::to_string(chunks) + " chunks";
}

// Runs n ranks of this binary, staged (PLEXUS_SHM=0) with 64 KiB chunks; with `log_info`, also
// checks each rank's log for the pipelined calls (and none at exactly two chunks).
void run_world(int n, bool log_info) {
  EnvList env = transport_env("tcp", 60000);
  env.push_back({"PLEXUS_CHUNK_BYTES", std::to_string(kChunkBytes)});
  env.push_back({"PLEXUS_SHM", "0"});
  if (log_info) env.push_back({"PLEXUS_DEBUG", "INFO"});
  const auto ranks = start_self_world(n, "PLX_STAGED_TEST_RANK=1", env);
  for (int r = 0; r < n; ++r) {
    const ProcessResult result = ranks[r]->wait(400.0);
    const bool passed = result.exited && result.exit_code == 0;
    // The log of a failed rank can be long: its first failures are at its end.
    const std::string tail =
        result.err.size() > 20000 ? result.err.substr(result.err.size() - 20000) : result.err;
    EXPECT_TRUE(passed) << "world of " << n << ", rank " << r << ": "
                        << (result.timed_out ? "timed out"
                                             : "exit code " + std::to_string(result.exit_code))
                        << "\n" << tail << result.out;
    if (!log_info || !passed) continue;
    const int peer = r ^ 1;
    std::vector<std::string> want = {pipelined_line("plx_allreduce", r, kBig),
                                     pipelined_line("plx_allreduce", r, 2 * kChunk32 + 1),
                                     pipelined_line("plx_reduce", r, kBig),
                                     pipelined_line("plx_broadcast", r, kBig)};
    if (peer < n) {
      want.push_back(pipelined_line("plx_send", r, kBig));
      want.push_back(pipelined_line("plx_recv", r, kBig));
    }
    for (const auto& line : want) {
      EXPECT_NE(result.err.find(line), std::string::npos)
          << "rank " << r << ": no \"" << line << "\" in its log";
    }
    const std::string two_chunks = std::string(": rank ") + std::to_string(r) + ": " +
                                   std::to_string(2 * kChunk32) + " elements staged in";
    EXPECT_EQ(result.err.find(two_chunks), std::string::npos)
        << "rank " << r << ": a call of exactly two chunks was pipelined";
  }
}

TEST(DeviceStagedPipeline, TwoRanksOneGpu) {
  PLX_REQUIRE_GPU();
  run_world(2, true);
}

TEST(DeviceStagedPipeline, FourRanksOneGpu) {
  PLX_REQUIRE_GPU();
  run_world(4, false);
}

}  // namespace
}  // namespace plexus::test

int main(int argc, char** argv) {
  if (std::getenv("PLX_STAGED_TEST_RANK") != nullptr) return plexus::test::rank_main();
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
