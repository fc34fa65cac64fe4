// ipc_schedule_test.cpp - the piece schedule of the CUDA IPC collectives
// (comm/device/ipc_schedule.h) on the CPU: no GPU, no processes.
//
// Two kinds of checks:
//  - Static, over n = 2..16, element sizes 1..8, counts around the piece size and in-place or
//    not: every rank writes only its own slot, inside every buffer's bounds, after WaitWritable;
//    publishes (Arrive, Reduced) only after a Sync that ends its queued copies; every element of
//    recvbuf is written exactly once (none of the in-place block, none off the root of a
//    reduce); the reduced parts of allreduce and reduce are shm_pieces.h's piece_part.
//  - A simulated world: n ranks run the steps of a sequence of calls against host memory (int64
//    slots of two buffers, the `arrived`/`reduced` counters of peer memory), interleaved by a
//    seeded random scheduler; a queued copy or reduction runs at once, at the next Sync, or at a
//    random moment between (the ways a GPU stream may run it). Every result is checked against
//    its closed form, so a slot overwritten while a peer still reads it, or read before it is
//    written, shows up as a wrong value; a wait that can never end fails as a deadlock.
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "comm/algorithms/shm_pieces.h"
#include "comm/device/ipc_schedule.h"
#include "comm/tuning/algorithm_id.h"

namespace plexus::comm::device {
namespace {

constexpr Collective kCollectives[] = {Collective::Allreduce, Collective::Reduce,
                                       Collective::Broadcast, Collective::ReduceScatter,
                                       Collective::Allgather};

std::string name(Collective c) { return std::string(collective_name(c)); }

// Elements this rank's call reads from sendbuf and may write to recvbuf (device_args.h).
size_t send_count(const IpcCall& c) {
  if (c.collective == Collective::ReduceScatter) return c.count * static_cast<size_t>(c.n);
  if (c.collective == Collective::Broadcast && c.rank != c.root) return 0;
  return c.count;
}
size_t recv_count(const IpcCall& c) {
  if (c.collective == Collective::Allgather) return c.count * static_cast<size_t>(c.n);
  if (c.collective == Collective::Reduce && c.rank != c.root) return 0;
  return c.count;
}

// Times element i of recvbuf is written in a correct call.
int expected_writes(const IpcCall& c, size_t i) {
  switch (c.collective) {
    case Collective::Reduce:
      return c.rank == c.root ? 1 : 0;
    case Collective::Broadcast:
      return c.rank == c.root && c.in_place ? 0 : 1;
    case Collective::Allgather:
      return c.in_place && i / c.count == static_cast<size_t>(c.rank) ? 0 : 1;
    default:
      return 1;
  }
}

// ---- static checks -----------------------------------------------------------------------------

// Checks every piece of `c`; returns the first problem, or "".
std::string check_steps(const IpcCall& c) {
  const IpcPieces layout = ipc_pieces(c);
  const std::string what = name(c.collective) + " n " + std::to_string(c.n) + " rank " +
                           std::to_string(c.rank) + " count " + std::to_string(c.count) +
                           " elem " + std::to_string(c.elem) + (c.in_place ? " in place" : "");
  if (layout.per_piece == 0) return what + ": no piece fits a slot";
  if (layout.pieces != (c.count + layout.per_piece - 1) / layout.per_piece) {
    return what + ": " + std::to_string(layout.pieces) + " pieces";
  }
  std::vector<int> writes(recv_count(c), 0);
  std::vector<Step> steps;
  bool queued = false;  // device work queued since the last Sync, across pieces
  for (size_t k = 0; k < layout.pieces; ++k) {
    const std::string at = what + " piece " + std::to_string(k) + ": ";
    const size_t off = k * layout.per_piece;
    const size_t len = std::min(layout.per_piece, c.count - off);
    steps.clear();
    ipc_piece_steps(c, k, &steps);
    bool writable = false, reduced_part = false;
    for (const Step& s : steps) {
      switch (s.kind) {
        case StepKind::WaitWritable: writable = true; break;
        case StepKind::Sync: queued = false; break;
        case StepKind::Arrive:
        case StepKind::Reduced:
          if (queued) return at + "publishes with device work still queued (no Sync)";
          break;
        case StepKind::Copy:
        case StepKind::Reduce: {
          queued = true;
          if (s.count == 0) return at + "a step of 0 elements";
          const auto bounds = [&](const Place& p, bool reads) -> std::string {
            const size_t limit = p.buffer == Buffer::Slot ? c.slot_elems
                                 : p.buffer == Buffer::Send ? send_count(c)
                                                            : recv_count(c);
            if (p.offset + s.count > limit) {
              return at + (reads ? "reads " : "writes ") + std::to_string(s.count) +
                     " elements at " + std::to_string(p.offset) + " of a buffer of " +
                     std::to_string(limit);
            }
            return "";
          };
          if (std::string e = bounds(s.dst, false); !e.empty()) return e;
          if (s.kind == StepKind::Copy) {
            if (std::string e = bounds(s.src, true); !e.empty()) return e;
          } else if (std::string e = bounds({Buffer::Slot, 0, s.src.offset}, true); !e.empty()) {
            return e;
          }
          if (s.dst.buffer == Buffer::Send) return at + "writes sendbuf";
          if (s.dst.buffer == Buffer::Slot) {
            if (s.dst.rank != c.rank) return at + "writes rank " + std::to_string(s.dst.rank) +
                                             "'s slot";
            if (!writable) return at + "writes its slot before WaitWritable";
          }
          if (s.dst.buffer == Buffer::Recv) {
            for (size_t i = 0; i < s.count; ++i) ++writes[s.dst.offset + i];
          }
          if (s.kind == StepKind::Reduce &&
              (c.collective == Collective::Allreduce || c.collective == Collective::Reduce)) {
            const PieceSpan part = piece_part(len, c.n, c.rank, c.elem);
            if (s.dst.offset != part.begin || s.src.offset != part.begin ||
                s.count != part.count) {
              return at + "reduces [" + std::to_string(s.src.offset) + ", +" +
                     std::to_string(s.count) + ") but piece_part is [" +
                     std::to_string(part.begin) + ", +" + std::to_string(part.count) + ")";
            }
            reduced_part = true;
          }
          break;
        }
        default: break;
      }
    }
    if ((c.collective == Collective::Allreduce || c.collective == Collective::Reduce) &&
        !reduced_part && piece_part(len, c.n, c.rank, c.elem).count > 0) {
      return at + "reduces no part";
    }
  }
  for (size_t i = 0; i < writes.size(); ++i) {
    if (writes[i] != expected_writes(c, i)) {
      return what + ": recvbuf element " + std::to_string(i) + " written " +
             std::to_string(writes[i]) + " times, want " + std::to_string(expected_writes(c, i));
    }
  }
  return "";
}

TEST(IpcSchedule, EveryStepInBoundsAndEveryElementWrittenOnce) {
  int checked = 0;
  for (int n : {2, 3, 4, 5, 7, 8, 16}) {
    for (size_t elem : {size_t{1}, size_t{2}, size_t{4}, size_t{8}}) {
      // A 4 KiB slot (the smallest ipc_slots.cpp makes) and an odd small one.
      for (size_t slot_elems : {4096 / elem, size_t{16} * static_cast<size_t>(n) + 3}) {
        for (size_t count : {size_t{1}, size_t{7}, slot_elems - 1, slot_elems, slot_elems + 1,
                             3 * slot_elems + 17}) {
          for (Collective coll : kCollectives) {
            for (bool in_place : {false, true}) {
              for (int rank = 0; rank < n; ++rank) {
                IpcCall c;
                c.collective = coll;
                c.n = n;
                c.rank = rank;
                c.root = static_cast<int>(count % static_cast<size_t>(n));
                c.count = count;
                c.elem = elem;
                c.slot_elems = slot_elems;
                c.in_place = in_place;
                const std::string why = check_steps(c);
                ASSERT_EQ(why, "");
                ++checked;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 2 * 5 * 6 * 2 * 4 * (2 + 3 + 4 + 5 + 7 + 8 + 16));
}

TEST(IpcSchedule, ReduceScatterBlocksStartOnCacheLines) {
  IpcCall c;
  c.collective = Collective::ReduceScatter;
  c.n = 3;
  c.elem = 4;
  c.slot_elems = 4096 / 4;
  c.count = 10000;
  const IpcPieces layout = ipc_pieces(c);
  EXPECT_EQ(layout.per_piece, 336u);  // 1024 / 3 = 341, rounded down to 16-element lines
  EXPECT_EQ(layout.pieces, 30u);      // ceil(10000 / 336)
  c.collective = Collective::Allgather;
  EXPECT_EQ(ipc_pieces(c).per_piece, 1024u);
  EXPECT_FALSE(has_ipc_schedule(Collective::Alltoall));
  EXPECT_TRUE(has_ipc_schedule(Collective::ReduceScatter));
}

// ---- the simulated world -------------------------------------------------------------------

constexpr int64_t kM = 1000003;   // rank q's element i is q * kM + i
constexpr int64_t kPoison = -7;
constexpr int64_t kScale = 3;     // a pre-multiplied sum's scalar

struct RankCall {
  IpcCall call;
  bool premul = false;
  std::vector<int64_t> memory;  // sendbuf and recvbuf (one region in place)
  std::vector<int64_t> other;   // sendbuf out of place
  int64_t* send = nullptr;
  int64_t* recv = nullptr;
  std::vector<int> writes;      // per recvbuf element
};

struct Program {
  std::vector<Step> steps;
  std::vector<uint32_t> piece;  // g of each step
  std::vector<size_t> call;     // index into the calls of each step
  size_t pc = 0;
  std::deque<std::function<void()>> queued;  // the "stream"
};

class World {
 public:
  World(int n, size_t slot_elems) : n_(n), slot_elems_(slot_elems), programs_(n) {
    slots_.assign(static_cast<size_t>(n) * 2, std::vector<int64_t>(slot_elems, kPoison));
    arrived_.assign(static_cast<size_t>(n), 0);
    reduced_.assign(static_cast<size_t>(n), 0);
  }

  void add_call(Collective coll, size_t count, int root, bool in_place, bool premul) {
    const size_t index = calls_.size();
    calls_.emplace_back(static_cast<size_t>(n_));
    size_t pieces = 0;
    for (int r = 0; r < n_; ++r) {
      RankCall& rc = calls_[index][static_cast<size_t>(r)];
      IpcCall& c = rc.call;
      c = {coll, n_, r, root, count, 8, slot_elems_, false};
      rc.premul = premul;
      const size_t nb = count * static_cast<size_t>(n_);
      const size_t block = static_cast<size_t>(r) * count;
      if (in_place && coll == Collective::ReduceScatter) {
        rc.memory.assign(nb, kPoison);
        rc.send = rc.memory.data();
        rc.recv = rc.memory.data() + block;
      } else if (in_place && coll == Collective::Allgather) {
        rc.memory.assign(nb, kPoison);
        rc.recv = rc.memory.data();
        rc.send = rc.memory.data() + block;
      } else if (in_place && !(coll == Collective::Broadcast && r != root)) {
        rc.memory.assign(count, kPoison);
        rc.send = rc.recv = rc.memory.data();
      } else {
        rc.memory.assign(recv_count(c) == 0 ? count : recv_count(c), kPoison);
        rc.other.assign(coll == Collective::ReduceScatter ? nb : count, kPoison);
        rc.recv = rc.memory.data();
        rc.send = rc.other.data();
      }
      c.in_place = coll == Collective::ReduceScatter ? rc.recv == rc.send + block
                   : coll == Collective::Allgather   ? rc.send == rc.recv + block
                                                     : rc.send == rc.recv;
      if (!(coll == Collective::Broadcast && r != root)) {
        for (size_t i = 0; i < send_count(c); ++i) rc.send[i] = r * kM + static_cast<int64_t>(i);
      }
      rc.writes.assign(recv_count(c), 0);
      pieces = ipc_pieces(c).pieces;
      Program& p = programs_[static_cast<size_t>(r)];
      std::vector<Step> steps;
      for (size_t k = 0; k < pieces; ++k) {
        steps.clear();
        ipc_piece_steps(c, k, &steps);
        for (const Step& s : steps) {
          p.steps.push_back(s);
          p.piece.push_back(next_piece_ + static_cast<uint32_t>(k));
          p.call.push_back(index);
        }
      }
      p.steps.push_back(Step{});  // the executor's last Sync
      p.piece.push_back(next_piece_);
      p.call.push_back(index);
    }
    next_piece_ += static_cast<uint32_t>(pieces);
  }

  // Runs every rank to its end; `flush` is the chance per tick that a queued step of some rank
  // runs before its Sync (1: every step runs when issued). "" or what went wrong.
  std::string run(double flush, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    for (long tick = 0; tick < 100000000L; ++tick) {
      bool done = true;
      for (const Program& p : programs_) done = done && p.pc == p.steps.size();
      if (done) return error_;
      if (flush < 1.0 && coin(rng) < flush) {
        Program& q = programs_[rng() % static_cast<unsigned>(n_)];
        if (!q.queued.empty()) {
          q.queued.front()();
          q.queued.pop_front();
        }
      }
      const int r = static_cast<int>(rng() % static_cast<unsigned>(n_));
      if (!advance(r, flush >= 1.0) && all_blocked()) return "deadlock: " + where_all();
      if (!error_.empty()) return error_;
    }
    return "no end after 10^8 ticks";
  }

  // Checks every call's results against the closed forms.
  std::string check() const {
    const int64_t n = n_;
    for (const auto& ranks : calls_) {
      for (const RankCall& rc : ranks) {
        const IpcCall& c = rc.call;
        const int64_t scale = rc.premul ? kScale : 1;
        const int64_t rank_sum = kM * n * (n - 1) / 2;
        for (size_t i = 0; i < rc.writes.size(); ++i) {
          const std::string at = name(c.collective) + " count " + std::to_string(c.count) +
                                 (c.in_place ? " in place" : "") + " rank " +
                                 std::to_string(c.rank) + " index " + std::to_string(i);
          if (rc.writes[i] != expected_writes(c, i)) {
            return at + ": written " + std::to_string(rc.writes[i]) + " times";
          }
          const auto ii = static_cast<int64_t>(i);
          int64_t want = 0;
          switch (c.collective) {
            case Collective::Allreduce:
            case Collective::Reduce: want = scale * (rank_sum + n * ii); break;
            case Collective::Broadcast: want = c.root * kM + ii; break;
            case Collective::ReduceScatter:
              want = scale * (rank_sum + n * (c.rank * static_cast<int64_t>(c.count) + ii));
              break;
            default:
              want = static_cast<int64_t>(i / c.count) * kM + static_cast<int64_t>(i % c.count);
          }
          if (rc.recv[i] != want) {
            return at + ": got " + std::to_string(rc.recv[i]) + ", want " + std::to_string(want);
          }
        }
      }
    }
    return "";
  }

 private:
  int64_t* at(int r, size_t call, const Place& p, uint32_t g, size_t count) {
    RankCall& rc = calls_[call][static_cast<size_t>(r)];
    size_t limit = 0;
    int64_t* base = nullptr;
    switch (p.buffer) {
      case Buffer::Send: base = rc.send; limit = send_count(rc.call); break;
      case Buffer::Recv: base = rc.recv; limit = recv_count(rc.call); break;
      default:
        base = slots_[static_cast<size_t>(p.rank) * 2 + g % 2].data();
        limit = slot_elems_;
    }
    if (p.offset + count > limit) {
      error_ = "rank " + std::to_string(r) + ": out of bounds";
      return nullptr;
    }
    return base + p.offset;
  }

  bool ready(int r, const Step& s, uint32_t g) const {
    const auto ru = static_cast<size_t>(r);
    switch (s.kind) {
      case StepKind::WaitWritable:
        for (size_t q = 0; q < arrived_.size(); ++q) {
          if (q != ru && arrived_[q] < g) return false;
        }
        return true;
      case StepKind::WaitAllArrived:
        for (uint32_t a : arrived_) {
          if (a < g + 1) return false;
        }
        return true;
      case StepKind::WaitArrived: return arrived_[static_cast<size_t>(s.peer)] >= g + 1;
      case StepKind::WaitReduced: return reduced_[static_cast<size_t>(s.peer)] >= g + 1;
      default: return true;
    }
  }

  // Runs rank r's next step; false when it waits.
  bool advance(int r, bool at_once) {
    Program& p = programs_[static_cast<size_t>(r)];
    if (p.pc == p.steps.size()) return false;
    const Step s = p.steps[p.pc];
    const uint32_t g = p.piece[p.pc];
    const size_t call = p.call[p.pc];
    if (!ready(r, s, g)) return false;
    ++p.pc;
    switch (s.kind) {
      case StepKind::Arrive: publish(&arrived_[static_cast<size_t>(r)], g + 1); return true;
      case StepKind::Reduced: publish(&reduced_[static_cast<size_t>(r)], g + 1); return true;
      case StepKind::Sync:
        while (!p.queued.empty()) {
          p.queued.front()();
          p.queued.pop_front();
        }
        return true;
      case StepKind::Copy:
      case StepKind::Reduce: {
        auto work = [this, r, s, g, call] { execute(r, s, g, call); };
        if (at_once) {
          work();
        } else {
          p.queued.push_back(work);
        }
        return true;
      }
      default: return true;
    }
  }

  void execute(int r, const Step& s, uint32_t g, size_t call) {
    RankCall& rc = calls_[call][static_cast<size_t>(r)];
    int64_t* dst = at(r, call, s.dst, g, s.count);
    if (dst == nullptr) return;
    if (s.kind == StepKind::Copy) {
      const int64_t* src = at(r, call, s.src, g, s.count);
      if (src == nullptr) return;
      const int64_t scale = s.scaled && rc.premul ? kScale : 1;
      for (size_t i = 0; i < s.count; ++i) dst[i] = src[i] * scale;
    } else {
      std::vector<int64_t> sum(s.count, 0);
      for (int j = 0; j < n_; ++j) {
        const int64_t* src =
            at(r, call, {Buffer::Slot, (r + j) % n_, s.src.offset}, g, s.count);
        if (src == nullptr) return;
        for (size_t i = 0; i < s.count; ++i) sum[i] += src[i];
      }
      std::copy(sum.begin(), sum.end(), dst);
    }
    if (s.dst.buffer == Buffer::Recv) {
      for (size_t i = 0; i < s.count; ++i) ++rc.writes[s.dst.offset + i];
    }
  }

  void publish(uint32_t* word, uint32_t value) {
    if (value < *word) error_ = "a counter went back";
    *word = value;
  }

  bool all_blocked() const {
    for (int r = 0; r < n_; ++r) {
      const Program& p = programs_[static_cast<size_t>(r)];
      if (p.pc < p.steps.size() && ready(r, p.steps[p.pc], p.piece[p.pc])) return false;
    }
    return true;
  }

  std::string where_all() const {
    std::string text;
    for (int r = 0; r < n_; ++r) {
      const Program& p = programs_[static_cast<size_t>(r)];
      text += " rank " + std::to_string(r) + " at step " + std::to_string(p.pc) + "/" +
              std::to_string(p.steps.size());
    }
    return text;
  }

  int n_;
  size_t slot_elems_;
  std::vector<Program> programs_;
  std::vector<std::vector<int64_t>> slots_;  // rank * 2 + buffer
  std::vector<uint32_t> arrived_, reduced_;
  std::deque<std::vector<RankCall>> calls_;  // deque: RankCall pointers stay valid
  uint32_t next_piece_ = 0;
  std::string error_;
};

// A sequence of every collective, in place and not, over counts around the slot size, with
// the ranks running ahead of each other across calls; run with each way of completing the
// queued steps.
TEST(IpcSchedule, SimulatedWorldsGiveTheClosedForms) {
  const size_t slot = 40;  // int64 elements: 5 lines of 64 bytes
  int worlds = 0;
  for (int n : {2, 3, 4, 7}) {
    for (double flush : {1.0, 0.0, 0.3}) {
      for (uint32_t seed : {1u, 2u}) {
        World world(n, slot);
        int calls = 0;
        for (size_t count : {size_t{1}, size_t{39}, size_t{40}, size_t{41}, size_t{203}}) {
          for (Collective coll : kCollectives) {
            for (bool in_place : {false, true}) {
              const bool premul = !in_place && coll != Collective::Broadcast &&
                                  coll != Collective::Allgather;
              world.add_call(coll, count, static_cast<int>((count + seed) % n), in_place,
                             premul);
              ++calls;
            }
          }
        }
        const std::string what = "n " + std::to_string(n) + " flush " + std::to_string(flush) +
                                 " seed " + std::to_string(seed) + ": ";
        ASSERT_EQ(world.run(flush, seed), "") << what;
        ASSERT_EQ(world.check(), "") << what;
        EXPECT_EQ(calls, 50);
        ++worlds;
      }
    }
  }
  EXPECT_EQ(worlds, 24);
}

}  // namespace
}  // namespace plexus::comm::device
