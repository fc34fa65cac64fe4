// peer_memory.h - direct load/store access to the staging buffers of the other ranks on this
// host: the host analogue of NVLink peer access.
//
// The ranks of a communicator that share a host (all of them, or one host's ranks of a
// communicator spanning hosts: the "members") map one segment (peer_segment.h) holding, per
// member, two staging buffers ("slots") of slot_bytes and two counters. rank() and size() are
// the member's index and the number of members (a local rank and local size), and slots and
// counters are numbered that way; messages name communicator ranks. The segment is made
// collectively by the members in open(): the first member creates it and sends its name to the
// others over the communicator's transport, each maps it and answers, and the creator unlinks the
// name as soon as every member has mapped it (so nothing stays in /dev/shm, even if a rank dies
// later); a last message tells every member whether all succeeded, so they decide alike.
//
// Synchronisation is by pieces. The collectives using it cut their buffers into pieces that fit
// a slot and number them with one counter per communicator (next_piece(), identical on every
// rank since every rank runs the same calls); piece g uses buffer g % 2 of each slot. A rank
// publishes `arrived` = g + 1 once it has staged piece g (and is done with every earlier piece),
// and `reduced` = g + 1 once its part of piece g is reduced. Before writing its buffer for piece
// g a rank calls wait_writable(g): every peer must have arrived at piece g - 1, i.e. finished
// reading piece g - 2, the last one that used the same buffer. So two buffers let piece g + 1 be
// staged while peers still read piece g, with no barrier per piece.
//
// Waiting blocks (futex_word.h) in short sleeps; after each one it checks the communicator's
// abort flag (PLX_ERROR_ABORTED), a lost peer on its AsyncState or the peer's process gone
// (PLX_ERROR_REMOTE), and PLEXUS_TIMEOUT_MS without the awaited progress (PLX_ERROR_TIMEOUT),
// with a message naming the operation, this rank and the peer. A caller with other work in
// flight (the network rings of a hierarchical allreduce) passes it as IdleWork: the wait then
// runs it between shorter sleeps, so that work keeps moving while this rank waits for its host.
// After a failure the counters of the ranks no longer agree: every later wait fails at once
// (rebuild the communicator). Used by one thread at a time (the communicator's executor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/transport/peer_memory/peer_segment.h"
#include "comm/transport/peer_memory/shared_buffer.h"
#include "comm/transport/transport.h"
#include "plexus/plexus.h"

namespace plexus::comm {

class AsyncState;

// Work a waiting rank does between its sleeps (see above); a failure ends the wait with it.
using IdleWork = std::function<plx_result_t()>;

class PeerMemory {
 public:
  // Collective over `members` (ranks of `transport`, at least one, this rank among them, all
  // on this host; member i gets rank() i), run by every member with the same list. Uses the
  // tags tag_base | 0..2 between members only, so disjoint member lists (the hosts of one
  // communicator) may open their segments with the same tag_base at once. slot_bytes is rounded
  // up to a multiple of 4096 and at most kMaxSlotBytes. On success *out is the mapping, or NULL
  // when some member did not want it (`wanted` false) or could not create or map the segment
  // (logged; the caller goes on without peer memory), the same on every member. Errors are the
  // transport's (a peer lost, a timeout), or PLX_ERROR_INTERNAL when this rank is not a member.
  static plx_result_t open(Transport& transport, uint64_t tag_base, std::vector<int> members,
                           bool wanted, size_t slot_bytes, int timeout_ms,
                           std::shared_ptr<AsyncState> async, std::unique_ptr<PeerMemory>* out);
  // The same over every rank of `transport` (a communicator on one host).
  static plx_result_t open(Transport& transport, uint64_t tag_base, bool wanted,
                           size_t slot_bytes, int timeout_ms, std::shared_ptr<AsyncState> async,
                           std::unique_ptr<PeerMemory>* out);
  static constexpr size_t kMaxSlotBytes = size_t{16} << 20;

  int rank() const { return rank_; }
  int size() const { return size_; }
  size_t slot_bytes() const { return slot_bytes_; }
  // Buffer of piece `piece` in `rank`'s slot.
  unsigned char* slot(int rank, uint32_t piece) const {
    return segment_.slot(rank, static_cast<int>(piece % 2));
  }

  // The number of the next piece; `count` pieces are reserved.
  uint32_t next_pieces(uint32_t count) {
    const uint32_t first = next_piece_;
    next_piece_ += count;
    return first;
  }

  // Work every wait runs between its sleeps when its caller passes none (NULL: none), until
  // reset: a group's sends and receives posted on the transport before its collectives, which
  // a provider such as libfabric's shm moves only while the receiver polls it (run_task.cpp).
  // Not owned; the caller keeps it alive while set.
  void set_background_work(const IdleWork* work) { background_ = work; }

  // PLX_SUCCESS, or the error of an earlier failed wait (the counters no longer agree).
  plx_result_t usable(const char* op) const;

  void arrive(uint32_t piece) { futex_publish(segment_.words(rank_).arrived, piece + 1); }
  void reduced(uint32_t piece) { futex_publish(segment_.words(rank_).reduced, piece + 1); }

  // The communicator rank of member `member` (messages name these).
  int member_rank(int member) const { return members_[static_cast<size_t>(member)]; }

  // Every peer has arrived at piece - 1 (this rank may overwrite its buffer of `piece`).
  plx_result_t wait_writable(uint32_t piece, const char* op, const IdleWork* idle = nullptr);
  // `peer` (a member index) has arrived at / reduced `piece`.
  plx_result_t wait_arrived(int peer, uint32_t piece, const char* op,
                            const IdleWork* idle = nullptr);
  plx_result_t wait_reduced(int peer, uint32_t piece, const char* op);
  // Every member (this one included, trivially) has arrived at / reduced `piece`.
  plx_result_t wait_all_arrived(uint32_t piece, const char* op, const IdleWork* idle = nullptr);
  plx_result_t wait_all_reduced(uint32_t piece, const char* op);

  // Notes: a small record (at most kNoteBytes) a member posts with a piece and every member
  // reads, with no wait and no message of its own; the collectives compare their argument
  // signatures this way (comm/core/signature.h). post_note(g) before arrive(g) writes buffer
  // g % 2 of this member's notes; a peer reads it (read_notes) once it has seen this member
  // arrive at g and before it arrives at g + 1 itself. The buffer is written again at piece
  // g + 2, after wait_writable(g + 2), i.e. after every peer arrived at g + 1: two suffice.
  static constexpr size_t kNoteBytes = kSegmentNoteBytes;
  // Each note is stamped with its piece, so a member that arrived at a piece without posting one
  // (its PLEXUS_CHECK_ARGS differs) is caught instead of its old note being read.
  void post_note(uint32_t piece, const void* note, size_t bytes) {
    RankWords& words = segment_.words(rank_);
    std::memcpy(words.notes[piece % 2], note, bytes);
    words.note_piece[piece % 2] = piece + 1;
  }
  // Copies member i's note of `piece` to all + i * bytes, for every member; PLX_ERROR_MISMATCH
  // (naming `op`, this rank and the peer; peer memory then unusable, as the members' pieces no
  // longer agree) when a member posted none with it.
  plx_result_t read_notes(uint32_t piece, size_t bytes, void* all, const char* op);
  // A piece that carries notes and nothing else: reserves it, waits until it is writable,
  // posts `note`, arrives, waits until every member has arrived, and reads every note into
  // `all` (size() * bytes). Every member must call it alike, in the same order relative to the
  // other pieces' calls. Errors as the waits': PLX_ERROR_ABORTED, PLX_ERROR_REMOTE (a peer
  // lost), PLX_ERROR_TIMEOUT (a peer did not come within PLEXUS_TIMEOUT_MS), each naming `op`,
  // this rank, the peer and "<what> <piece>" (an empty op: no prefix before "rank R");
  // PLX_ERROR_INTERNAL for a note over kNoteBytes.
  plx_result_t exchange_notes(const void* note, size_t bytes, void* all, const char* op,
                              const char* what);

  // Member `peer`'s process id as this process can use it (/proc/<pid>), or 0 when it runs in
  // another pid namespace (then its plx_mem_alloc buffers cannot be mapped from here).
  pid_t peer_pid(int peer) const;
  // The peers' plx_mem_alloc allocations mapped here (the registered-buffer paths,
  // comm/algorithms/shm_registered.h); unmapped with the segment.
  PeerAllocations& allocations() { return allocations_; }
  // How the last collective through this segment moved its data, for plx_comm_last_algorithm:
  // the caller sets Staged before a call; registered_end (comm/algorithms/shm_registered.h)
  // sets Registered.
  enum class Path : uint8_t { Staged, Registered };
  Path last_path = Path::Staged;

  PeerMemory(const PeerMemory&) = delete;
  PeerMemory& operator=(const PeerMemory&) = delete;
  ~PeerMemory();

 private:
  PeerMemory(std::vector<int> members, int rank, int timeout_ms,
             std::shared_ptr<AsyncState> async);
  // Waits until `peer`'s `word` reaches target; `what` ("stage piece") and target - 1 name
  // the awaited step in failure messages.
  plx_result_t wait_word(int peer, FutexWord RankWords::*word, uint32_t target, const char* op,
                         const char* what, const IdleWork* idle);
  plx_result_t fail(plx_result_t code, std::string message);

  SegmentMapping segment_;
  PeerAllocations allocations_;
  std::vector<int> members_;  // communicator rank of each member
  int rank_ = 0;
  int size_ = 1;
  size_t slot_bytes_ = 0;
  int timeout_ms_ = 300000;
  int spin_us_ = 200;  // PLEXUS_SPIN_US: how long a wait polls (yielding) before it sleeps
  std::shared_ptr<AsyncState> async_;
  const IdleWork* background_ = nullptr;
  uint32_t next_piece_ = 0;
  uint32_t all_arrived_ = 0;  // every peer's `arrived` is known to be at least this
  plx_result_t failed_ = PLX_SUCCESS;
  std::string failure_;
};

}  // namespace plexus::comm
