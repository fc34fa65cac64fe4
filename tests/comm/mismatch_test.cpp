// mismatch_test.cpp - PLX_ERROR_MISMATCH on real ranks over libfabric tcp and shm and over UCX.
//
// Acceptance: mismatched calls across ranks (different counts, datatypes, ops or roots for the
// same collective, or different collectives) return PLX_ERROR_MISMATCH on every rank with a
// message naming both sides' arguments, instead of hanging or corrupting memory. Each case has
// one deviating rank (a different one from case to case) and every rank checks the exact
// message, "plx_fn: rank R: mismatched collective calls: rank A called <call> but rank B called
// <call>" (A < B, each the lowest rank making that call), that no receive buffer was touched, and
// that a correct collective then succeeds. Every collective, blocking, non-blocking (the message
// comes from plx_wait) and in a group (from plx_group_end); pre-multiplied sums with different
// scalars; a different plx_comm_set_algorithm on one rank; and counts far enough apart that the
// cost model picks different algorithms. The algorithms are forced (PLEXUS_ALGO) so that every
// expected message is exact.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "plexus/plexus.h"
#include "tests/comm/transport_cases.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

constexpr const char* kAlgorithms =
    "allreduce:ring,reduce:binomial,broadcast:binomial,reduce_scatter:ring,allgather:ring,"
    "alltoall:pairwise,alltoallv:pairwise,gather:linear,scatter:linear,barrier:dissemination";

// The ten collectives, in comm::Collective's order (kInfo below follows it).
using Kind = comm::Collective;

struct KindInfo {
  const char* name;
  const char* algorithm;  // as forced by kAlgorithms
  bool has_op;
  bool has_root;
};

const KindInfo& info(Kind kind) {
  static const KindInfo kInfo[] = {
      {"allreduce", "ring", true, false},      {"reduce", "binomial", true, true},
      {"broadcast", "binomial", false, true},  {"reduce_scatter", "ring", true, false},
      {"allgather", "ring", false, false},     {"alltoall", "pairwise", false, false},
      {"alltoallv", "pairwise", false, false}, {"gather", "linear", false, true},
      {"scatter", "linear", false, true},      {"barrier", "dissemination", false, false}};
  return kInfo[static_cast<int>(kind)];
}

const char* datatype_label(plx_datatype_t dt) {
  static const char* const kNames[] = {"int8",   "uint8",   "int32",    "uint32",  "int64",
                                       "uint64", "float16", "bfloat16", "float32", "float64"};
  return kNames[dt];
}

const char* op_label(plx_red_op_t op) {
  static const char* const kNames[] = {"sum", "prod", "min", "max", "avg"};
  return kNames[op];
}

// One rank's call.
struct Call {
  Kind kind = Kind::Allreduce;
  size_t count = 8;
  plx_datatype_t dt = PLX_INT32;
  plx_red_op_t op = PLX_SUM;
  int root = 0;
  float premul = 0;                 // non-zero: a float32 pre-multiplied sum with this scalar
  const char* algorithm = nullptr;  // set by plx_comm_set_algorithm; else the forced default
};

// The call as the mismatch message shows it.
std::string describe(const Call& c) {
  const KindInfo& k = info(c.kind);
  std::string text = std::string(k.name) + "(";
  if (c.kind == Kind::Alltoallv) {
    text += datatype_label(c.dt);  // its counts are not compared
  } else if (c.kind != Kind::Barrier) {
    text += "count " + std::to_string(c.count) + ", " + datatype_label(c.dt);
  }
  if (k.has_op) {
    if (c.premul != 0) {
      uint32_t bits = 0;
      std::memcpy(&bits, &c.premul, sizeof(bits));
      char hex[32];
      std::snprintf(hex, sizeof(hex), "%#x", bits);
      text += std::string(", premul_sum scalar bits ") + hex;
    } else {
      text += std::string(", ") + op_label(c.op);
    }
  }
  if (k.has_root) text += ", root " + std::to_string(c.root);
  if (c.kind != Kind::Barrier) text += ", ";
  return text + "algorithm " + (c.algorithm ? c.algorithm : k.algorithm) + ")";
}

enum class Mode { Blocking, Nonblocking, Grouped };

// The function whose message reports the mismatch.
std::string reporter(const Call& c, Mode mode) {
  if (mode == Mode::Nonblocking) return "plx_wait";
  if (mode == Mode::Grouped) return "plx_group_end";
  return std::string("plx_") + info(c.kind).name;
}

constexpr size_t kMaxCount = 64;
constexpr unsigned char kUntouched = 0xa5;

struct Buffers {
  explicit Buffers(int n)
      : send(kMaxCount * n * 8, 1), recv(kMaxCount * n * 8, kUntouched), counts(n), displs(n) {}
  std::vector<unsigned char> send, recv;
  std::vector<size_t> counts, displs;
};

// Issues the call in `mode`; its result, and in *message the error text it left.
plx_result_t issue(const Call& c, Mode mode, plx_comm_t comm, int n, Buffers& b,
                   std::string* message) {
  plx_red_op_t op = c.op;
  if (c.premul != 0 &&
      plx_red_op_create_premul_sum(&op, &c.premul, PLX_FLOAT32, comm) != PLX_SUCCESS) {
    *message = "plx_red_op_create_premul_sum: " + last_error_text();
    return PLX_ERROR_INTERNAL;
  }
  for (int j = 0; j < n; ++j) {
    b.counts[j] = c.count;
    b.displs[j] = c.count * j;
  }
  const void* s = b.send.data();
  void* r = b.recv.data();
  plx_request_t request = nullptr;
  plx_request_t* req = mode == Mode::Nonblocking ? &request : nullptr;
  if (mode == Mode::Grouped) plx_group_start();
  plx_result_t rc = PLX_ERROR_INTERNAL;
  switch (c.kind) {
    case Kind::Allreduce:
      rc = req ? plx_iallreduce(s, r, c.count, c.dt, op, comm, req)
               : plx_allreduce(s, r, c.count, c.dt, op, comm, nullptr);
      break;
    case Kind::Reduce:
      rc = req ? plx_ireduce(s, r, c.count, c.dt, op, c.root, comm, req)
               : plx_reduce(s, r, c.count, c.dt, op, c.root, comm, nullptr);
      break;
    case Kind::Broadcast:
      rc = req ? plx_ibroadcast(s, r, c.count, c.dt, c.root, comm, req)
               : plx_broadcast(s, r, c.count, c.dt, c.root, comm, nullptr);
      break;
    case Kind::ReduceScatter:
      rc = req ? plx_ireduce_scatter(s, r, c.count, c.dt, op, comm, req)
               : plx_reduce_scatter(s, r, c.count, c.dt, op, comm, nullptr);
      break;
    case Kind::Allgather:
      rc = req ? plx_iallgather(s, r, c.count, c.dt, comm, req)
               : plx_allgather(s, r, c.count, c.dt, comm, nullptr);
      break;
    case Kind::Alltoall:
      rc = req ? plx_ialltoall(s, r, c.count, c.dt, comm, req)
               : plx_alltoall(s, r, c.count, c.dt, comm, nullptr);
      break;
    case Kind::Alltoallv:
      rc = req ? plx_ialltoallv(s, b.counts.data(), b.displs.data(), r, b.counts.data(),
                                b.displs.data(), c.dt, comm, req)
               : plx_alltoallv(s, b.counts.data(), b.displs.data(), r, b.counts.data(),
                               b.displs.data(), c.dt, comm, nullptr);
      break;
    case Kind::Gather:
      rc = req ? plx_igather(s, r, c.count, c.dt, c.root, comm, req)
               : plx_gather(s, r, c.count, c.dt, c.root, comm, nullptr);
      break;
    case Kind::Scatter:
      rc = req ? plx_iscatter(s, r, c.count, c.dt, c.root, comm, req)
               : plx_scatter(s, r, c.count, c.dt, c.root, comm, nullptr);
      break;
    case Kind::Barrier:
      rc = req ? plx_ibarrier(comm, req) : plx_barrier(comm);
      break;
    case Kind::kCount:  // not a collective: no case makes it
      break;
  }
  if (mode == Mode::Grouped) {
    const plx_result_t ended = plx_group_end();
    if (rc == PLX_SUCCESS) rc = ended;
  }
  if (mode == Mode::Nonblocking && rc == PLX_SUCCESS) rc = plx_wait(request);
  *message = last_error_text();
  if (c.premul != 0) plx_red_op_destroy(op, comm);
  return rc;
}

struct Case {
  std::string name;
  Call common;   // every rank but the deviant
  Call deviant;  // one rank
  Mode mode = Mode::Blocking;
};

Call make(Kind kind, size_t count, plx_datatype_t dt, plx_red_op_t op = PLX_SUM, int root = 0) {
  return Call{.kind = kind, .count = count, .dt = dt, .op = op, .root = root};
}

std::vector<Case> cases(int n) {
  const int last = n - 1;
  std::vector<Case> out;
  const auto add = [&](std::string name, Call common, Call deviant, Mode mode = Mode::Blocking) {
    out.push_back({std::move(name), common, deviant, mode});
  };
  using K = Kind;
  // The same collective with one argument different.
  add("allreduce count", make(K::Allreduce, 8, PLX_INT32), make(K::Allreduce, 9, PLX_INT32));
  add("allreduce datatype", make(K::Allreduce, 8, PLX_INT32), make(K::Allreduce, 8, PLX_FLOAT32));
  add("allreduce op", make(K::Allreduce, 8, PLX_INT32, PLX_SUM),
      make(K::Allreduce, 8, PLX_INT32, PLX_MAX));
  Call two = make(K::Allreduce, 16, PLX_FLOAT32), three = two, plain = two;
  two.premul = 2.0f;
  three.premul = 3.0f;
  add("allreduce premul scalar", two, three);
  add("allreduce premul vs sum", two, plain);
  add("reduce count", make(K::Reduce, 8, PLX_INT64), make(K::Reduce, 0, PLX_INT64));
  add("reduce datatype", make(K::Reduce, 8, PLX_INT64), make(K::Reduce, 8, PLX_INT32));
  add("reduce op", make(K::Reduce, 8, PLX_FLOAT64, PLX_PROD),
      make(K::Reduce, 8, PLX_FLOAT64, PLX_MIN));
  add("reduce root", make(K::Reduce, 8, PLX_INT32, PLX_SUM, 0),
      make(K::Reduce, 8, PLX_INT32, PLX_SUM, last));
  add("broadcast count", make(K::Broadcast, 33, PLX_UINT8), make(K::Broadcast, 32, PLX_UINT8));
  add("broadcast datatype", make(K::Broadcast, 8, PLX_UINT8), make(K::Broadcast, 8, PLX_INT8));
  add("broadcast root", make(K::Broadcast, 8, PLX_FLOAT16, PLX_SUM, last),
      make(K::Broadcast, 8, PLX_FLOAT16, PLX_SUM, 0));
  add("reduce_scatter count", make(K::ReduceScatter, 4, PLX_INT32),
      make(K::ReduceScatter, 5, PLX_INT32));
  add("reduce_scatter datatype", make(K::ReduceScatter, 4, PLX_BFLOAT16),
      make(K::ReduceScatter, 4, PLX_FLOAT16));
  add("reduce_scatter op", make(K::ReduceScatter, 4, PLX_INT32, PLX_AVG),
      make(K::ReduceScatter, 4, PLX_INT32, PLX_SUM));
  add("allgather count", make(K::Allgather, 7, PLX_INT32), make(K::Allgather, 6, PLX_INT32));
  add("allgather datatype", make(K::Allgather, 7, PLX_UINT32), make(K::Allgather, 7, PLX_INT32));
  add("alltoall count", make(K::Alltoall, 3, PLX_INT64), make(K::Alltoall, 2, PLX_INT64));
  add("alltoall datatype", make(K::Alltoall, 3, PLX_INT64), make(K::Alltoall, 3, PLX_UINT64));
  add("alltoallv datatype", make(K::Alltoallv, 3, PLX_INT32), make(K::Alltoallv, 3, PLX_FLOAT32));
  add("gather count", make(K::Gather, 5, PLX_INT8), make(K::Gather, 50, PLX_INT8));
  add("gather datatype", make(K::Gather, 5, PLX_INT8), make(K::Gather, 5, PLX_UINT8));
  add("gather root", make(K::Gather, 5, PLX_INT32, PLX_SUM, 0),
      make(K::Gather, 5, PLX_INT32, PLX_SUM, last));
  add("scatter count", make(K::Scatter, 5, PLX_FLOAT64), make(K::Scatter, 6, PLX_FLOAT64));
  add("scatter datatype", make(K::Scatter, 5, PLX_FLOAT64), make(K::Scatter, 5, PLX_INT64));
  add("scatter root", make(K::Scatter, 5, PLX_FLOAT64, PLX_SUM, last),
      make(K::Scatter, 5, PLX_FLOAT64, PLX_SUM, 0));
  // Different collectives.
  add("allreduce vs broadcast", make(K::Allreduce, 8, PLX_INT32), make(K::Broadcast, 8, PLX_INT32));
  add("reduce vs allreduce", make(K::Reduce, 8, PLX_INT32), make(K::Allreduce, 8, PLX_INT32));
  add("allgather vs alltoall", make(K::Allgather, 4, PLX_INT32), make(K::Alltoall, 4, PLX_INT32));
  add("reduce_scatter vs allgather", make(K::ReduceScatter, 4, PLX_INT32),
      make(K::Allgather, 4, PLX_INT32));
  add("gather vs scatter", make(K::Gather, 4, PLX_INT32), make(K::Scatter, 4, PLX_INT32));
  add("alltoall vs alltoallv", make(K::Alltoall, 4, PLX_INT32), make(K::Alltoallv, 4, PLX_INT32));
  add("barrier vs allreduce", make(K::Barrier, 0, PLX_FLOAT32), make(K::Allreduce, 1, PLX_FLOAT32));
  // Non-blocking (plx_wait reports) and grouped (plx_group_end reports).
  add("iallreduce count", make(K::Allreduce, 8, PLX_INT32), make(K::Allreduce, 16, PLX_INT32),
      Mode::Nonblocking);
  add("ibroadcast root", make(K::Broadcast, 8, PLX_INT32, PLX_SUM, 0),
      make(K::Broadcast, 8, PLX_INT32, PLX_SUM, last), Mode::Nonblocking);
  add("ibarrier vs iallgather", make(K::Barrier, 0, PLX_FLOAT32),
      make(K::Allgather, 2, PLX_FLOAT32), Mode::Nonblocking);
  add("grouped reduce_scatter op", make(K::ReduceScatter, 4, PLX_FLOAT32, PLX_MIN),
      make(K::ReduceScatter, 4, PLX_FLOAT32, PLX_MAX), Mode::Grouped);
  add("grouped gather vs reduce", make(K::Gather, 4, PLX_INT32), make(K::Reduce, 4, PLX_INT32),
      Mode::Grouped);
  // A different plx_comm_set_algorithm on one rank.
  Call ring = make(K::Allreduce, 8, PLX_INT32), doubling = ring;
  doubling.algorithm = "recursive_doubling";
  add("set_algorithm allreduce", ring, doubling);
  Call binomial = make(K::Broadcast, 8, PLX_INT32), chain = binomial;
  chain.algorithm = "chain";
  add("set_algorithm broadcast", binomial, chain);
  return out;
}

// The spec a rank sets for a call: the forced defaults, with the call's own algorithm.
std::string spec_for(const Call& c) {
  std::string spec = kAlgorithms;
  if (!c.algorithm) return spec;
  const std::string key = std::string(info(c.kind).name) + ":";
  const size_t at = spec.find(key);
  const size_t end = spec.find(',', at);
  return spec.substr(0, at) + key + c.algorithm +
         (end == std::string::npos ? "" : spec.substr(end));
}

// A correct allreduce after a case: sum over ranks of (rank + 1) * salt.
std::string correct_allreduce(plx_comm_t comm, int rank, int n, int64_t salt) {
  int64_t value = (rank + 1) * salt, sum = -1;
  if (auto why = expect_success(plx_allreduce(&value, &sum, 1, PLX_INT64, PLX_SUM, comm, nullptr),
                                "the correct allreduce that follows");
      !why.empty()) {
    return why;
  }
  if (sum != salt * n * (n + 1) / 2) {
    return "the correct allreduce that follows gave " + std::to_string(sum);
  }
  return "";
}

// Runs one case on this rank; "" or what went wrong.
std::string run_case(const Case& c, int index, plx_comm_t comm, int rank, int n) {
  const int deviant = index % n;
  const int other = deviant == 0 ? 1 : 0;  // the lowest rank making the common call
  const Call& mine = rank == deviant ? c.deviant : c.common;
  const bool algorithms_differ = c.common.algorithm || c.deviant.algorithm;
  if (algorithms_differ) {
    if (auto why = expect_success(plx_comm_set_algorithm(comm, spec_for(mine).c_str()),
                                  "plx_comm_set_algorithm");
        !why.empty()) {
      return why;
    }
  }
  Buffers buffers(n);
  std::string message;
  const plx_result_t rc = issue(mine, c.mode, comm, n, buffers, &message);
  const Call& low = deviant < other ? c.deviant : c.common;
  const Call& high = deviant < other ? c.common : c.deviant;
  const std::string expected =
      reporter(mine, c.mode) + ": rank " + std::to_string(rank) +
      ": mismatched collective calls: rank " + std::to_string(std::min(deviant, other)) +
      " called " + describe(low) + " but rank " + std::to_string(std::max(deviant, other)) +
      " called " + describe(high);
  if (rc != PLX_ERROR_MISMATCH) {
    return std::string("result ") + plx_get_error_string(rc) + " (\"" + message + "\")";
  }
  if (message != expected) return "message \"" + message + "\", expected \"" + expected + "\"";
  for (size_t i = 0; i < buffers.recv.size(); ++i) {
    if (buffers.recv[i] != kUntouched) return "recvbuf byte " + std::to_string(i) + " written";
  }
  if (algorithms_differ) {
    if (auto why =
            expect_success(plx_comm_set_algorithm(comm, kAlgorithms), "plx_comm_set_algorithm");
        !why.empty()) {
      return why;
    }
  }
  return correct_allreduce(comm, rank, n, index + 1);
}

class MismatchTest : public RankCaseTest {};

TEST_P(MismatchTest, EveryRankReportsBothSidesAndTheCommunicatorStillWorks) {
  const int n = GetParam().ranks;
  run(
      [n](int rank) {
        return rank_result(rank, [&]() -> std::string {
          OwnedComm world;
          if (auto why = open_world(n, &world); !why.empty()) return why;
          const std::vector<Case> all = cases(n);
          for (size_t i = 0; i < all.size(); ++i) {
            if (auto why = run_case(all[i], static_cast<int>(i), world.get(), rank, n);
                !why.empty()) {
              return all[i].name + " (deviant rank " + std::to_string(static_cast<int>(i) % n) +
                     "): " + why;
            }
          }
          // The cost model in charge: counts far apart (so the algorithms may differ too) are still
          // reported on every rank, naming both counts.
          if (auto why = expect_success(plx_comm_set_algorithm(world.get(), ""), "automatic");
              !why.empty()) {
            return why;
          }
          const size_t big = size_t{1} << 20;
          std::vector<float> send(big, 1.0f), recv(big, -1.0f);
          const size_t count = rank == n - 1 ? big : 8;
          const plx_result_t rc = plx_allreduce(send.data(), recv.data(), count, PLX_FLOAT32,
                                                PLX_SUM, world.get(), nullptr);
          const std::string message = last_error_text();
          if (rc != PLX_ERROR_MISMATCH ||
              message.find(
                  "plx_allreduce: rank " + std::to_string(rank) +
                  ": mismatched collective calls: rank 0 called allreduce(count 8, float32, "
                  "sum, algorithm ") != 0 ||
              message.find("but rank " + std::to_string(n - 1) +
                           " called allreduce(count 1048576, "
                           "float32, sum, algorithm ") == std::string::npos) {
            return std::string("counts far apart: ") + plx_get_error_string(rc) + " \"" + message +
                   "\"";
          }
          for (float v : recv) {
            if (v != -1.0f) return "counts far apart: recvbuf written";
          }
          if (auto why = correct_allreduce(world.get(), rank, n, 99); !why.empty()) return why;
          // Counts close together: every rank runs the one-shot allreduce on one host, whose
          // check rides its own piece (signature.h); still reported alike, recvbuf untouched,
          // and the pieces still agree afterwards.
          const size_t close = rank == n - 1 ? 9 : 8;
          const plx_result_t close_rc = plx_allreduce(send.data(), recv.data(), close,
                                                      PLX_FLOAT32, PLX_SUM, world.get(), nullptr);
          const std::string close_message = last_error_text();
          if (close_rc != PLX_ERROR_MISMATCH ||
              close_message.find("plx_allreduce: rank " + std::to_string(rank) +
                                 ": mismatched collective calls: rank 0 called allreduce(count "
                                 "8, float32, sum, algorithm ") != 0 ||
              close_message.find("but rank " + std::to_string(n - 1) +
                                 " called allreduce(count 9, float32, sum, algorithm ") ==
                  std::string::npos) {
            return std::string("counts close together: ") + plx_get_error_string(close_rc) +
                   " \"" + close_message + "\"";
          }
          for (size_t j = 0; j < 16; ++j) {
            if (recv[j] != -1.0f) return "counts close together: recvbuf written";
          }
          if (auto why = correct_allreduce(world.get(), rank, n, 98); !why.empty()) return why;
          // The shm broadcast, allgather, reduce_scatter and alltoall carry the check with their
          // one piece too (shm_pieces.h's ride_or_check): two collectives that both ride, and a
          // rank whose larger call checks apart against ranks that ride; every rank reports it,
          // no recvbuf is written, and the pieces still agree afterwards.
          if (auto why = expect_success(
                  plx_comm_set_algorithm(world.get(), "broadcast:shm,allgather:shm,"
                                                      "reduce_scatter:shm,alltoall:shm"),
                  "shm");
              !why.empty()) {
            return why;
          }
          const bool deviant = rank == n - 1;
          std::vector<float> out(static_cast<size_t>(n) * 70000, -1.0f);
          struct Riding {
            const char* name;
            std::function<plx_result_t()> call;
            const char* fn;
          };
          const std::vector<Riding> riding = {
              {"broadcast against allgather",
               [&] {
                 return deviant ? plx_allgather(send.data(), out.data(), 8, PLX_FLOAT32,
                                                world.get(), nullptr)
                                : plx_broadcast(send.data(), out.data(), 8, PLX_FLOAT32, 0,
                                                world.get(), nullptr);
               },
               deviant ? "plx_allgather" : "plx_broadcast"},
              {"allgather of 8 against 70000",
               [&] {
                 return plx_allgather(send.data(), out.data(), deviant ? 70000 : 8, PLX_FLOAT32,
                                      world.get(), nullptr);
               },
               "plx_allgather"},
              {"reduce_scatter against alltoall",
               [&] {
                 return deviant ? plx_alltoall(send.data(), out.data(), 8, PLX_FLOAT32,
                                               world.get(), nullptr)
                                : plx_reduce_scatter(send.data(), out.data(), 8, PLX_FLOAT32,
                                                     PLX_SUM, world.get(), nullptr);
               },
               deviant ? "plx_alltoall" : "plx_reduce_scatter"},
          };
          int check = 97;
          for (const Riding& r : riding) {
            const plx_result_t got = r.call();
            const std::string text = last_error_text();
            if (got != PLX_ERROR_MISMATCH ||
                text.find(std::string(r.fn) + ": rank " + std::to_string(rank) +
                          ": mismatched collective calls: rank 0 called ") != 0) {
              return std::string(r.name) + ": " + plx_get_error_string(got) + " \"" + text +
                     "\"";
            }
            for (float v : out) {
              if (v != -1.0f) return std::string(r.name) + ": recvbuf written";
            }
            if (auto why = correct_allreduce(world.get(), rank, n, check--); !why.empty()) {
              return std::string(r.name) + ", then: " + why;
            }
          }
          return world.destroy("world");
        }());
      },
      30000, {{"PLEXUS_ALGO", kAlgorithms}});
}

INSTANTIATE_TEST_SUITE_P(Transports, MismatchTest, ::testing::ValuesIn(rank_cases({2, 3, 5})),
                         rank_case_name);

}  // namespace
}  // namespace plexus::test
