// Ranks started the way other launchers start them: each process gets only that launcher's
// environment variables (torchrun, Open MPI, MPICH/Hydra, Slurm), and they must still find each
// other and run collectives (plexus-bench checks the results: #wrong must be 0).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/multiprocess.h"
#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

using ::testing::HasSubstr;

struct Family {
  std::string name;
  // Variables for rank r of n (a port placeholder {port} is filled in).
  std::vector<std::string> (*env)(int r, int n, const std::string& port);
  friend void PrintTo(const Family& f, std::ostream* os) { *os << f.name; }
};

std::vector<std::string> torchrun(int r, int n, const std::string& port) {
  return {"RANK=" + std::to_string(r), "WORLD_SIZE=" + std::to_string(n),
          "LOCAL_RANK=" + std::to_string(r), "LOCAL_WORLD_SIZE=" + std::to_string(n),
          "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port};
}
std::vector<std::string> open_mpi(int r, int n, const std::string& port) {
  return {"OMPI_COMM_WORLD_RANK=" + std::to_string(r), "OMPI_COMM_WORLD_SIZE=" + std::to_string(n),
          "OMPI_COMM_WORLD_LOCAL_RANK=" + std::to_string(r), "PLEXUS_MASTER_ADDR=127.0.0.1",
          "PLEXUS_MASTER_PORT=" + port};
}
std::vector<std::string> mpich(int r, int n, const std::string& port) {
  return {"PMI_RANK=" + std::to_string(r), "PMI_SIZE=" + std::to_string(n),
          "MPI_LOCALRANKID=" + std::to_string(r), "MASTER_ADDR=127.0.0.1",
          "MASTER_PORT=" + port};
}
std::vector<std::string> slurm(int r, int n, const std::string& port) {
  return {"SLURM_PROCID=" + std::to_string(r), "SLURM_NTASKS=" + std::to_string(n),
          "SLURM_LOCALID=" + std::to_string(r), "PLEXUS_MASTER_ADDR=127.0.0.1",
          "PLEXUS_MASTER_PORT=" + port};
}

class LauncherEnv : public ::testing::TestWithParam<Family> {};

TEST_P(LauncherEnv, RanksFindEachOtherAndReduceCorrectly) {
  const int n = 3;
  const std::string port = std::to_string(free_tcp_port());
  std::vector<std::unique_ptr<Subprocess>> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.push_back(std::make_unique<Subprocess>(
        std::vector<std::string>{PLEXUS_BENCH_PATH, "allreduce", "-b", "8", "-e", "4K", "-f", "8",
                                 "-n", "2", "-w", "1"},
        GetParam().env(r, n, port)));
  }
  for (int r = 0; r < n; ++r) {
    ProcessResult res = ranks[r]->wait(120);
    EXPECT_FALSE(res.timed_out) << "rank " << r << ": " << (res.out + res.err);
    EXPECT_EQ(res.exit_code, 0) << "rank " << r << ": " << (res.out + res.err);
    if (r == 0) {
      EXPECT_THAT((res.out + res.err), HasSubstr("Rank  2 Group  0"));
      EXPECT_THAT((res.out + res.err), HasSubstr("# Out of bounds values : 0 OK"));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, LauncherEnv,
                         ::testing::Values(Family{"torchrun", torchrun},
                                           Family{"OpenMPI", open_mpi}, Family{"MPICH", mpich},
                                           Family{"Slurm", slurm}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace plexus::test
