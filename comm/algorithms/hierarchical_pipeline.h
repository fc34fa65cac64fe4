// hierarchical_pipeline.h - the network phase of the pipelined hierarchical allreduce
// (hierarchical_allreduce.cpp): an allreduce of one lane's block of one segment between the
// hosts, stepped without blocking so that the host's ranks run the intra-host phases of the
// neighbouring segments while it crosses the network. Two schedules share the stepping (Lane):
// the ring below, and recursive halving and doubling (lane_halving.h), which the cost model
// picks where the ring's 2(K-1) latencies outweigh its bytes (many hosts, small blocks).
//
// The ring is Patarasuk & Yuan's (JPDC 69(2), 2009) over the lane group (host_layout.h), one
// rank per host, K members: the block is cut into K near-equal shards (slices.h Blocks), and
// member h, in step t,
//
//   reduce-scatter  t = 0 .. K-2:   send shard (h - t) mod K, receive shard (h - t - 1) mod K
//                                   into staging and reduce it into the block; after the last
//                                   step shard (h + 1) mod K is final (PLX_AVG divides it, once)
//   allgather       a = t - (K-1):  send shard (h + 1 - a) mod K, receive shard (h - a) mod K
//                                   in place
//
//   K = 2, member 0:  step 0  send s0, recv s1 (+=)   step 1  send s1, recv s0
//
// Step t is message index t of the lane's TagWindow in each direction. A step ends when both its
// send and its receive have completed; only then is the next one posted, so a buffer is never
// written while a send reads it. Shards of no elements send nothing (both ends agree). Bytes on
// the wire per member: 2(K-1)/K of the block each way.
//
// Progress. advance() never blocks: it retires finished steps and posts the next ones.
// wait_step() waits for one step, finish() for all. The transport progresses every posted
// request in any wait (transport.h), so a step posted before a blocking intra-host ring moves
// across the network during it.
//
// Staging: a lane receives into a buffer of its own (a shard on the ring, the block with
// halving), taken from the call's StagingPool when one is given and handed back to it when the
// lane ends, so that a call's segments reuse the buffers of the few segments in flight instead of
// allocating one per lane and segment (lane steps may be up to 16 MiB, hierarchical_segments.h:
// a fresh buffer of that size is a fresh mapping whose pages fault in, about 1.6 ms per 32 MiB
// on a host at 0.2 us a page, against a segment's network stage of 1.4 ms on p5).
//
// Failure: a failed wait may leave requests posted; the lane then leaks its requests and staging
// on purpose (deliberate_leak.h), as Pipeline does.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "comm/algorithms/group_ring.h"
#include "comm/transport/transport.h"
#include "plexus/plexus.h"

namespace plexus::comm {

// Staging buffers handed back by finished lanes for later ones (see the header). Not
// thread-safe: one call's lanes, on its thread. It must outlive the lanes given it.
class StagingPool {
 public:
  // A buffer of at least `bytes` bytes (its size in *capacity): the smallest handed-back one
  // that is large enough, else a new one. Throws std::bad_alloc as new[] does.
  std::unique_ptr<unsigned char[]> take(size_t bytes, size_t* capacity);
  // Keeps `buffer` (of `capacity` bytes) for a later take; drops it if it cannot (never throws:
  // lanes give from their destructors).
  void give(std::unique_ptr<unsigned char[]> buffer, size_t capacity) noexcept;
  size_t allocations() const { return allocations_; }  // new buffers made so far

 private:
  std::vector<std::pair<size_t, std::unique_ptr<unsigned char[]>>> free_;
  size_t allocations_ = 0;
};

// One lane's allreduce on this rank: `count` elements at `block` (in place) over `members`
// (one rank per host, this rank at index `me`); PLX_AVG divides by `divisor` (> 0) once.
struct LaneBlock {
  std::vector<int> members;
  size_t me = 0;
  unsigned char* block = nullptr;
  size_t count = 0;
  plx_datatype_t datatype = PLX_FLOAT32;
  plx_red_op_t op = PLX_SUM;
  size_t divisor = 1;
};

// A lane's allreduce as a sequence of steps, each at most one send and one receive with message
// index = the step number; a schedule says what each step posts and what it does once both are
// done.
class Lane {
 public:
  virtual ~Lane();
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  // Posts step 0.
  plx_result_t start();
  // Retires every finished step and posts the next; never blocks.
  plx_result_t advance();
  // Waits for the step in flight, then posts the next (the caller advances other lanes between
  // steps).
  plx_result_t wait_step();
  // Waits until every step has finished.
  plx_result_t finish();
  bool done() const { return step_ == steps_; }

 protected:
  // staging_bytes from `pool` (nullptr: a buffer of its own).
  Lane(Transport& transport, const TagWindow& window, const LaneBlock& lane, size_t steps,
       size_t staging_bytes, StagingPool* pool);
  // Step step_: posts a receive of recv_bytes from recv_peer into recv_to and a send of
  // send_bytes to send_peer (either skipped when its bytes are 0).
  plx_result_t post(int recv_peer, unsigned char* recv_to, size_t recv_bytes, int send_peer,
                    const unsigned char* send_from, size_t send_bytes);
  // What step step_ posts (through post()), and what it does once its requests are done.
  virtual plx_result_t post_step() = 0;
  virtual void complete_step() = 0;
  unsigned char* staging() const { return staging_.get(); }

  Transport& transport_;
  TagWindow window_;
  const LaneBlock lane_;
  const size_t elem_;  // bytes of one element
  size_t steps_;
  size_t step_ = 0;  // the step in flight (== steps_ when done)

 private:
  struct Posted {
    Request send, recv;
    bool send_posted = false, recv_posted = false;
  };
  plx_result_t next_step();  // the step's requests are done: complete it, post the next
  std::unique_ptr<Posted> posted_;
  StagingPool* pool_;
  size_t staging_capacity_ = 0;
  std::unique_ptr<unsigned char[]> staging_;
};

class LaneRing final : public Lane {
 public:
  LaneRing(Transport& transport, const TagWindow& window, const LaneBlock& lane,
           StagingPool* pool = nullptr);

 private:
  plx_result_t post_step() override;
  void complete_step() override;
  size_t shard(size_t offset) const;  // (me + K + offset) mod K, offset in -(K-1)..1
  unsigned char* at(size_t shard_index) const;
  size_t bytes_of(size_t shard_index) const;
};

}  // namespace plexus::comm
