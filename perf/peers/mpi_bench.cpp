// mpi_bench.cpp - the peer benchmark for MPI (Open MPI and MPICH, the same source built twice by
// perf/peers/build.sh). The collectives are the library's own: MPI_Allreduce, MPI_Bcast,
// MPI_Reduce, MPI_Allgather, MPI_Reduce_scatter_block, MPI_Alltoall, MPI_Gather, MPI_Scatter, on
// MPI_COMM_WORLD, float32 with MPI_SUM; each library picks its algorithms and transport itself
// (Open MPI: the tuned collectives over vader shared memory; MPICH: ch4 over shared memory).
//
//   mpirun.openmpi -np 4 --oversubscribe perf/peers/bin/mpi_bench_openmpi allreduce -b 1K -e 64M
//   mpiexec.mpich -n 4 perf/peers/bin/mpi_bench_mpich allreduce -b 1K -e 64M
#include <mpi.h>

#include <cstdio>
#include <string>

#include "perf/peers/peer_harness.h"

namespace {

using plexus::peers::Coll;

class MpiBackend final : public plexus::peers::PeerBackend {
 public:
  MpiBackend() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks_);
  }

  std::string description() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(version, &length);
    // The first line names the library; MPICH says its device (transport) on another.
    std::string text(version, static_cast<size_t>(length));
    std::string out = text.substr(0, text.find_first_of("\r\n"));
    if (size_t device = text.find("MPICH Device:"); device != std::string::npos) {
      out += ", " + text.substr(device, text.find_first_of("\r\n", device) - device);
    }
    for (char& ch : out) {
      if (ch == '\t') ch = ' ';
    }
    return "peer " + out;
  }
  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  bool supports(Coll) const override { return true; }
  void barrier() override { MPI_Barrier(MPI_COMM_WORLD); }

  double max_over_ranks(double value) override {
    MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return value;
  }

  int64_t sum_over_ranks(int64_t value) override {
    MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    return value;
  }

  void run(Coll coll, const float* send, float* recv, size_t count, int root) override {
    const int c = static_cast<int>(count);  // MPI counts are int; -e stays far below 2^31 floats
    switch (coll) {
      case Coll::kAllreduce:
        MPI_Allreduce(send, recv, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
      case Coll::kBroadcast: MPI_Bcast(recv, c, MPI_FLOAT, root, MPI_COMM_WORLD); break;
      case Coll::kReduce:
        MPI_Reduce(send, recv, c, MPI_FLOAT, MPI_SUM, root, MPI_COMM_WORLD);
        break;
      case Coll::kAllgather:
        MPI_Allgather(send, c, MPI_FLOAT, recv, c, MPI_FLOAT, MPI_COMM_WORLD);
        break;
      case Coll::kReduceScatter:
        MPI_Reduce_scatter_block(send, recv, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
      case Coll::kAlltoall:
        MPI_Alltoall(send, c, MPI_FLOAT, recv, c, MPI_FLOAT, MPI_COMM_WORLD);
        break;
      case Coll::kGather:
        MPI_Gather(send, c, MPI_FLOAT, recv, c, MPI_FLOAT, root, MPI_COMM_WORLD);
        break;
      case Coll::kScatter:
        MPI_Scatter(send, c, MPI_FLOAT, recv, c, MPI_FLOAT, root, MPI_COMM_WORLD);
        break;
    }
  }

 private:
  int rank_ = 0;
  int nranks_ = 1;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  plexus::peers::PeerOptions options;
  int code = plexus::peers::parse_peer_options(argc, argv, "mpi_bench", &options);
  if (code < 0) {
    MpiBackend backend;
    code = plexus::peers::run_peer_benchmark(backend, options);
  }
  MPI_Finalize();
  return code;
}
