// device_hmem_test.cpp - plx_send / plx_recv of device buffers through libfabric FI_HMEM
// (comm/device/hmem_p2p.cpp) on real ranks sharing one GPU over the shm provider.
//
// The ranks are fresh processes (this binary run again with PLX_HMEM_TEST_CASE set): a forked
// child of a process that initialised CUDA cannot use CUDA. Both use device 0.
//
//   fi_hmem (PLEXUS_FI_HMEM=2: shm's FI_HMEM entry lacks the inject protocol, so the default, 1,
//     does not take it): rank 0 sends device buffers to rank 1 and back, of
//     1, 1000 and 1000003 int32 (with PLEXUS_CHUNK_BYTES=65536 the last goes as the staged
//     pipeline's 62 chunks, the same messages either way), inputs written on the stream just
//     before the call and results read on it after; the same buffer sent again (the
//     registration cache's hit), a buffer freed and allocated again, an offset inside an
//     allocation; then a device buffer received into host memory on the peer (1000 elements:
//     one message on both paths). Every result against its closed form. Each call on device
//     buffers must report plx_comm_last_algorithm "send:fi_hmem" / "recv:fi_hmem" - unless the
//     provider cannot take CUDA memory here (libfabric built without CUDA: no FI_HMEM on shm, or
//     the registration refused), when the calls must still deliver every byte, staged, and the
//     test is skipped afterwards saying why.
//   staged (PLEXUS_FI_HMEM=0): the same calls, every byte right, never fi_hmem.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/core/communicator.h"
#include "plexus/plexus.h"
#include "tests/comm/collective_reference.h"
#include "tests/comm/device_rank.h"
#include "tests/comm/transport_cases.h"
#include "tests/support/gpu_available.h"
#include "tests/support/multiprocess.h"
#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

constexpr size_t kBig = 1000003;  // a prime: a short last chunk
constexpr const char* kOffLine = "FI_HMEM OFF: ";

int32_t value(int from, size_t i, int round) {
  return static_cast<int32_t>(from * 1000003 + round * 7919 + static_cast<int>(i % 100003));
}

class Rank : public DeviceRank {
 public:
  Rank(int rank, plx_comm_t comm, cudaStream_t stream, bool want_hmem)
      : DeviceRank(rank, 2, comm, stream), want_hmem_(want_hmem) {}

  // Whether the FI_HMEM path can take CUDA memory on this communicator now.
  bool hmem_now() const { return comm_->transport->hmem_supported(comm::MemorySpace::Cuda); }

  // After a call on device buffers: the path it took must be the expected one.
  void check_path(const std::string& what, bool is_send) {
    const std::string algorithm = last_algorithm();
    const bool hmem = algorithm == (is_send ? "send:fi_hmem" : "recv:fi_hmem");
    if (!want_hmem_) {
      if (hmem) fail(what + ": ran over FI_HMEM with PLEXUS_FI_HMEM=0");
      return;
    }
    if (hmem) return;
    if (!hmem_now()) {
      // The provider cannot take CUDA memory here: staged, and said so once.
      if (off_reason_.empty()) {
        off_reason_ = std::string(comm_->transport->name()) +
                      (comm_->transport->hmem_supported(comm::MemorySpace::Host)
                           ? ": the CUDA registration was refused (libfabric without CUDA?)"
                           : ": the provider offers no FI_HMEM");
        std::printf("%s%s\n", kOffLine, off_reason_.c_str());
        std::fflush(stdout);
      }
      return;
    }
    fail(what + ": ran as \"" + algorithm + "\" although FI_HMEM takes CUDA memory");
  }

  // Sends (from_rank) or receives `count` int32 of round `round` at dev + offset elements.
  void transfer(int from_rank, void* dev, size_t count, int round, const std::string& what) {
    auto* base = static_cast<int32_t*>(dev);
    const int peer = 1 - r_;
    if (r_ == from_rank) {
      std::vector<int32_t> host(count);
      for (size_t i = 0; i < count; ++i) host[i] = value(r_, i, round);
      // Written on the stream WITHOUT waiting: the call must wait for it.
      if (!cuda(cudaMemcpyAsync(base, host.data(), count * 4, cudaMemcpyHostToDevice, stream_),
                what + ": cudaMemcpyAsync")) {
        return;
      }
      if (!ok(plx_send(base, count, PLX_INT32, peer, comm_, stream_), what + ": plx_send")) return;
      check_path(what + " (send)", true);
    } else {
      if (!cuda(cudaMemsetAsync(base, 0xee, count * 4, stream_), what + ": cudaMemsetAsync")) {
        return;
      }
      if (!ok(plx_recv(base, count, PLX_INT32, peer, comm_, stream_), what + ": plx_recv")) return;
      check_path(what + " (recv)", false);
      std::vector<int32_t> got(count);
      cuda(cudaMemcpyAsync(got.data(), base, count * 4, cudaMemcpyDeviceToHost, stream_),
           what + ": cudaMemcpyAsync back");
      cuda(cudaStreamSynchronize(stream_), what + ": cudaStreamSynchronize");
      for (size_t i = 0; i < count; ++i) {
        if (got[i] != value(peer, i, round)) {
          fail(what + ": index " + std::to_string(i) + ": got " + std::to_string(got[i]) +
               ", want " + std::to_string(value(peer, i, round)));
          return;
        }
      }
    }
  }

  void run() {
    void* a = nullptr;
    if (!cuda(cudaMalloc(&a, kBig * 4 + 4096), "cudaMalloc")) return;
    int round = 0;
    for (size_t count : {size_t{1}, size_t{1000}, kBig}) {
      for (int from : {0, 1}) {
        transfer(from, a, count, ++round,
                 std::to_string(count) + " int32 from rank " + std::to_string(from));
      }
    }
    // The same buffer again (a cached registration), and at an offset inside it.
    transfer(0, a, kBig, ++round, "the same buffer again");
    transfer(1, static_cast<char*>(a) + 4096, 1000, ++round, "at 4096 bytes into the buffer");
    // Freed and allocated again (a new allocation id, maybe at the same address).
    cuda(cudaFree(a), "cudaFree");
    a = nullptr;
    if (!cuda(cudaMalloc(&a, kBig * 4), "cudaMalloc again")) return;
    transfer(0, a, kBig, ++round, "a reallocated buffer");
    // Device on rank 0, host memory on rank 1: one message of 1000 elements on both paths.
    ++round;
    if (r_ == 0) {
      transfer(0, a, 1000, round, "device to host");
    } else {
      std::vector<int32_t> host(1000, -1);
      if (ok(plx_recv(host.data(), 1000, PLX_INT32, 0, comm_, nullptr), "device to host: recv")) {
        for (size_t i = 0; i < host.size(); ++i) {
          if (host[i] != value(0, i, round)) {
            fail("device to host: index " + std::to_string(i));
            break;
          }
        }
      }
    }
    cuda(cudaFree(a), "cudaFree");
  }

 private:
  bool want_hmem_;
  std::string off_reason_;
};

int rank_main(bool want_hmem) {
  const int rank = std::atoi(std::getenv("PLEXUS_RANK"));
  cudaStream_t stream = nullptr;
  if (const std::string failed = start_device_rank(&stream); !failed.empty()) {
    return rank_failure(rank, failed);
  }
  plx_comm_t comm = nullptr;
  const std::string why = init_world(2, "shm", &comm);
  if (!why.empty()) return rank_failure(rank, why);
  Rank me(rank, comm, stream, want_hmem);
  me.run();
  const int code = finish_rank(rank, comm, me.failures());
  cudaStreamDestroy(stream);
  return code;
}

// Runs this binary as the 2 ranks of `which`; returns what rank 0 printed after kOffLine ("" if
// FI_HMEM carried every call).
std::string run_world(const std::string& which, const EnvList& extra) {
  EnvList env = transport_env("shm", 60000);
  env.push_back({"PLEXUS_CHUNK_BYTES", "65536"});
  env.insert(env.end(), extra.begin(), extra.end());
  const auto ranks = start_self_world(2, "PLX_HMEM_TEST_CASE=" + which, env);
  std::string off;
  for (int r = 0; r < 2; ++r) {
    const ProcessResult result = ranks[r]->wait(240.0);
    EXPECT_TRUE(result.exited && result.exit_code == 0)
        << which << ", rank " << r << ": "
        << (result.timed_out ? "timed out" : "exit code " + std::to_string(result.exit_code))
        << "\n" << result.err << result.out;
    for (const std::string& line : split_lines(result.out)) {
      if (line.rfind(kOffLine, 0) == 0 && off.empty()) off = line.substr(std::strlen(kOffLine));
    }
  }
  return off;
}

TEST(DeviceHmem, SendRecvOfDeviceBuffersOverFiHmem) {
  PLX_REQUIRE_GPU();
  if (!transport_available("shm")) GTEST_SKIP() << "shm provider does not work here";
  const std::string off = run_world("fi_hmem", {{"PLEXUS_FI_HMEM", "2"}});
  if (!off.empty() && !HasFailure()) {
    GTEST_SKIP() << "every byte arrived, but staged: FI_HMEM cannot take CUDA memory here (" << off
                 << ")";
  }
}

TEST(DeviceHmem, PlexusFiHmemZeroStages) {
  PLX_REQUIRE_GPU();
  if (!transport_available("shm")) GTEST_SKIP() << "shm provider does not work here";
  run_world("staged", {{"PLEXUS_FI_HMEM", "0"}});
}

}  // namespace
}  // namespace plexus::test

int main(int argc, char** argv) {
  if (const char* which = std::getenv("PLX_HMEM_TEST_CASE")) {
    return plexus::test::rank_main(std::string(which) == "fi_hmem");
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
