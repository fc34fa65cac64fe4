// registered_collectives_test.cpp - broadcast, allgather, reduce-scatter and all-to-all straight
// out of the ranks' registered sendbufs (comm/algorithms/shm_registered_pull.cpp), on real forked
// ranks sharing this host (tests/support/multiprocess.h); the allreduce's own registered path is
// registered_buffers_test.cpp's.
//
//   Worlds of 2, 3 and 4 ranks, counts just over the 1 MiB threshold (odd, so no part is a
//   whole number of cache lines): broadcast from every root of roots(), allgather and
//   reduce-scatter in place and out of place, all-to-all out of place; reduce-scatter with every
//   datatype and op. Results bit for bit (copies: a byte pattern naming the sender and the
//   position; reduce-scatter: tests/comm/collective_reference.h), sendbuf unchanged, the
//   allocation's bytes outside the registered range untouched, plx_comm_last_algorithm
//   "<collective>:shm_registered".
//   A broadcast needs only the root's sendbuf registered. With PLEXUS_CHECK_ARGS=0 (the check
//   that tells every rank whether all are registered does not run) the path still runs.
//   Fallbacks to the staged path ("<collective>:shm"), same results: one rank's sendbuf not
//   registered; an in-place all-to-all; a call under the threshold.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "plexus/plexus.h"
#include "tests/comm/collective_reference.h"
#include "tests/comm/registered_buffer.h"
#include "tests/comm/transport_cases.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

constexpr size_t kThresholdBytes = size_t{1} << 20;  // shm_registered.h kRegisteredPullMinBytes

enum class Kind { Broadcast, Allgather, ReduceScatter, Alltoall };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Broadcast: return "broadcast";
    case Kind::Allgather: return "allgather";
    case Kind::ReduceScatter: return "reduce_scatter";
    case Kind::Alltoall: return "alltoall";
  }
  return "?";
}

// Byte j of the data rank `from` sends in block `block` (broadcast: block 0 of the root).
unsigned char copy_byte(int from, int block, size_t j) {
  return static_cast<unsigned char>(from * 71 + block * 29 + j * 7 + (j >> 9));
}

// "" or the first byte of bytes [0, n) of p that differs from copy_byte(from, block, .).
std::string check_copy(const unsigned char* p, size_t n, int from, int block,
                       const std::string& what) {
  for (size_t j = 0; j < n; ++j) {
    if (p[j] != copy_byte(from, block, j)) {
      return what + " byte " + std::to_string(j) + ": got " + std::to_string(p[j]) + ", want " +
             std::to_string(copy_byte(from, block, j)) + " (rank " + std::to_string(from) +
             "'s block " + std::to_string(block) + ")";
    }
  }
  return "";
}

struct Call {
  Kind kind = Kind::Broadcast;
  size_t count = 0;  // elements per block (the vector, for broadcast)
  plx_datatype_t dt = PLX_FLOAT32;
  plx_red_op_t op = PLX_SUM;  // reduce-scatter
  int root = 0;               // broadcast
  bool in_place = false;
  bool registered = true;     // this rank's buffers
  std::string want;           // plx_comm_last_algorithm afterwards
};

std::string run_call(plx_comm_t comm, int rank, int n, const Call& c) {
  const size_t elem = plx_datatype_size(c.dt), block = c.count * elem;
  const size_t all = block * static_cast<size_t>(n);
  std::string what = std::string(kind_name(c.kind)) + " " + datatype_name(c.dt) +
                     (c.kind == Kind::ReduceScatter ? std::string(" ") + op_name(c.op) : "") +
                     " count " + std::to_string(c.count) +
                     (c.kind == Kind::Broadcast ? " root " + std::to_string(c.root) : "") +
                     (c.in_place ? " in place" : "") + ": ";
  size_t send_bytes = block, recv_bytes = block;
  if (c.kind == Kind::Allgather) recv_bytes = all;
  if (c.kind == Kind::ReduceScatter) send_bytes = all;
  if (c.kind == Kind::Alltoall) send_bytes = recv_bytes = all;
  std::string why;
  RegisteredBuffer send(comm, send_bytes, c.registered, &why);
  if (!why.empty()) return what + why;
  RegisteredBuffer recv(comm, recv_bytes, c.registered, &why);
  if (!why.empty()) return what + why;

  // The inputs, then the call; twice on the same buffers, so that the second call finds them
  // mapped by every peer already (the handshake's steady state, which skips its second barrier).
  unsigned char* sbuf = send.data();
  unsigned char* rbuf = recv.data();
  plx_result_t rc = PLX_SUCCESS;
  for (int pass = 0; pass < 2 && rc == PLX_SUCCESS; ++pass) {
    sbuf = send.data();
    rbuf = recv.data();
    std::memset(rbuf, 0xee, recv_bytes);
    switch (c.kind) {
      case Kind::Broadcast: {
        if (c.in_place) sbuf = rbuf;
        if (rank == c.root) {
          for (size_t j = 0; j < block; ++j) sbuf[j] = copy_byte(rank, 0, j);
        }
        rc = plx_broadcast(sbuf, rbuf, c.count, c.dt, c.root, comm, nullptr);
        break;
      }
      case Kind::Allgather: {
        if (c.in_place) sbuf = rbuf + static_cast<size_t>(rank) * block;
        for (size_t j = 0; j < block; ++j) sbuf[j] = copy_byte(rank, rank, j);
        rc = plx_allgather(sbuf, rbuf, c.count, c.dt, comm, nullptr);
        break;
      }
      case Kind::ReduceScatter: {
        fill_periodic(sbuf, c.count * static_cast<size_t>(n), elem,
                      input_pattern(c.op, c.dt, rank));
        if (c.in_place) rbuf = sbuf + static_cast<size_t>(rank) * block;
        rc = plx_reduce_scatter(sbuf, rbuf, c.count, c.dt, c.op, comm, nullptr);
        break;
      }
      case Kind::Alltoall: {
        if (c.in_place) sbuf = rbuf;
        for (int q = 0; q < n; ++q) {
          for (size_t j = 0; j < block; ++j) sbuf[q * block + j] = copy_byte(rank, q, j);
        }
        rc = plx_alltoall(sbuf, rbuf, c.count, c.dt, comm, nullptr);
        break;
      }
    }
  }
  why = expect_success(rc, std::string("plx_") + kind_name(c.kind));
  if (!why.empty()) return what + why;

  // The results, sendbuf unchanged, the guards.
  switch (c.kind) {
    case Kind::Broadcast:
      why = check_copy(rbuf, block, c.root, 0, "recvbuf");
      if (why.empty() && rank == c.root && !c.in_place) {
        why = check_copy(sbuf, block, c.root, 0, "sendbuf changed:");
      }
      break;
    case Kind::Allgather:
      for (int q = 0; q < n && why.empty(); ++q) {
        why = check_copy(rbuf + q * block, block, q, q, "block " + std::to_string(q));
      }
      if (why.empty() && !c.in_place) why = check_copy(sbuf, block, rank, rank, "sendbuf changed:");
      break;
    case Kind::ReduceScatter: {
      const size_t period = input_period(c.op);
      why = check_periodic(rbuf, c.count, c.dt,
                           shifted(expected_pattern(c.op, c.dt, n), elem,
                                   (static_cast<size_t>(rank) * c.count) % period));
      if (why.empty() && !c.in_place) {
        why = check_periodic(sbuf, c.count * static_cast<size_t>(n), c.dt,
                             input_pattern(c.op, c.dt, rank));
        if (!why.empty()) why = "sendbuf changed: " + why;
      }
      break;
    }
    case Kind::Alltoall:
      for (int q = 0; q < n && why.empty(); ++q) {
        why = check_copy(rbuf + q * block, block, q, rank, "block " + std::to_string(q));
      }
      for (int q = 0; q < n && why.empty() && !c.in_place; ++q) {
        why = check_copy(sbuf + q * block, block, rank, q, "sendbuf changed: block");
      }
      break;
  }
  if (why.empty() && !(send.guards_intact() && recv.guards_intact())) {
    why = "bytes outside the buffers were written";
  }
  if (why.empty() && last_algorithm(comm) != c.want) {
    why = "algorithm " + last_algorithm(comm) + ", want " + c.want;
  }
  return why.empty() ? "" : what + why;
}

EnvList registered_env(bool check_args = true) {
  EnvList env = transport_env(shm_available() ? "shm" : "tcp", 60000);
  env.push_back({"PLEXUS_ALGO", "broadcast:shm,allgather:shm,reduce_scatter:shm,alltoall:shm"});
  if (!check_args) env.push_back({"PLEXUS_CHECK_ARGS", "0"});
  return env;
}

// Runs `body` on n forked ranks with a world communicator; every rank must return "".
void run_world(int n, const std::function<std::string(int, plx_comm_t)>& body,
               const EnvList& env = registered_env()) {
  expect_ranks_pass(n, env, [&](plx_comm_t world, int rank) { return body(rank, world); }, 240.0);
}

// Elements per block just over the threshold for the call's largest buffer, and odd.
size_t count_over(Kind kind, plx_datatype_t dt, int n) {
  const size_t elem = plx_datatype_size(dt);
  const size_t blocks = kind == Kind::Broadcast ? 1 : static_cast<size_t>(n);
  return (kThresholdBytes / elem + blocks - 1) / blocks + 1009;
}

std::string registered_name(Kind k) { return std::string(kind_name(k)) + ":shm_registered"; }
std::string staged_name(Kind k) { return std::string(kind_name(k)) + ":shm"; }

class RegisteredCollectives : public ::testing::TestWithParam<int> {};

TEST_P(RegisteredCollectives, CopiesMatchBitForBit) {
  const int n = GetParam();
  run_world(n, [n](int rank, plx_comm_t comm) {
    std::string why;
    for (int root : roots(n)) {
      for (bool in_place : {false, true}) {
        if (why.empty()) {
          why = run_call(comm, rank, n,
                         {Kind::Broadcast, count_over(Kind::Broadcast, PLX_FLOAT32, n),
                          PLX_FLOAT32, PLX_SUM, root, in_place, true,
                          registered_name(Kind::Broadcast)});
        }
      }
    }
    for (plx_datatype_t dt : {PLX_FLOAT32, PLX_INT8}) {
      for (bool in_place : {false, true}) {
        if (why.empty()) {
          why = run_call(comm, rank, n,
                         {Kind::Allgather, count_over(Kind::Allgather, dt, n), dt, PLX_SUM, 0,
                          in_place, true, registered_name(Kind::Allgather)});
        }
      }
      if (why.empty()) {
        why = run_call(comm, rank, n,
                       {Kind::Alltoall, count_over(Kind::Alltoall, dt, n), dt, PLX_SUM, 0, false,
                        true, registered_name(Kind::Alltoall)});
      }
    }
    return why;
  });
}

TEST_P(RegisteredCollectives, ReduceScatterEveryDatatypeAndOpMatchesTheReference) {
  const int n = GetParam();
  run_world(n, [n](int rank, plx_comm_t comm) {
    return every_datatype_and_op([&](plx_datatype_t type, plx_red_op_t op, bool in_place) {
      return run_call(comm, rank, n,
                      {Kind::ReduceScatter, count_over(Kind::ReduceScatter, type, n), type, op, 0,
                       in_place, true, registered_name(Kind::ReduceScatter)});
    });
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, RegisteredCollectives, ::testing::Values(2, 3, 4), ranks_param_name);

TEST(RegisteredCollectivesNeeds, BroadcastNeedsOnlyTheRootsSendbuf) {
  run_world(3, [](int rank, plx_comm_t comm) {
    const int root = 1;
    return run_call(comm, rank, 3,
                    {Kind::Broadcast, count_over(Kind::Broadcast, PLX_FLOAT32, 3), PLX_FLOAT32,
                     PLX_SUM, root, false, rank == root, registered_name(Kind::Broadcast)});
  });
}

TEST(RegisteredCollectivesNeeds, WithoutTheArgumentCheckThePathStillRuns) {
  run_world(
      2,
      [](int rank, plx_comm_t comm) {
        std::string why;
        for (Kind k : {Kind::Broadcast, Kind::Allgather, Kind::ReduceScatter, Kind::Alltoall}) {
          if (why.empty()) {
            why = run_call(comm, rank, 2,
                           {k, count_over(k, PLX_FLOAT32, 2), PLX_FLOAT32, PLX_SUM, 0, false,
                            true, registered_name(k)});
          }
          // Rank 0 (the root) unregistered: the announcements (not the check) send everyone
          // staging.
          if (why.empty()) {
            why = run_call(comm, rank, 2,
                           {k, count_over(k, PLX_FLOAT32, 2), PLX_FLOAT32, PLX_SUM, 0, false,
                            rank != 0, staged_name(k)});
          }
        }
        return why;
      },
      registered_env(false));
}

TEST(RegisteredCollectivesFallback, StagedWhereThePathCannotRun) {
  run_world(3, [](int rank, plx_comm_t comm) {
    std::string why;
    for (Kind k : {Kind::Allgather, Kind::ReduceScatter, Kind::Alltoall, Kind::Broadcast}) {
      // One rank's buffers (the root's, for broadcast) not registered.
      if (why.empty()) {
        why = run_call(comm, rank, 3,
                       {k, count_over(k, PLX_FLOAT32, 3), PLX_FLOAT32, PLX_SUM, 2, false,
                        rank != 2, staged_name(k)});
      }
      // Under the threshold.
      if (why.empty()) {
        why = run_call(comm, rank, 3,
                       {k, 1001, PLX_FLOAT32, PLX_SUM, 0, false, true, staged_name(k)});
      }
    }
    // An in-place all-to-all would overwrite blocks its peers have yet to read.
    if (why.empty()) {
      why = run_call(comm, rank, 3,
                     {Kind::Alltoall, count_over(Kind::Alltoall, PLX_FLOAT32, 3), PLX_FLOAT32,
                      PLX_SUM, 0, true, true, staged_name(Kind::Alltoall)});
    }
    // And the registered path again afterwards.
    if (why.empty()) {
      why = run_call(comm, rank, 3,
                     {Kind::Allgather, count_over(Kind::Allgather, PLX_FLOAT32, 3), PLX_FLOAT32,
                      PLX_SUM, 0, false, true, registered_name(Kind::Allgather)});
    }
    return why;
  });
}

}  // namespace
}  // namespace plexus::test
