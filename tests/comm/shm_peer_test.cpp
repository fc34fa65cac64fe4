// shm_peer_test.cpp - the peer-memory (shm) algorithms on real forked ranks.
//
// Threads would share memory trivially, so every case forks processes (tests/support/
// multiprocess.h) that build a real communicator over the real rendezvous; all ranks share this
// host, so the communicator maps a peer-memory segment (comm/transport/peer_memory/) whatever the
// transport. PLEXUS_CHUNK_BYTES=4096 makes the staging slots one page, so ordinary counts go
// through many pieces, with a short last one, and both buffers of every slot.
//
//   Worlds of 1, 2, 3, 4, 5 and 8 ranks: every datatype and op of allreduce, reduce and
//   reduce_scatter, every datatype of broadcast and allgather, in place and out of place, roots
//   turning, counts 1, 1009 and 3001 (never a multiple of a piece), then 65537 float32s; each
//   result against the serial reference of tests/comm/collective_reference.h, bit for bit, with
//   guard bytes before and after every buffer. The segment must be mapped while the communicator
//   lives (its name, unlinked, shows in /proc/self/maps) and no /dev/shm name of any rank's may
//   be left afterwards.
//   A split communicator on one host gets its own segment and the same results.
//   PLEXUS_SHM=0: no segment, the forced shm algorithms run their flat fallback, same results.
//   The cost model: with peer memory it picks shm for every collective from 64 KiB up (with the
//   parameters docs/algorithms.md quotes for this VM's shm provider), without it never.
//   A dead peer: one rank leaves mid-run; the others' next shm allreduce fails with
//   PLX_ERROR_REMOTE (or PLX_ERROR_TIMEOUT) naming the peer, instead of hanging.
//   A stuck peer: alive but never calling; the waiting rank gets PLX_ERROR_TIMEOUT after
//   PLEXUS_TIMEOUT_MS, naming itself and the peer.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <new>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "comm/tuning/algorithm_id.h"
#include "comm/tuning/cost_model.h"
#include "comm/tuning/cost_shape.h"
#include "plexus/plexus.h"
#include "tests/comm/collective_reference.h"
#include "tests/comm/shm_segments.h"
#include "tests/comm/transport_cases.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

constexpr const char* kForceShm =
    "allreduce:shm,reduce:shm,broadcast:shm,reduce_scatter:shm,allgather:shm";
constexpr unsigned char kGuard = 0xa5;
constexpr size_t kGuardBytes = 16;

// A buffer of `bytes` with kGuardBytes of kGuard on both sides.
struct Guarded {
  explicit Guarded(size_t bytes) : all(bytes + 2 * kGuardBytes, kGuard), bytes(bytes) {}
  unsigned char* data() { return all.data() + kGuardBytes; }
  bool intact() const {
    for (size_t i = 0; i < kGuardBytes; ++i) {
      if (all[i] != kGuard || all[kGuardBytes + bytes + i] != kGuard) return false;
    }
    return true;
  }
  std::vector<unsigned char> all;
  size_t bytes;
};

struct Call {
  std::string collective;
  size_t count;
  plx_datatype_t dt;
  plx_red_op_t op;
  bool in_place;
  int root;
};

std::string describe(const Call& c) {
  return c.collective + " count=" + std::to_string(c.count) + " " + datatype_name(c.dt) + " " +
         op_name(c.op) + (c.in_place ? " in-place" : "") + " root=" + std::to_string(c.root);
}


std::string failed(const Call& c, plx_result_t rc, plx_comm_t comm) {
  return c.collective + " returned " + plx_get_error_string(rc) + ": " + plx_get_last_error(comm);
}

// Runs `c` on this rank and checks result and guards; "" or what is wrong.
std::string run_call(const Call& c, plx_comm_t comm) {
  int n = 0, r = 0;
  plx_comm_size(comm, &n);
  plx_comm_rank(comm, &r);
  const size_t elem = plx_datatype_size(c.dt), bytes = c.count * elem;
  std::string why;
  plx_result_t rc = PLX_SUCCESS;
  if (c.collective == "allreduce" || c.collective == "reduce") {
    Guarded send(bytes), recv(bytes);
    fill_periodic(send.data(), c.count, elem, input_pattern(c.op, c.dt, r));
    if (c.in_place) fill_periodic(recv.data(), c.count, elem, input_pattern(c.op, c.dt, r));
    const void* sbuf = c.in_place ? recv.data() : send.data();
    rc = c.collective == "allreduce"
             ? plx_allreduce(sbuf, recv.data(), c.count, c.dt, c.op, comm, nullptr)
             : plx_reduce(sbuf, recv.data(), c.count, c.dt, c.op, c.root, comm, nullptr);
    if (rc != PLX_SUCCESS) return failed(c, rc, comm);
    if (c.collective == "allreduce" || r == c.root) {
      why = check_periodic(recv.data(), c.count, c.dt, expected_pattern(c.op, c.dt, n));
    }
    if (why.empty() && !c.in_place) {
      why = check_periodic(send.data(), c.count, c.dt, input_pattern(c.op, c.dt, r));
      if (!why.empty()) why = "sendbuf changed: " + why;
    }
    if (why.empty() && !(send.intact() && recv.intact())) why = "guard bytes overwritten";
  } else if (c.collective == "broadcast") {
    Guarded send(bytes), recv(bytes);
    fill_periodic(send.data(), c.count, elem, broadcast_pattern(c.dt, c.root));
    if (c.in_place && r == c.root) std::memcpy(recv.data(), send.data(), bytes);
    const void* sbuf = c.in_place ? recv.data() : send.data();
    rc = plx_broadcast(sbuf, recv.data(), c.count, c.dt, c.root, comm, nullptr);
    if (rc != PLX_SUCCESS) return failed(c, rc, comm);
    why = check_periodic(recv.data(), c.count, c.dt, broadcast_pattern(c.dt, c.root));
    if (why.empty() && !(send.intact() && recv.intact())) why = "guard bytes overwritten";
  } else if (c.collective == "reduce_scatter") {
    Guarded send(n * bytes), recv(bytes);
    fill_periodic(send.data(), n * c.count, elem, input_pattern(c.op, c.dt, r));
    unsigned char* out = c.in_place ? send.data() + r * bytes : recv.data();
    rc = plx_reduce_scatter(send.data(), out, c.count, c.dt, c.op, comm, nullptr);
    if (rc != PLX_SUCCESS) return failed(c, rc, comm);
    why = check_periodic(out, c.count, c.dt,
                         shifted(expected_pattern(c.op, c.dt, n), elem,
                                 r * c.count % input_period(c.op)));
    if (why.empty() && !(send.intact() && recv.intact())) why = "guard bytes overwritten";
  } else {  // allgather
    Guarded send(bytes), recv(n * bytes);
    unsigned char* own = c.in_place ? recv.data() + r * bytes : send.data();
    fill_periodic(own, c.count, elem, broadcast_pattern(c.dt, r));
    rc = plx_allgather(own, recv.data(), c.count, c.dt, comm, nullptr);
    if (rc != PLX_SUCCESS) return failed(c, rc, comm);
    for (int g = 0; g < n && why.empty(); ++g) {
      why = check_periodic(recv.data() + g * bytes, c.count, c.dt, broadcast_pattern(c.dt, g));
      if (!why.empty()) why = "block " + std::to_string(g) + " " + why;
    }
    if (why.empty() && !(send.intact() && recv.intact())) why = "guard bytes overwritten";
  }
  return why;
}

// Every datatype and op of the reducing collectives, every datatype of the others, layouts and
// roots turning; then the large count.
std::vector<Call> shm_calls(int n) {
  std::vector<Call> calls;
  const size_t counts[] = {1, 1009, 3001};
  size_t t = 0;
  for (int dt = 0; dt < PLX_NUM_DATATYPES; ++dt) {
    const auto type = static_cast<plx_datatype_t>(dt);
    for (const char* collective : {"allreduce", "reduce", "reduce_scatter"}) {
      for (int op = 0; op < PLX_NUM_OPS; ++op, ++t) {
        calls.push_back({collective, counts[t % 3], type, static_cast<plx_red_op_t>(op),
                         (t / 3) % 2 == 1, static_cast<int>(t % n)});
      }
    }
    for (const char* collective : {"broadcast", "allgather"}) {
      for (bool in_place : {false, true}) {
        calls.push_back({collective, counts[t++ % 3], type, PLX_SUM, in_place,
                         static_cast<int>(t % n)});
      }
    }
  }
  for (const char* collective :
       {"allreduce", "reduce", "broadcast", "reduce_scatter", "allgather"}) {
    calls.push_back({collective, 65537, PLX_FLOAT32, PLX_SUM, false, n - 1});
  }
  return calls;
}

std::string run_forced(plx_comm_t comm, const std::string& what) {
  std::string why = expect_success(plx_comm_set_algorithm(comm, kForceShm), what);
  int n = 0;
  plx_comm_size(comm, &n);
  for (const Call& c : shm_calls(n)) {
    if (!why.empty()) break;
    why = run_call(c, comm);
    if (why.empty()) {
      const char* got = nullptr;
      plx_comm_last_algorithm(comm, &got);
      if (got == nullptr || c.collective + ":shm" != got) {
        why = std::string("last algorithm ") + (got ? got : "NULL");
      }
    }
    if (!why.empty()) why = what + ": " + describe(c) + ": " + why;
  }
  return why;
}

EnvList shm_env(int timeout_ms = 60000) {
  EnvList env = transport_env(shm_available() ? "shm" : "tcp", timeout_ms);
  env.push_back({"PLEXUS_CHUNK_BYTES", "4096"});
  env.push_back({"PLEXUS_CHECK_ARGS", "0"});
  return env;
}

void run_world(int n, const EnvList& env, const std::function<std::string(int, plx_comm_t)>& body,
               bool expect_segment = true) {
  PidBoard board(n);
  const auto outcomes = run_ranks(
      n,
      [&](int rank) {
        board.record(rank);
        OwnedComm comm;
        std::string why = open_world(n, &comm);
        if (why.empty() && n > 1 && segment_mapped() != expect_segment) {
          why = expect_segment ? "no peer-memory segment mapped" : "a segment is mapped";
        }
        if (why.empty()) why = body(rank, comm.get());
        if (why.empty()) why = comm.destroy("world");
        return rank_result(rank, why);
      },
      240.0, env);
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << n << " ranks: " << why;
  const auto left = board.leftovers();
  EXPECT_TRUE(left.empty()) << "left in /dev/shm: " << left.front();
}

class ShmPeer : public ::testing::TestWithParam<int> {};

TEST_P(ShmPeer, EveryCollectiveDatatypeOpAndLayoutMatchesTheReference) {
  const int n = GetParam();
  run_world(n, shm_env(), [](int, plx_comm_t comm) { return run_forced(comm, "world"); });
}

INSTANTIATE_TEST_SUITE_P(Ranks, ShmPeer, ::testing::Values(1, 2, 3, 4, 5, 8),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "ranks";
                         });

TEST(ShmPeerSplit, ChildOnOneHostHasItsOwnSegment) {
  run_world(4, shm_env(), [](int rank, plx_comm_t comm) {
    plx_comm_t child = nullptr;
    std::string why = expect_success(plx_comm_split(comm, rank % 2, rank, &child), "split");
    if (why.empty()) why = run_forced(child, "split child");
    const plx_result_t destroyed = child ? plx_comm_destroy(child) : PLX_SUCCESS;
    if (why.empty()) why = expect_success(destroyed, "plx_comm_destroy(child)");
    if (why.empty()) why = run_forced(comm, "world after split");
    return why;
  });
}

TEST(ShmPeerDisabled, ShmZeroMapsNothingAndFallsBack) {
  EnvList env = shm_env();
  env.push_back({"PLEXUS_SHM", "0"});
  run_world(3, env, [](int, plx_comm_t comm) { return run_forced(comm, "PLEXUS_SHM=0"); },
            /*expect_segment=*/false);
}

TEST(ShmPeerFailure, DeadPeerGivesAnErrorNotAHang) {
  constexpr int kDead = 2;
  PidBoard board(3);
  const auto outcomes = run_ranks(
      3,
      [&](int rank) {
        board.record(rank);
        OwnedComm comm;
        std::string why = open_world(3, &comm);
        if (why.empty()) {
          why = expect_success(plx_comm_set_algorithm(comm.get(), kForceShm), "set_algorithm");
        }
        const Call ok{"allreduce", 3001, PLX_FLOAT32, PLX_SUM, false, 0};
        if (why.empty()) why = run_call(ok, comm.get());
        if (!why.empty()) return rank_result(rank, why);
        if (rank == kDead) _exit(0);  // gone without a word, mid-run
        std::vector<float> buf(1 << 16, 1.0f);
        const plx_result_t rc = plx_allreduce(buf.data(), buf.data(), buf.size(), PLX_FLOAT32,
                                              PLX_SUM, comm.get(), nullptr);
        const std::string message = plx_get_last_error(comm.get());
        if (rc != PLX_ERROR_REMOTE && rc != PLX_ERROR_TIMEOUT) {
          why = std::string("allreduce after the peer left returned ") +
                plx_get_error_string(rc) + ": " + message;
        } else if (message.find("allreduce:shm: rank " + std::to_string(rank)) ==
                       std::string::npos ||
                   (message.find("peer rank " + std::to_string(kDead)) == std::string::npos &&
                    message.find("rank " + std::to_string(kDead) + " lost") ==
                        std::string::npos)) {
          // Either the wait on the dead rank itself fails, or a wait on a live peer (which is
          // itself stuck on the dead rank) ends when the rendezvous reports the loss.
          why = "message does not name the operation, rank and the lost peer: " + message;
        }
        comm.abort("after the dead peer");
        return rank_result(rank, why);
      },
      120.0, shm_env(20000));
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
  const auto left = board.leftovers();
  EXPECT_TRUE(left.empty()) << "left in /dev/shm: " << left.front();
}

TEST(ShmPeerFailure, StuckPeerTimesOut) {
  // Set by rank 0 once its call has failed, so rank 1 (which never calls) may leave.
  void* shared = mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  auto* done = new (shared) std::atomic<int>(0);
  const auto outcomes = run_ranks(
      2,
      [&](int rank) {
        OwnedComm comm;
        std::string why = open_world(2, &comm);
        if (why.empty()) {
          why = expect_success(plx_comm_set_algorithm(comm.get(), kForceShm), "set_algorithm");
        }
        if (!why.empty()) return rank_result(rank, why);
        if (rank == 1) {
          // Bounded: rank 0 times out after 4 s; give up after 60 s.
          for (int i = 0; i < 6000 && done->load() == 0; ++i) usleep(10000);
          comm.abort("stuck rank");
          return rank_result(rank, done->load() == 0 ? "rank 0 never finished" : "");
        }
        std::vector<float> buf(4096, 1.0f);
        const plx_result_t rc = plx_allreduce(buf.data(), buf.data(), buf.size(), PLX_FLOAT32,
                                              PLX_SUM, comm.get(), nullptr);
        const std::string message = plx_get_last_error(comm.get());
        done->store(1);
        if (rc != PLX_ERROR_TIMEOUT) {
          why = std::string("allreduce with a stuck peer returned ") + plx_get_error_string(rc) +
                ": " + message;
        } else if (message.find("allreduce:shm: rank 0: peer rank 1 did not stage piece") ==
                       std::string::npos ||
                   message.find("PLEXUS_TIMEOUT_MS=4000") == std::string::npos) {
          why = "message does not name the operation, rank, peer and bound: " + message;
        }
        comm.abort("after the timeout");
        return rank_result(rank, why);
      },
      120.0, shm_env(4000));
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
  munmap(shared, sizeof(std::atomic<int>));
}

TEST(ShmPeerCost, ChosenWithPeerMemoryFromMediumSizesNeverWithout) {
  // alpha 5.98 us, beta 0.145 ns/B, gamma 0.0269 ns/B; 1 MiB chunks.
  const comm::CostParams params{5.98e-6, 0.145e-9, 0.0269e-9};
  constexpr size_t kChunk = size_t{1} << 20;
  for (int n : {2, 3, 4, 8}) {
    comm::CostShape with = comm::flat_cost_shape(n);
    with.peer_memory = true;
    const comm::CostShape without = comm::flat_cost_shape(n);
    for (const comm::AlgorithmInfo& info : comm::algorithm_table()) {
      if (info.name != "shm" && info.name != "shm_oneshot") continue;
      for (size_t bytes = size_t{64} << 10; bytes <= size_t{64} << 20; bytes *= 4) {
        const auto chosen = comm::choose(info.collective, bytes, with, params, kChunk);
        // allreduce has two: the one-shot for the smaller sizes, then the two-step one.
        const bool one_of_them =
            chosen.algorithm == info.id ||
            (info.collective == comm::Collective::Allreduce &&
             (chosen.algorithm == comm::AlgorithmId::AllreduceShm ||
              chosen.algorithm == comm::AlgorithmId::AllreduceShmOneshot));
        EXPECT_TRUE(one_of_them) << chosen.reason;
        const auto flat = comm::choose(info.collective, bytes, without, params, kChunk);
        EXPECT_NE(flat.algorithm, info.id) << flat.reason;
        // Without peer memory it is predicted as its fallback, which is listed before it.
        EXPECT_GE(comm::predict_seconds(info.id, bytes, without, params, kChunk),
                  flat.predicted_s);
      }
    }
  }
}

}  // namespace
}  // namespace plexus::test
