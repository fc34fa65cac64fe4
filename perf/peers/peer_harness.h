// peer_harness.h - what the peer benchmarks (Gloo, Open MPI, MPICH) share: the command line, each
// collective's buffers, inputs and expected values, the timed loop, the check and the table.
//
//   <peer> COLLECTIVE [-b 1K] [-e 64M] [-f 2] [-n 20] [-w 5] [-c 1] [-r 0]
//
// Everything follows plexus-bench (perf/README.md) and so nccl-tests: float32, sum where the
// collective reduces, out of place; size = the larger of the send and receive buffers in bytes,
// count = nccl-tests' count column (per rank for allgather, reduce_scatter, alltoall, gather and
// scatter), time = mean over -n back-to-back iterations after -w warmups and a barrier, maximum
// over ranks; algbw = size / time; busbw = algbw * the same factor plexus-bench uses; #wrong =
// elements differing from the closed-form expected value, summed over ranks. Rank 0 prints
//
//   #       size         count      type   redop    root     time   algbw   busbw  #wrong
//        1048576        262144     float     sum      -1   812.40    1.29    1.94       0
//
// whose nine columns are the first nine of plexus-bench's rows, so one parser reads both
// (perf/compare.sh). Broadcast runs in place on the receive buffer (MPI_Bcast has one buffer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace plexus::peers {

enum class Coll { kAllreduce, kBroadcast, kReduce, kAllgather, kReduceScatter, kAlltoall,
                  kGather, kScatter };

// One library under test, already connected.
class PeerBackend {
 public:
  virtual ~PeerBackend() = default;
  virtual std::string description() const = 0;  // the library, its version and transport
  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  virtual bool supports(Coll coll) const = 0;
  virtual void barrier() = 0;
  virtual double max_over_ranks(double value) = 0;
  virtual int64_t sum_over_ranks(int64_t value) = 0;
  // One float32 collective (sum where it reduces); `count` is the count column: elements per
  // rank for allgather, reduce_scatter, alltoall (per peer), gather and scatter, else the total.
  // Buffers are as sized by the harness: the full send and receive buffers on every rank.
  virtual void run(Coll coll, const float* send, float* recv, size_t count, int root) = 0;
};

struct PeerOptions {
  Coll coll = Coll::kAllreduce;
  std::string coll_name = "allreduce";
  size_t min_bytes = 1024;
  size_t max_bytes = 64u << 20;
  size_t step_factor = 2;
  int iters = 20;
  int warmup_iters = 5;
  bool check = true;
  int root = 0;
  std::string store_dir;  // -s: Gloo's FileStore directory (ignored by the MPI peers)
};

// Parses argv. Returns -1 to go on, else the exit code to return now (0 for --help, 2 for a usage
// error, whose message went to stderr naming `program`).
int parse_peer_options(int argc, char** argv, const char* program, PeerOptions* options);

// Runs every size on `backend`, rank 0 printing the table. Returns the exit code: 0 when every
// element is right, 1 when any is wrong, 2 when the collective or root is not supported.
int run_peer_benchmark(PeerBackend& backend, const PeerOptions& options);

}  // namespace plexus::peers
