// peer_memory.h - direct load/store access to the staging buffers of the other ranks on this
// host: the host analogue of NVLink peer access.
//
// Every rank of a communicator whose ranks all share a host maps one segment (peer_segment.h)
// holding, per rank, two staging buffers ("slots") of slot_bytes and two counters. The segment
// is made collectively by open(): rank 0 creates it and sends its name to the others over the
// transport, each maps it and answers, and rank 0 unlinks the name as soon as every rank has
// mapped it (so nothing stays in /dev/shm, even if a rank dies later); a last message tells
// everyone whether all succeeded, so every rank decides alike.
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
// with a message naming the operation, this rank and the peer. After a failure the counters of
// the ranks no longer agree: every later wait fails at once (rebuild the communicator).
// Used by one thread at a time (the communicator's executor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "comm/transport/peer_memory/peer_segment.h"
#include "comm/transport/transport.h"
#include "plexus/plexus.h"

namespace plexus::comm {

class AsyncState;

class PeerMemory {
 public:
  // Collective over every rank of `transport`, which must all run on this host. Uses the tags
  // tag_base | 0..2. slot_bytes is rounded up to a multiple of 4096 and at most kMaxSlotBytes.
  // On success *out is the mapping, or NULL when some rank did not want it (`wanted` false) or
  // could not create or map the segment (logged; the caller goes on without peer memory), the
  // same on every rank. Errors are the transport's (a peer lost, a timeout).
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

  // PLX_SUCCESS, or the error of an earlier failed wait (the counters no longer agree).
  plx_result_t usable(const char* op) const;

  void arrive(uint32_t piece) { futex_publish(segment_.words(rank_).arrived, piece + 1); }
  void reduced(uint32_t piece) { futex_publish(segment_.words(rank_).reduced, piece + 1); }

  // Every peer has arrived at piece - 1 (this rank may overwrite its buffer of `piece`).
  plx_result_t wait_writable(uint32_t piece, const char* op);
  // `peer` has arrived at / reduced `piece`.
  plx_result_t wait_arrived(int peer, uint32_t piece, const char* op);
  plx_result_t wait_reduced(int peer, uint32_t piece, const char* op);
  // Every rank (this one included, trivially) has arrived at / reduced `piece`.
  plx_result_t wait_all_arrived(uint32_t piece, const char* op);
  plx_result_t wait_all_reduced(uint32_t piece, const char* op);

  PeerMemory(const PeerMemory&) = delete;
  PeerMemory& operator=(const PeerMemory&) = delete;
  ~PeerMemory();

 private:
  PeerMemory(int rank, int size, int timeout_ms, std::shared_ptr<AsyncState> async);
  plx_result_t wait_word(int peer, bool arrived_word, uint32_t target, const char* op);

  SegmentMapping segment_;
  int rank_ = 0;
  int size_ = 1;
  size_t slot_bytes_ = 0;
  int timeout_ms_ = 300000;
  std::shared_ptr<AsyncState> async_;
  uint32_t next_piece_ = 0;
  uint32_t all_arrived_ = 0;  // every peer's `arrived` is known to be at least this
  plx_result_t failed_ = PLX_SUCCESS;
  std::string failure_;
};

}  // namespace plexus::comm
