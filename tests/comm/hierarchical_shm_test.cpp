// hierarchical_shm_test.cpp - the hierarchical collectives' intra-host phases through each
// host's peer-memory segment, on real forked ranks: the real rendezvous, libfabric's tcp provider
// on loopback, and a PLEXUS_HOST_ID per rank, so the communicator spans emulated hosts and opens
// one segment per host with several ranks (comm/core/communicator_peers.cpp).
//
//   Worlds 2x2, interleaved uneven 3 + 2 (A A B A B) and 2 + 1 (a host of one rank, which maps
//   nothing): each rank must have its host's segment mapped exactly when its host has several
//   ranks; then the hierarchical allreduce, reduce_scatter and allgather, forced, every op, the
//   datatypes in turn, in place and out, counts 1, 1009 and 65537 with 4 KiB slots (many rounds
//   and pipeline segments), against the closed forms of collective_reference.h, bit for bit.
//   No /dev/shm name of any rank may be left afterwards.
//   PLEXUS_SHM=0 on every rank, or on one rank of one host only: no rank maps a segment (the
//   communicator agrees), and the same calls give the same results over the rings.
//   A dead peer: one rank of a host leaves between two calls; its host peer's next allreduce
//   fails with PLX_ERROR_REMOTE (or PLX_ERROR_TIMEOUT) naming the operation, itself and the
//   peer, and the other host's ranks fail too instead of hanging.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "plexus/plexus.h"
#include "tests/comm/collective_calls.h"
#include "tests/comm/collective_reference.h"
#include "tests/comm/shm_segments.h"
#include "tests/comm/transport_cases.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

constexpr const char* kForce =
    "allreduce:hierarchical, reduce_scatter:hierarchical, allgather:hierarchical";

struct World {
  const char* name;
  std::vector<std::string> hosts;  // PLEXUS_HOST_ID per rank
  int size() const { return static_cast<int>(hosts.size()); }
  bool shares_host(int rank) const {
    int on_host = 0;
    for (const std::string& h : hosts) on_host += h == hosts[rank] ? 1 : 0;
    return on_host > 1;
  }
};

const World k2x2{"2x2", {"shm-a", "shm-a", "shm-b", "shm-b"}};
const World k3p2{"3p2", {"shm-a", "shm-a", "shm-b", "shm-a", "shm-b"}};
const World k2p1{"2p1", {"shm-a", "shm-a", "shm-b"}};

// Every op of the reducing collectives, the datatypes in turn, in place and out.
std::vector<Call> calls() {
  std::vector<Call> out;
  size_t t = 0;
  for (const char* collective : {"allreduce", "reduce_scatter", "allgather"}) {
    const int ops = std::string(collective) == "allgather" ? 1 : PLX_NUM_OPS;
    for (size_t count : {size_t{1}, size_t{1009}, size_t{65537}}) {
      for (int op = 0; op < ops; ++op) {
        for (bool in_place : {false, true}) {
          out.push_back({collective, count, static_cast<plx_datatype_t>(t++ % PLX_NUM_DATATYPES),
                         static_cast<plx_red_op_t>(op), in_place, 0});
        }
      }
    }
  }
  return out;
}

EnvList env(int timeout_ms = 60000) {
  EnvList e = transport_env("tcp", timeout_ms);
  e.push_back({"FI_TCP_IFACE", "lo"});  // emulated hosts, real loopback
  e.push_back({"PLEXUS_CHUNK_BYTES", "4096"});
  e.push_back({"PLEXUS_CHECK_ARGS", "0"});
  return e;
}

// Puts this rank on its emulated host: its PLEXUS_HOST_ID, and no launcher local rank or size,
// so that the communicator counts them from the host ids.
void join_host(const World& world, int rank) {
  setenv("PLEXUS_HOST_ID", world.hosts[rank].c_str(), 1);
  unsetenv("PLEXUS_LOCAL_RANK");
  unsetenv("PLEXUS_LOCAL_WORLD_SIZE");
}

// Runs body on every rank of `world` (own host id, then the world communicator), and checks
// that nothing is left in /dev/shm.
void run_world(const World& world, const EnvList& environment,
               const std::function<std::string(int rank, plx_comm_t comm)>& body) {
  PidBoard board(world.size());
  const auto outcomes = run_ranks(
      world.size(),
      [&](int rank) {
        board.record(rank);
        join_host(world, rank);
        OwnedComm comm;
        std::string why = open_world(world.size(), &comm);
        if (why.empty()) why = body(rank, comm.get());
        if (why.empty()) why = comm.destroy(world.name);
        return rank_result(rank, why);
      },
      180.0, environment);
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << world.name << ": " << why;
  const auto left = board.leftovers();
  EXPECT_TRUE(left.empty()) << "left in /dev/shm: " << left.front();
}

// The segment is mapped exactly when `want`, then every call of calls() is right.
std::string mapped_then_calls(plx_comm_t comm, bool want) {
  if (segment_mapped() != want) {
    return want ? "no peer-memory segment mapped" : "a peer-memory segment is mapped";
  }
  std::string why = expect_success(plx_comm_set_algorithm(comm, kForce), "set_algorithm");
  for (const Call& c : calls()) {
    if (!why.empty()) break;
    why = run_call(c, comm);
    const char* got = nullptr;
    if (why.empty() && (plx_comm_last_algorithm(comm, &got) != PLX_SUCCESS || got == nullptr ||
                        std::string(got) != std::string(c.collective) + ":hierarchical")) {
      why = std::string("ran ") + (got ? got : "?");
    }
    if (!why.empty()) why = describe(c) + ": " + why;
  }
  return why;
}

class HierarchicalShmRanks : public ::testing::TestWithParam<const World*> {};

TEST_P(HierarchicalShmRanks, EachHostMapsItsSegmentAndEveryCallMatches) {
  const World& world = *GetParam();
  run_world(world, env(), [&](int rank, plx_comm_t comm) {
    return mapped_then_calls(comm, world.shares_host(rank));
  });
}

INSTANTIATE_TEST_SUITE_P(Worlds, HierarchicalShmRanks, ::testing::Values(&k2x2, &k3p2, &k2p1),
                         [](const auto& info) { return std::string(info.param->name); });

TEST(HierarchicalShmDisabled, ShmZeroEverywhereMapsNothingAndMatches) {
  EnvList e = env();
  e.push_back({"PLEXUS_SHM", "0"});
  run_world(k3p2, e, [](int, plx_comm_t comm) { return mapped_then_calls(comm, false); });
}

TEST(HierarchicalShmDisabled, ShmZeroOnOneRankLeavesEveryHostWithout) {
  // Rank 3 alone (host shm-b) refuses: host shm-a could map its segment, but must not keep it.
  PidBoard board(4);
  const auto outcomes = run_ranks(
      4,
      [&](int rank) {
        board.record(rank);
        join_host(k2x2, rank);
        if (rank == 3) setenv("PLEXUS_SHM", "0", 1);
        OwnedComm comm;
        std::string why = open_world(4, &comm);
        if (why.empty()) why = mapped_then_calls(comm.get(), false);
        if (why.empty()) why = comm.destroy("world");
        return rank_result(rank, why);
      },
      180.0, env());
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
  const auto left = board.leftovers();
  EXPECT_TRUE(left.empty()) << "left in /dev/shm: " << left.front();
}

TEST(HierarchicalShmFailure, DeadHostPeerGivesAnErrorNotAHang) {
  constexpr int kDead = 1;  // host shm-a: ranks 0 and 1
  PidBoard board(4);
  const auto outcomes = run_ranks(
      4,
      [&](int rank) {
        board.record(rank);
        join_host(k2x2, rank);
        OwnedComm comm;
        std::string why = open_world(4, &comm);
        if (why.empty()) {
          why = expect_success(plx_comm_set_algorithm(comm.get(), kForce), "set_algorithm");
        }
        const Call ok{"allreduce", 65537, PLX_FLOAT32, PLX_SUM, false, 0};
        if (why.empty()) why = run_call(ok, comm.get());
        if (!why.empty()) return rank_result(rank, why);
        if (rank == kDead) _exit(0);  // gone without a word, between two calls
        std::vector<float> buf(1 << 16, 1.0f);
        const plx_result_t rc = plx_allreduce(buf.data(), buf.data(), buf.size(), PLX_FLOAT32,
                                              PLX_SUM, comm.get(), nullptr);
        const std::string message = plx_get_last_error(comm.get());
        if (rc == PLX_SUCCESS) {
          why = "allreduce after the peer left succeeded";
        } else if (rank == 0 && rc != PLX_ERROR_REMOTE && rc != PLX_ERROR_TIMEOUT) {
          why = std::string("allreduce after the host peer left returned ") +
                plx_get_error_string(rc) + ": " + message;
        } else if (rank == 0 &&
                   (message.find("allreduce:hierarchical: rank 0") == std::string::npos ||
                    message.find("peer rank " + std::to_string(kDead)) == std::string::npos)) {
          why = "message does not name the operation, rank and peer: " + message;
        }
        comm.abort("after the dead peer");
        return rank_result(rank, why);
      },
      120.0, env(20000));
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
  const auto left = board.leftovers();
  EXPECT_TRUE(left.empty()) << "left in /dev/shm: " << left.front();
}

}  // namespace
}  // namespace plexus::test
