// collectives_matrix_test.cpp - every collective of include/plexus/plexus.h on real ranks, over
// every transport, world size, algorithm, datatype, op, count and buffer layout.
//
// One test per transport (ofi+shm, ofi+tcp, ucx) x world size (1, 2, 3, 4, 5, 8). Each forks
// its ranks once; every rank then runs the same list of cases through the public C ABI:
//   collectives  allreduce, reduce, broadcast, reduce_scatter, allgather, alltoall, alltoallv,
//                gather, scatter, barrier, and plx_send/plx_recv in a group (a ring exchange
//                in both directions; with 1 or 2 ranks the neighbours are the same rank)
//   algorithms   every one comm/tuning/algorithm_id.cpp lists for the collective, forced with
//                plx_comm_set_algorithm and checked with plx_comm_last_algorithm
//   datatypes    all ten; ops sum, prod, min, max, avg and a pre-multiplied sum (scalar 3,
//                plx_red_op_create_premul_sum) for the three reducing collectives
//   counts       0, 1, 1009 (prime) and 65537 (2^16 + 1: with PLEXUS_CHUNK_BYTES=64K set here,
//                the pipelined algorithms cut it into several slices with a short last one)
//   layouts      in place and out of place, as plexus.h defines them per collective (on
//                non-root ranks of an in-place reduce/broadcast, sendbuf == recvbuf as NCCL
//                allows); alltoallv with unequal counts per pair, reversed send blocks and a
//                gap after every block; roots, the non-blocking form (plx_i* + plx_wait, about
//                one case in three) and NULL for unused or empty buffers vary pseudo-randomly
// Checked per case on every rank: the result against a serial reference computed here, the
// guard bytes before and after every buffer, sendbuf unchanged where plexus.h says it is read
// only (and buffers a rank does not use left alone), the algorithm that ran, and for allreduce
// that every rank holds bit-identical bytes (digests compared through shared memory). A barrier
// is checked without timing: each rank counts itself into shared memory before it enters, and
// the count must be complete when it leaves. A failure names transport, ranks, collective,
// algorithm, dtype, op, count, layout, root, rank and index (with both values).
//
// Expected values. Reductions use the closed-form inputs of tests/comm/collective_reference.h
// at a scrambled index: small integers for which every result, in any reduction order, is
// exact in every datatype, so floats are compared bit for bit: the error bound is 0 for these
// inputs. For general float inputs plexus.h bounds a sum of n terms by
// (n-1) * eps * sum|x_i| (eps of the datatype; float16/bfloat16 are summed in float32 and
// rounded once per step, so n-1 roundings); the inputs here make every rounding exact, so the
// test never needs that bound. Min and max of the floating types also get NaN on some elements
// of some ranks, where the result must be NaN (plexus.h). Data-moving collectives carry
// pseudo-random bytes seeded by case and source rank, compared byte for byte.
//
// What is cut to fit CI (8 minutes for this file under ctest -j2 on 2 cores). Measured with
// ctest -R CollectivesMatrix -j2 on the 2-core machine: the full product took 3m36s with other
// jobs lightly loading it and 11m52s with them loading it heavily (load average 20; 8
// CPU-minutes, nearly all at the large count, e.g. 0.4-1.3 s per 8-rank alltoall); this list
// took 1m31s lightly loaded and 3m52s heavily loaded.
//   counts 0, 1, 1009  the full product on every transport and world size (latency-bound,
//                      cheap)
//   count 65537        every collective x algorithm x layout, but reducing collectives take 2 of
//                      the 6 ops per datatype, and the collectives whose buffers hold n blocks
//                      (reduce_scatter, allgather, alltoall, alltoallv, gather, scatter) take 4
//                      of the 10 datatypes. The subset turns with the collective, the world
//                      size and the transport (kept()), so over the 18 worlds every
//                      (collective, datatype, op) meets the large count. This holds on shm
//                      too: shm was no faster than tcp at this count.
// PLEXUS_CHECK_ARGS=0 except in the 3-rank worlds, which keep the argument-signature check on.
// PLEXUS_TEST_FULL_MATRIX=1 runs the full product everywhere.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "comm/tuning/algorithm_id.h"
#include "plexus/plexus.h"
#include "tests/comm/collective_reference.h"
#include "tests/comm/shm_available.h"
#include "tests/support/multiprocess.h"
#include "tests/support/temp_dir.h"

namespace plexus::test {
namespace {

using comm::Collective;

// ---- The cases ------------------------------------------------------------------------------

// The matrix's collectives: comm::Collective's ten in its order, then send/recv in a group.
enum class Kind {
  Allreduce,
  Reduce,
  Broadcast,
  ReduceScatter,
  Allgather,
  Alltoall,
  Alltoallv,
  Gather,
  Scatter,
  Barrier,
  SendRecv
};
static_assert(static_cast<int>(Kind::SendRecv) == static_cast<int>(Collective::kCount));

std::string kind_name(Kind kind) {
  if (kind == Kind::SendRecv) return "sendrecv";
  return std::string(comm::collective_name(static_cast<Collective>(kind)));
}
bool reduces(Kind k) {
  return k == Kind::Allreduce || k == Kind::Reduce || k == Kind::ReduceScatter;
}
bool rooted(Kind k) {
  return k == Kind::Reduce || k == Kind::Broadcast || k == Kind::Gather || k == Kind::Scatter;
}
bool has_in_place(Kind k) {
  return k != Kind::Alltoallv && k != Kind::Barrier && k != Kind::SendRecv;
}

struct MatrixOp {
  const char* name;
  plx_red_op_t op;        // the op of the serial reference
  int64_t premul_scalar;  // 0: `op` itself; else a pre-multiplied sum with this scalar
};
constexpr MatrixOp kOps[] = {{"sum", PLX_SUM, 0}, {"prod", PLX_PROD, 0},
                             {"min", PLX_MIN, 0}, {"max", PLX_MAX, 0},
                             {"avg", PLX_AVG, 0}, {"premul_sum(3)", PLX_SUM, 3}};
constexpr int kNumOps = static_cast<int>(std::size(kOps));

constexpr size_t kPrime = 1009;
constexpr size_t kLarge = (size_t{1} << 16) + 1;
constexpr size_t kCounts[] = {0, 1, kPrime, kLarge};
constexpr int kBarrierRepeats = 4;

struct Case {
  Kind kind = Kind::Barrier;
  std::string_view algorithm;  // "" for send/recv
  plx_datatype_t dt = PLX_UINT8;
  int op = -1;  // index into kOps; -1 when the collective does not reduce
  size_t count = 0;
  bool in_place = false;
  int root = 0;
  bool nonblocking = false;
  bool null_buffers = false;  // count 0: pass NULL; else NULL for the buffers a rank does not use
  size_t id = 0;              // position in the list; seeds the payload
};

std::string describe(const std::string& world, const Case& c) {
  std::string text = world + ": " + kind_name(c.kind);
  // append(), not operator+ on temporaries: GCC 12 warns falsely (-Wstringop-overflow) on those.
  if (!c.algorithm.empty()) text.append(":").append(c.algorithm);
  if (c.kind != Kind::Barrier) {
    text.append(" ").append(datatype_name(c.dt));
    if (c.op >= 0) text += std::string(" ") + kOps[c.op].name;
    text += " count=" + std::to_string(c.count) + (c.in_place ? " in-place" : " out-of-place");
    if (rooted(c.kind)) text += " root=" + std::to_string(c.root);
  }
  return text + (c.nonblocking ? " nonblocking" : " blocking") + " (case " + std::to_string(c.id) +
         ")";
}

// The algorithm names of a collective, as plx_comm_set_algorithm takes them ("" for send/recv).
std::vector<std::string_view> algorithms_of(Kind kind) {
  if (kind == Kind::SendRecv) return {""};
  std::vector<std::string_view> names;
  for (const auto& info : comm::algorithms_of(static_cast<Collective>(kind))) {
    names.push_back(info.name);
  }
  return names;
}

// Collectives whose buffers hold n blocks of `count` (n times the bytes of the others).
bool blocked(Kind k) {
  return k == Kind::ReduceScatter || k == Kind::Allgather || k == Kind::Alltoall ||
         k == Kind::Alltoallv || k == Kind::Gather || k == Kind::Scatter;
}

// Whether the list keeps (kind, datatype, op) at `count`; see the file comment. The large
// count's subset turns with the collective, the world size and the transport.
bool kept(int transport, int n, Kind kind, size_t count, int dt, int op, bool full) {
  if (full || count != kLarge) return true;
  const int turn = static_cast<int>(kind) + n + transport;
  if (op >= 0 && (op - dt - turn + 2 * kNumOps) % (kNumOps / 2) != 0) return false;
  return !blocked(kind) || (dt - turn + 2 * PLX_NUM_DATATYPES) % (PLX_NUM_DATATYPES / 2) < 2;
}

// The same list on every rank: every collective x algorithm x count x datatype x op x layout,
// less what kept() cuts. Root, blocking form and NULL buffers vary pseudo-randomly by case.
std::vector<Case> matrix_cases(const std::string& transport_name, int n, bool full) {
  const int transport = transport_name == "shm" ? 0 : transport_name == "tcp" ? 1 : 2;
  std::vector<Case> cases;
  const auto add = [&](Case c) {
    c.id = cases.size();
    uint64_t h = (c.id + 1) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    c.root = static_cast<int>(h % static_cast<uint64_t>(n));
    c.nonblocking = (h >> 20) % 3 == 0;
    c.null_buffers = ((h >> 40) & 1) != 0;
    cases.push_back(c);
  };
  for (int k = 0; k <= static_cast<int>(Kind::SendRecv); ++k) {
    const Kind kind = static_cast<Kind>(k);
    const std::vector<std::string_view> algorithms = algorithms_of(kind);
    if (kind == Kind::Barrier) {
      for (int repeat = 0; repeat < kBarrierRepeats; ++repeat) {
        for (std::string_view a : algorithms) add({kind, a});
      }
      continue;
    }
    for (size_t ci = 0; ci < std::size(kCounts); ++ci) {
      for (int dt = 0; dt < PLX_NUM_DATATYPES; ++dt) {
        for (int op = reduces(kind) ? 0 : -1; op < (reduces(kind) ? kNumOps : 0); ++op) {
          if (!kept(transport, n, kind, kCounts[ci], dt, op, full)) continue;
          for (std::string_view a : algorithms) {
            for (int in_place = 0; in_place < (has_in_place(kind) ? 2 : 1); ++in_place) {
              add({kind, a, static_cast<plx_datatype_t>(dt), op, kCounts[ci], in_place == 1});
            }
          }
        }
      }
    }
  }
  return cases;
}

// ---- Buffers and shared state ---------------------------------------------------------------

constexpr size_t kGuardBytes = 64;
constexpr unsigned char kGuard = 0xa5;   // before and after every buffer
constexpr unsigned char kPoison = 0x5a;  // initial content of what a collective must write

// A heap buffer with kGuardBytes of kGuard on each side.
class GuardedBuffer {
 public:
  explicit GuardedBuffer(size_t bytes, unsigned char fill = kPoison)
      : bytes_(bytes), storage_(bytes + 2 * kGuardBytes, kGuard) {
    std::fill(storage_.begin() + kGuardBytes, storage_.end() - kGuardBytes, fill);
  }
  unsigned char* data() { return storage_.data() + kGuardBytes; }
  const unsigned char* data() const { return storage_.data() + kGuardBytes; }
  size_t bytes() const { return bytes_; }

  // "" when both guards are intact, else which was overwritten and where.
  std::string check_guards(const std::string& name) const {
    for (size_t i = 0; i < kGuardBytes; ++i) {
      if (storage_[kGuardBytes - 1 - i] != kGuard) {
        return "wrote " + std::to_string(i + 1) + " byte(s) before the start of " + name;
      }
      if (storage_[kGuardBytes + bytes_ + i] != kGuard) {
        return "wrote past the end of " + name + " (guard byte " + std::to_string(i) + ")";
      }
    }
    return "";
  }

 private:
  size_t bytes_;
  std::vector<unsigned char> storage_;
};

// Memory shared by the ranks of one world, mapped before the fork: barrier arrival counts, and
// a digest of every allreduce result per rank (rank-major).
constexpr size_t kBarrierSlots = 64;

struct BoardHeader {
  std::atomic<int> barrier_arrivals[kBarrierSlots];
  std::atomic<int> ranks_done{0};
};

class SharedBoard {
 public:
  SharedBoard(int n, size_t digests_per_rank)
      : bytes_(sizeof(BoardHeader) + static_cast<size_t>(n) * digests_per_rank * 8),
        per_rank_(digests_per_rank) {
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) base_ = new (p) BoardHeader();
  }
  ~SharedBoard() {
    if (base_) munmap(base_, bytes_);
  }
  SharedBoard(const SharedBoard&) = delete;
  SharedBoard& operator=(const SharedBoard&) = delete;

  bool ok() const { return base_ != nullptr; }
  BoardHeader& header() { return *base_; }
  uint64_t* digests(int rank) {
    return reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(base_) + sizeof(BoardHeader)) +
           static_cast<size_t>(rank) * per_rank_;
  }

 private:
  size_t bytes_;
  size_t per_rank_;
  BoardHeader* base_ = nullptr;
};

uint64_t digest(const unsigned char* p, size_t bytes) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

// Seed of the bytes rank `source` moves in case `id` (sendrecv: 2 streams per rank).
uint64_t payload_seed(size_t id, int source) {
  return (static_cast<uint64_t>(id) << 20) ^ static_cast<uint64_t>(source) ^ 0x5eedull << 44;
}

std::vector<unsigned char> stream(uint64_t seed, size_t first_byte, size_t bytes) {
  std::vector<unsigned char> out(bytes);
  matrix_fill_stream(seed, first_byte, bytes, out.data());
  return out;
}

// "" when count elements of got equal want bytewise, else "<what> index I (block B): got X,
// want Y" for the first difference. computed: show values (else hex bytes). block: elements
// per block, to name the block (0: none).
std::string compare(const std::string& what, const unsigned char* got, const unsigned char* want,
                    size_t count, plx_datatype_t dt, bool computed, size_t block = 0) {
  const size_t elem = plx_datatype_size(dt);
  if (count == 0 || std::memcmp(got, want, count * elem) == 0) return "";
  size_t i = 0;
  while (std::memcmp(got + i * elem, want + i * elem, elem) == 0) ++i;
  const auto text = [&](const unsigned char* p) {
    return computed ? show(dt, p) : show_hex(p, elem);
  };
  std::string where = what + " index " + std::to_string(i);
  if (block > 0) where += " (block " + std::to_string(i / block) + ")";
  return where + ": got " + text(got + i * elem) + ", want " + text(want + i * elem);
}

// "" when the buffer still holds `want` (it must be read only or unused here).
std::string unchanged(const std::string& what, const unsigned char* got,
                      const std::vector<unsigned char>& want, plx_datatype_t dt, bool computed) {
  const std::string why =
      compare(what, got, want.data(), want.size() / plx_datatype_size(dt), dt, computed);
  return why.empty() ? "" : why + " (it must stay unchanged)";
}

// Keeps the first failure of a sequence of checks.
struct FirstFailure {
  std::string text;
  void operator()(const std::string& why) {
    if (text.empty()) text = why;
  }
};

// alltoallv: elements rank src sends to rank dst for base count c (c-1, c or c+1 by pair).
size_t alltoallv_count(size_t c, int src, int dst) {
  return c == 0 ? 0 : c - 1 + static_cast<size_t>(src + 2 * dst) % 3;
}

struct AlltoallvLayout {
  std::vector<size_t> sendcounts, sdispls, recvcounts, rdispls;
  size_t send_extent = 0, recv_extent = 0;
};

// Rank r's alltoallv layout: send blocks in reverse rank order, receive blocks in rank order,
// each followed by a one-element gap that nothing may write.
AlltoallvLayout alltoallv_layout(size_t c, int n, int r) {
  AlltoallvLayout v;
  v.sendcounts.resize(n);
  v.sdispls.resize(n);
  v.recvcounts.resize(n);
  v.rdispls.resize(n);
  for (int j = n - 1; j >= 0; --j) {
    v.sendcounts[j] = alltoallv_count(c, r, j);
    v.sdispls[j] = v.send_extent;
    v.send_extent += v.sendcounts[j] + 1;
  }
  for (int j = 0; j < n; ++j) {
    v.recvcounts[j] = alltoallv_count(c, j, r);
    v.rdispls[j] = v.recv_extent;
    v.recv_extent += v.recvcounts[j] + 1;
  }
  return v;
}

// ---- One rank -------------------------------------------------------------------------------

// Runs cases on one rank's communicator and checks each. run() returns "" when every check
// passed, else the first failure; it sets *fatal when the library returned an error, after
// which the communicator is unusable.
class MatrixRank {
 public:
  MatrixRank(plx_comm_t comm, int rank, int n, SharedBoard* board)
      : comm_(comm), rank_(rank), n_(n), board_(board) {}

  std::string create_premul_ops() {
    for (int dt = 0; dt < PLX_NUM_DATATYPES; ++dt) {
      unsigned char scalar[8] = {};
      encode(static_cast<plx_datatype_t>(dt), kOps[kNumOps - 1].premul_scalar, scalar);
      const plx_result_t rc = plx_red_op_create_premul_sum(&premul_[dt], scalar,
                                                           static_cast<plx_datatype_t>(dt), comm_);
      if (rc != PLX_SUCCESS) return library_error("plx_red_op_create_premul_sum", rc);
    }
    return "";
  }

  std::string destroy_premul_ops() {
    for (plx_red_op_t op : premul_) {
      const plx_result_t rc = plx_red_op_destroy(op, comm_);
      if (rc != PLX_SUCCESS) return library_error("plx_red_op_destroy", rc);
    }
    return "";
  }

  std::string run(const Case& c, bool* fatal) {
    if (c.kind != Kind::SendRecv) {
      const std::string spec = kind_name(c.kind) + ":" + std::string(c.algorithm);
      const plx_result_t rc = plx_comm_set_algorithm(comm_, spec.c_str());
      if (rc != PLX_SUCCESS) return fail(fatal, "plx_comm_set_algorithm", rc);
    }
    switch (c.kind) {
      case Kind::Allreduce: return allreduce(c, fatal);
      case Kind::Reduce: return reduce(c, fatal);
      case Kind::Broadcast: return broadcast(c, fatal);
      case Kind::ReduceScatter: return reduce_scatter(c, fatal);
      case Kind::Allgather: return allgather(c, fatal);
      case Kind::Alltoall: return alltoall(c, fatal);
      case Kind::Alltoallv: return alltoallv(c, fatal);
      case Kind::Gather: return gather(c, fatal);
      case Kind::Scatter: return scatter(c, fatal);
      case Kind::Barrier: return barrier(c, fatal);
      case Kind::SendRecv: return sendrecv(c, fatal);
    }
    return "unknown case";
  }

  // After the last case: waits (bounded) until every rank has recorded its allreduce digests,
  // then compares this rank's with rank 0's. allreduce_cases: the allreduce cases, in order.
  std::string compare_digests(const std::vector<const Case*>& allreduce_cases,
                              const std::string& world) {
    BoardHeader& board = board_->header();
    board.ranks_done.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (board.ranks_done.load() < n_) {
      if (std::chrono::steady_clock::now() > deadline) {
        return "waited 60 s for the other ranks to record their allreduce digests";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    for (size_t k = 0; k < allreduce_cases.size(); ++k) {
      if (board_->digests(rank_)[k] != board_->digests(0)[k]) {
        return describe(world, *allreduce_cases[k]) +
               ": result is not bit-identical to rank 0's (digests differ)";
      }
    }
    return "";
  }

 private:
  std::string library_error(const char* fn, plx_result_t rc) const {
    return std::string(fn) + " returned " + plx_get_error_string(rc) + ": " +
           plx_get_last_error(comm_);
  }
  std::string fail(bool* fatal, const char* fn, plx_result_t rc) const {
    *fatal = true;
    return library_error(fn, rc);
  }

  // Runs the blocking form, or the non-blocking one and plx_wait.
  template <typename Blocking, typename Nonblocking>
  static plx_result_t call(const Case& c, Blocking&& blocking, Nonblocking&& nonblocking) {
    if (!c.nonblocking) return blocking();
    plx_request_t request = nullptr;
    const plx_result_t rc = nonblocking(&request);
    return rc != PLX_SUCCESS ? rc : plx_wait(request);
  }

  // The pointer a case passes for a buffer: NULL at count 0 in the cases that pass NULLs.
  static unsigned char* pointer(GuardedBuffer& buffer, const Case& c) {
    return c.count == 0 && c.null_buffers ? nullptr : buffer.data();
  }
  // A buffer this rank does not use (non-root recvbuf of reduce/gather, sendbuf of
  // broadcast/scatter): NULL in the cases that pass NULLs, else a poisoned buffer checked
  // afterwards.
  static unsigned char* unused_pointer(GuardedBuffer& buffer, const Case& c) {
    return c.null_buffers ? nullptr : buffer.data();
  }

  plx_red_op_t op_of(const Case& c) const {
    return kOps[c.op].premul_scalar ? premul_[c.dt] : kOps[c.op].op;
  }

  std::string check_algorithm(const Case& c) const {
    const char* name = nullptr;
    const plx_result_t rc = plx_comm_last_algorithm(comm_, &name);
    if (rc != PLX_SUCCESS) return library_error("plx_comm_last_algorithm", rc);
    if (!name) return "plx_comm_last_algorithm gave NULL";
    const std::string want = kind_name(c.kind) + ":" + std::string(c.algorithm);
    if (want == name) return "";
    return "plx_comm_last_algorithm gave \"" + std::string(name) + "\", want \"" + want + "\"";
  }

  // This rank's reduction input, elements first..first+count-1 (memoized: the innermost
  // loops of the list repeat a key).
  const std::vector<unsigned char>& input(const Case& c, size_t first, size_t count) {
    return memoized(input_, c, first, count, [&](unsigned char* out) {
      matrix_fill_input(kOps[c.op].op, c.dt, rank_, first, count, out);
    });
  }
  // The serial reference of a reduction, elements first..first+count-1.
  const std::vector<unsigned char>& reference(const Case& c, size_t first, size_t count) {
    return memoized(reference_, c, first, count, [&](unsigned char* out) {
      const int64_t scale = kOps[c.op].premul_scalar ? kOps[c.op].premul_scalar : 1;
      matrix_reference(kOps[c.op].op, scale, c.dt, n_, first, count, out);
    });
  }
  struct Memo {
    int op = -1;
    plx_datatype_t dt = PLX_UINT8;
    size_t first = 0, count = 0;
    bool valid = false;
    std::vector<unsigned char> bytes;
  };
  template <typename Fill>
  static const std::vector<unsigned char>& memoized(Memo& m, const Case& c, size_t first,
                                                    size_t count, Fill&& fill) {
    if (!m.valid || m.op != c.op || m.dt != c.dt || m.first != first || m.count != count) {
      m = Memo{c.op, c.dt, first, count, true, {}};
      m.bytes.resize(count * plx_datatype_size(c.dt));
      fill(m.bytes.data());
    }
    return m.bytes;
  }

  std::string allreduce(const Case& c, bool* fatal);
  std::string reduce(const Case& c, bool* fatal);
  std::string broadcast(const Case& c, bool* fatal);
  std::string reduce_scatter(const Case& c, bool* fatal);
  std::string allgather(const Case& c, bool* fatal);
  std::string alltoall(const Case& c, bool* fatal);
  std::string alltoallv(const Case& c, bool* fatal);
  std::string gather(const Case& c, bool* fatal);
  std::string scatter(const Case& c, bool* fatal);
  std::string barrier(const Case& c, bool* fatal);
  std::string sendrecv(const Case& c, bool* fatal);

  plx_comm_t comm_;
  int rank_;
  int n_;
  SharedBoard* board_;
  plx_red_op_t premul_[PLX_NUM_DATATYPES] = {};
  size_t allreduce_index_ = 0;
  size_t barrier_index_ = 0;
  Memo input_, reference_;
};

std::string MatrixRank::allreduce(const Case& c, bool* fatal) {
  const size_t bytes = c.count * plx_datatype_size(c.dt);
  const std::vector<unsigned char>& in = input(c, 0, c.count);
  GuardedBuffer send(c.in_place ? 0 : bytes), recv(bytes);
  std::memcpy(c.in_place ? recv.data() : send.data(), in.data(), bytes);
  unsigned char* rbuf = pointer(recv, c);
  const unsigned char* sbuf = c.in_place ? rbuf : pointer(send, c);
  const plx_red_op_t op = op_of(c);
  const plx_result_t rc = call(
      c, [&] { return plx_allreduce(sbuf, rbuf, c.count, c.dt, op, comm_, nullptr); },
      [&](plx_request_t* q) { return plx_iallreduce(sbuf, rbuf, c.count, c.dt, op, comm_, q); });
  if (rc != PLX_SUCCESS) return fail(fatal, "plx_allreduce", rc);
  board_->digests(rank_)[allreduce_index_++] = digest(recv.data(), bytes);
  FirstFailure f;
  f(check_algorithm(c));
  f(compare("recvbuf", recv.data(), reference(c, 0, c.count).data(), c.count, c.dt, true));
  f(recv.check_guards("recvbuf"));
  if (!c.in_place) f(send.check_guards("sendbuf"));
  if (!c.in_place) f(unchanged("sendbuf", send.data(), in, c.dt, true));
  return f.text;
}

std::string MatrixRank::reduce(const Case& c, bool* fatal) {
  const size_t bytes = c.count * plx_datatype_size(c.dt);
  const bool root = rank_ == c.root;
  const std::vector<unsigned char>& in = input(c, 0, c.count);
  // In place, every rank passes sendbuf == recvbuf (only the root's is written).
  GuardedBuffer send(bytes), recv(c.in_place ? 0 : bytes);
  std::memcpy(send.data(), in.data(), bytes);
  const unsigned char* sbuf = pointer(send, c);
  unsigned char* rbuf = c.in_place ? pointer(send, c)
                        : root     ? pointer(recv, c)
                                   : unused_pointer(recv, c);
  const plx_red_op_t op = op_of(c);
  const plx_result_t rc = call(
      c, [&] { return plx_reduce(sbuf, rbuf, c.count, c.dt, op, c.root, comm_, nullptr); },
      [&](plx_request_t* q) {
        return plx_ireduce(sbuf, rbuf, c.count, c.dt, op, c.root, comm_, q);
      });
  if (rc != PLX_SUCCESS) return fail(fatal, "plx_reduce", rc);
  FirstFailure f;
  f(check_algorithm(c));
  if (root) {
    const unsigned char* result = c.in_place ? send.data() : recv.data();
    f(compare("recvbuf", result, reference(c, 0, c.count).data(), c.count, c.dt, true));
  }
  if (!root || !c.in_place) f(unchanged("sendbuf", send.data(), in, c.dt, true));
  if (!root && !c.in_place) {
    f(unchanged("unused recvbuf", recv.data(), std::vector<unsigned char>(bytes, kPoison), c.dt,
                false));
  }
  f(send.check_guards("sendbuf"));
  f(recv.check_guards("recvbuf"));
  return f.text;
}

std::string MatrixRank::broadcast(const Case& c, bool* fatal) {
  const size_t bytes = c.count * plx_datatype_size(c.dt);
  const bool root = rank_ == c.root;
  const std::vector<unsigned char> payload = stream(payload_seed(c.id, c.root), 0, bytes);
  // In place, every rank passes sendbuf == recvbuf (only the root's is read).
  GuardedBuffer send(c.in_place ? 0 : bytes), recv(bytes);
  if (root) std::memcpy(c.in_place ? recv.data() : send.data(), payload.data(), bytes);
  unsigned char* rbuf = pointer(recv, c);
  const unsigned char* sbuf = c.in_place ? rbuf : root ? pointer(send, c) : unused_pointer(send, c);
  const plx_result_t rc = call(
      c, [&] { return plx_broadcast(sbuf, rbuf, c.count, c.dt, c.root, comm_, nullptr); },
      [&](plx_request_t* q) {
        return plx_ibroadcast(sbuf, rbuf, c.count, c.dt, c.root, comm_, q);
      });
  if (rc != PLX_SUCCESS) return fail(fatal, "plx_broadcast", rc);
  FirstFailure f;
  f(check_algorithm(c));
  f(compare("recvbuf", recv.data(), payload.data(), c.count, c.dt, false));
  if (!c.in_place) {
    f(unchanged(root ? "sendbuf" : "unused sendbuf", send.data(),
                root ? payload : std::vector<unsigned char>(bytes, kPoison), c.dt, false));
  }
  f(send.check_guards("sendbuf"));
  f(recv.check_guards("recvbuf"));
  return f.text;
}

std::string MatrixRank::reduce_scatter(const Case& c, bool* fatal) {
  const size_t elem = plx_datatype_size(c.dt), bytes = c.count * elem;
  const size_t total = c.count * static_cast<size_t>(n_);
  const std::vector<unsigned char>& in = input(c, 0, total);
  GuardedBuffer send(total * elem), recv(c.in_place ? 0 : bytes);
  std::memcpy(send.data(), in.data(), total * elem);
  const unsigned char* sbuf = pointer(send, c);
  unsigned char* rbuf =
      c.in_place ? (sbuf ? send.data() + rank_ * bytes : nullptr) : pointer(recv, c);
  const plx_red_op_t op = op_of(c);
  const plx_result_t rc = call(
      c, [&] { return plx_reduce_scatter(sbuf, rbuf, c.count, c.dt, op, comm_, nullptr); },
      [&](plx_request_t* q) {
        return plx_ireduce_scatter(sbuf, rbuf, c.count, c.dt, op, comm_, q);
      });
  if (rc != PLX_SUCCESS) return fail(fatal, "plx_reduce_scatter", rc);
  FirstFailure f;
  f(check_algorithm(c));
  const unsigned char* result = c.in_place ? send.data() + rank_ * bytes : recv.data();
  const std::vector<unsigned char>& want = reference(c, rank_ * c.count, c.count);
  f(compare("recvbuf", result, want.data(), c.count, c.dt, true));
  if (!c.in_place) f(unchanged("sendbuf", send.data(), in, c.dt, true));
  f(send.check_guards("sendbuf"));
  f(recv.check_guards("recvbuf"));
  return f.text;
}

std::string MatrixRank::allgather(const Case& c, bool* fatal) {
  const size_t bytes = c.count * plx_datatype_size(c.dt);
  std::vector<unsigned char> want(n_ * bytes);
  for (int j = 0; j < n_; ++j) {
    matrix_fill_stream(payload_seed(c.id, j), 0, bytes, want.data() + j * bytes);
  }
  const unsigned char* mine = want.data() + rank_ * bytes;
  GuardedBuffer send(c.in_place ? 0 : bytes), recv(n_ * bytes);
  std::memcpy(c.in_place ? recv.data() + rank_ * bytes : send.data(), mine, bytes);
  unsigned char* rbuf = pointer(recv, c);
  const unsigned char* sbuf =
      c.in_place ? (rbuf ? rbuf + rank_ * bytes : nullptr) : pointer(send, c);
  const plx_result_t rc = call(
      c, [&] { return plx_allgather(sbuf, rbuf, c.count, c.dt, comm_, nullptr); },
      [&](plx_request_t* q) { return plx_iallgather(sbuf, rbuf, c.count, c.dt, comm_, q); });
  if (rc != PLX_SUCCESS) return fail(fatal, "plx_allgather", rc);
  FirstFailure f;
  f(check_algorithm(c));
  f(compare("recvbuf", recv.data(), want.data(), n_ * c.count, c.dt, false, c.count));
  if (!c.in_place) {
    f(unchanged("sendbuf", send.data(), std::vector<unsigned char>(mine, mine + bytes), c.dt,
                false));
  }
  f(send.check_guards("sendbuf"));
  f(recv.check_guards("recvbuf"));
  return f.text;
}

std::string MatrixRank::alltoall(const Case& c, bool* fatal) {
  const size_t bytes = c.count * plx_datatype_size(c.dt), total = n_ * bytes;
  const std::vector<unsigned char> mine = stream(payload_seed(c.id, rank_), 0, total);
  std::vector<unsigned char> want(total);
  for (int j = 0; j < n_; ++j) {
    matrix_fill_stream(payload_seed(c.id, j), rank_ * bytes, bytes, want.data() + j * bytes);
  }
  GuardedBuffer send(c.in_place ? 0 : total), recv(total);
  std::memcpy(c.in_place ? recv.data() : send.data(), mine.data(), total);
  unsigned char* rbuf = pointer(recv, c);
  const unsigned char* sbuf = c.in_place ? rbuf : pointer(send, c);
  const plx_result_t rc = call(
      c, [&] { return plx_alltoall(sbuf, rbuf, c.count, c.dt, comm_, nullptr); },
      [&](plx_request_t* q) { return plx_ialltoall(sbuf, rbuf, c.count, c.dt, comm_, q); });
  if (rc != PLX_SUCCESS) return fail(fatal, "plx_alltoall", rc);
  FirstFailure f;
  f(check_algorithm(c));
  f(compare("recvbuf", recv.data(), want.data(), n_ * c.count, c.dt, false, c.count));
  if (!c.in_place) f(unchanged("sendbuf", send.data(), mine, c.dt, false));
  f(send.check_guards("sendbuf"));
  f(recv.check_guards("recvbuf"));
  return f.text;
}

std::string MatrixRank::alltoallv(const Case& c, bool* fatal) {
  const size_t elem = plx_datatype_size(c.dt);
  const AlltoallvLayout v = alltoallv_layout(c.count, n_, rank_);
  const std::vector<unsigned char> mine =
      stream(payload_seed(c.id, rank_), 0, v.send_extent * elem);
  std::vector<unsigned char> want(v.recv_extent * elem, kPoison);
  for (int j = 0; j < n_; ++j) {
    const size_t from = alltoallv_layout(c.count, n_, j).sdispls[rank_];
    matrix_fill_stream(payload_seed(c.id, j), from * elem, v.recvcounts[j] * elem,
                       want.data() + v.rdispls[j] * elem);
  }
  GuardedBuffer send(mine.size()), recv(want.size());
  std::memcpy(send.data(), mine.data(), mine.size());
  const unsigned char* sbuf = pointer(send, c);
  unsigned char* rbuf = pointer(recv, c);
  const plx_result_t rc = call(
      c,
      [&] {
        return plx_alltoallv(sbuf, v.sendcounts.data(), v.sdispls.data(), rbuf, v.recvcounts.data(),
                             v.rdispls.data(), c.dt, comm_, nullptr);
      },
      [&](plx_request_t* q) {
        return plx_ialltoallv(sbuf, v.sendcounts.data(), v.sdispls.data(), rbuf,
                              v.recvcounts.data(), v.rdispls.data(), c.dt, comm_, q);
      });
  if (rc != PLX_SUCCESS) return fail(fatal, "plx_alltoallv", rc);
  FirstFailure f;
  f(check_algorithm(c));
  f(compare("recvbuf (blocks at rdispls, gaps untouched)", recv.data(), want.data(), v.recv_extent,
            c.dt, false));
  f(unchanged("sendbuf", send.data(), mine, c.dt, false));
  f(send.check_guards("sendbuf"));
  f(recv.check_guards("recvbuf"));
  return f.text;
}

std::string MatrixRank::gather(const Case& c, bool* fatal) {
  const size_t bytes = c.count * plx_datatype_size(c.dt);
  const bool root = rank_ == c.root;
  std::vector<unsigned char> want(n_ * bytes);
  for (int j = 0; j < n_; ++j) {
    matrix_fill_stream(payload_seed(c.id, j), 0, bytes, want.data() + j * bytes);
  }
  const std::vector<unsigned char> mine(want.begin() + rank_ * bytes,
                                        want.begin() + (rank_ + 1) * bytes);
  const bool in_place = c.in_place && root;
  GuardedBuffer send(in_place ? 0 : bytes), recv(n_ * bytes);
  std::memcpy(in_place ? recv.data() + rank_ * bytes : send.data(), mine.data(), bytes);
  unsigned char* rbuf = root ? pointer(recv, c) : unused_pointer(recv, c);
  const unsigned char* sbuf = in_place ? (rbuf ? rbuf + rank_ * bytes : nullptr) : pointer(send, c);
  const plx_result_t rc = call(
      c, [&] { return plx_gather(sbuf, rbuf, c.count, c.dt, c.root, comm_, nullptr); },
      [&](plx_request_t* q) { return plx_igather(sbuf, rbuf, c.count, c.dt, c.root, comm_, q); });
  if (rc != PLX_SUCCESS) return fail(fatal, "plx_gather", rc);
  FirstFailure f;
  f(check_algorithm(c));
  if (root) {
    f(compare("recvbuf", recv.data(), want.data(), n_ * c.count, c.dt, false, c.count));
  } else {
    f(unchanged("unused recvbuf", recv.data(), std::vector<unsigned char>(n_ * bytes, kPoison),
                c.dt, false));
  }
  if (!in_place) f(unchanged("sendbuf", send.data(), mine, c.dt, false));
  f(send.check_guards("sendbuf"));
  f(recv.check_guards("recvbuf"));
  return f.text;
}

std::string MatrixRank::scatter(const Case& c, bool* fatal) {
  const size_t bytes = c.count * plx_datatype_size(c.dt);
  const bool root = rank_ == c.root;
  const std::vector<unsigned char> payload = stream(payload_seed(c.id, c.root), 0, n_ * bytes);
  const std::vector<unsigned char> want(payload.begin() + rank_ * bytes,
                                        payload.begin() + (rank_ + 1) * bytes);
  const bool in_place = c.in_place && root;
  GuardedBuffer send(n_ * bytes), recv(in_place ? 0 : bytes);
  if (root) std::memcpy(send.data(), payload.data(), payload.size());
  const unsigned char* sbuf = root ? pointer(send, c) : unused_pointer(send, c);
  unsigned char* rbuf =
      in_place ? (sbuf ? send.data() + rank_ * bytes : nullptr) : pointer(recv, c);
  const plx_result_t rc = call(
      c, [&] { return plx_scatter(sbuf, rbuf, c.count, c.dt, c.root, comm_, nullptr); },
      [&](plx_request_t* q) { return plx_iscatter(sbuf, rbuf, c.count, c.dt, c.root, comm_, q); });
  if (rc != PLX_SUCCESS) return fail(fatal, "plx_scatter", rc);
  FirstFailure f;
  f(check_algorithm(c));
  const unsigned char* result = in_place ? send.data() + rank_ * bytes : recv.data();
  f(compare("recvbuf", result, want.data(), c.count, c.dt, false));
  f(unchanged(root ? "sendbuf" : "unused sendbuf", send.data(),
              root ? payload : std::vector<unsigned char>(n_ * bytes, kPoison), c.dt, false));
  f(send.check_guards("sendbuf"));
  f(recv.check_guards("recvbuf"));
  return f.text;
}

// Each rank counts itself into shared memory before it enters; when it leaves, every rank must
// have entered.
std::string MatrixRank::barrier(const Case& c, bool* fatal) {
  if (barrier_index_ == kBarrierSlots) return "more barrier cases than kBarrierSlots";
  std::atomic<int>& arrivals = board_->header().barrier_arrivals[barrier_index_++];
  arrivals.fetch_add(1);
  const plx_result_t rc = call(
      c, [&] { return plx_barrier(comm_); },
      [&](plx_request_t* q) { return plx_ibarrier(comm_, q); });
  if (rc != PLX_SUCCESS) return fail(fatal, "plx_barrier", rc);
  FirstFailure f;
  f(check_algorithm(c));
  const int entered = arrivals.load();
  if (entered < n_) {
    f("left the barrier when only " + std::to_string(entered) + " of " + std::to_string(n_) +
      " ranks had entered it");
  }
  return f.text;
}

// A ring exchange in both directions inside one group: send to the right and to the left
// neighbour, receive from the left and from the right (with 1 or 2 ranks these are the same
// peer, and the k-th send to a peer matches its k-th receive from this rank).
std::string MatrixRank::sendrecv(const Case& c, bool* fatal) {
  const size_t bytes = c.count * plx_datatype_size(c.dt);
  const int right = (rank_ + 1) % n_, left = (rank_ + n_ - 1) % n_;
  const std::vector<unsigned char> to_right = stream(payload_seed(c.id, 2 * rank_), 0, bytes);
  const std::vector<unsigned char> to_left = stream(payload_seed(c.id, 2 * rank_ + 1), 0, bytes);
  GuardedBuffer send_right(bytes), send_left(bytes), from_left(bytes), from_right(bytes);
  std::memcpy(send_right.data(), to_right.data(), bytes);
  std::memcpy(send_left.data(), to_left.data(), bytes);
  const char* before = nullptr;
  plx_comm_last_algorithm(comm_, &before);
  const std::string last_before = before ? before : "";
  plx_request_t requests[4] = {};
  plx_result_t rc = plx_group_start();
  if (rc != PLX_SUCCESS) return fail(fatal, "plx_group_start", rc);
  const auto post = [&](bool is_send, GuardedBuffer& buffer, int peer, plx_request_t* request) {
    if (rc != PLX_SUCCESS) return;
    unsigned char* p = pointer(buffer, c);
    if (is_send) {
      rc = c.nonblocking ? plx_isend(p, c.count, c.dt, peer, comm_, request)
                         : plx_send(p, c.count, c.dt, peer, comm_, nullptr);
    } else {
      rc = c.nonblocking ? plx_irecv(p, c.count, c.dt, peer, comm_, request)
                         : plx_recv(p, c.count, c.dt, peer, comm_, nullptr);
    }
  };
  post(true, send_right, right, &requests[0]);
  post(true, send_left, left, &requests[1]);
  post(false, from_left, left, &requests[2]);
  post(false, from_right, right, &requests[3]);
  const plx_result_t end = plx_group_end();
  if (rc != PLX_SUCCESS) return fail(fatal, "plx_send/plx_recv in a group", rc);
  if (end != PLX_SUCCESS) return fail(fatal, "plx_group_end", end);
  for (plx_request_t& request : requests) {
    if (!c.nonblocking) break;
    rc = plx_wait(request);
    if (rc != PLX_SUCCESS) return fail(fatal, "plx_wait", rc);
  }
  FirstFailure f;
  const char* after = nullptr;
  plx_comm_last_algorithm(comm_, &after);
  if (last_before != (after ? after : "")) {
    f("plx_comm_last_algorithm changed from \"" + last_before + "\" to \"" + (after ? after : "") +
      "\" (send/recv run no collective)");
  }
  f(compare("recvbuf from the left", from_left.data(),
            stream(payload_seed(c.id, 2 * left), 0, bytes).data(), c.count, c.dt, false));
  f(compare("recvbuf from the right", from_right.data(),
            stream(payload_seed(c.id, 2 * right + 1), 0, bytes).data(), c.count, c.dt, false));
  f(unchanged("sendbuf to the right", send_right.data(), to_right, c.dt, false));
  f(unchanged("sendbuf to the left", send_left.data(), to_left, c.dt, false));
  for (const GuardedBuffer* b : {&send_right, &send_left, &from_left, &from_right}) {
    f(b->check_guards("a send/recv buffer"));
  }
  return f.text;
}

// ---- One world ------------------------------------------------------------------------------

constexpr int kMaxPrintedFailures = 20;

// One rank's whole run: every case in order, then the allreduce digests and the shutdown.
int matrix_rank(int rank, int n, const std::string& world, const char* provider,
                const std::vector<Case>& cases, SharedBoard* board) {
  plx_comm_t comm = nullptr;
  const std::string init_error = init_world(n, provider, &comm);
  if (!init_error.empty()) return rank_failure(rank, world + ": " + init_error);
  MatrixRank runner(comm, rank, n, board);
  std::string why = runner.create_premul_ops();
  if (!why.empty()) {
    plx_comm_abort(comm);
    return rank_failure(rank, world + ": " + why);
  }
  int failures = 0;
  std::vector<const Case*> allreduce_cases;
  for (const Case& c : cases) {
    if (c.kind == Kind::Allreduce) allreduce_cases.push_back(&c);
    bool fatal = false;
    why = runner.run(c, &fatal);
    if (why.empty()) continue;
    if (++failures <= kMaxPrintedFailures || fatal)
      rank_failure(rank, describe(world, c) + ": " + why);
    if (fatal) {
      plx_comm_abort(comm);  // unusable now; the others see PLX_ERROR_REMOTE instead of hanging
      return 1;
    }
  }
  if (failures > kMaxPrintedFailures) {
    rank_failure(rank, world + ": " + std::to_string(failures) + " failed cases (the first " +
                           std::to_string(kMaxPrintedFailures) + " printed)");
  }
  why = runner.compare_digests(allreduce_cases, world);
  if (!why.empty()) failures += rank_failure(rank, why);
  why = runner.destroy_premul_ops();
  if (!why.empty()) failures += rank_failure(rank, world + ": " + why);
  return finish_rank(rank, comm, failures);
}

using Param = std::tuple<std::string, int>;  // transport (shm, tcp, ucx), world size

class CollectivesMatrix : public ::testing::TestWithParam<Param> {};

TEST_P(CollectivesMatrix, EveryCollectiveAlgorithmDatatypeOpCountAndLayout) {
  const auto [transport, n] = GetParam();
  if (transport == "shm" && !shm_available()) GTEST_SKIP() << "shm does not work on this host";
  const char* full_env = std::getenv("PLEXUS_TEST_FULL_MATRIX");
  const bool full = full_env && std::string(full_env) != "0";
  const std::vector<Case> cases = matrix_cases(transport, n, full);
  size_t allreduce_cases = 0;
  for (const Case& c : cases) allreduce_cases += c.kind == Kind::Allreduce;
  SharedBoard board(n, allreduce_cases);
  ASSERT_TRUE(board.ok()) << "mmap of the shared board failed";
  TempDir cache("plexus-matrix");  // the cost-model cache of one world
  ASSERT_FALSE(cache.path().empty()) << "mkdtemp failed";

  EnvList env = {{"PLEXUS_TIMEOUT_MS", "60000"},
                 {"PLEXUS_CACHE_DIR", cache.path()},
                 {"PLEXUS_COST_MODEL", "2.5,0.1,0.05"},  // no measuring: every algorithm is forced
                 {"PLEXUS_CHUNK_BYTES", "65536"},
                 {"PLEXUS_CHECK_ARGS", n == 3 ? "1" : "0"}};
  if (transport == "ucx") {
    env.push_back({"PLEXUS_TRANSPORT", "ucx"});
  } else {
    env.push_back({"PLEXUS_TRANSPORT", "ofi"});
    env.push_back({"PLEXUS_FI_PROVIDER", transport});
  }
  const std::string world = transport + ", " + std::to_string(n) + " ranks";
  const auto outcomes = run_ranks(
      n, [&](int rank) { return matrix_rank(rank, n, world, transport.c_str(), cases, &board); },
      540.0, env);
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << world << ", " << cases.size() << " cases: " << why;
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(Shm, CollectivesMatrix,
                         ::testing::Combine(::testing::Values(std::string("shm")),
                                            ::testing::Values(1, 2, 3, 4, 5, 8)),
                         param_name);
INSTANTIATE_TEST_SUITE_P(Tcp, CollectivesMatrix,
                         ::testing::Combine(::testing::Values(std::string("tcp")),
                                            ::testing::Values(1, 2, 3, 4, 5, 8)),
                         param_name);
INSTANTIATE_TEST_SUITE_P(Ucx, CollectivesMatrix,
                         ::testing::Combine(::testing::Values(std::string("ucx")),
                                            ::testing::Values(1, 2, 3, 4, 5, 8)),
                         param_name);

}  // namespace
}  // namespace plexus::test
