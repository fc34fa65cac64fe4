// hierarchical_pipeline.cpp - see hierarchical_pipeline.h.
#include "comm/algorithms/hierarchical_pipeline.h"

#include <cstring>
#include <new>
#include <utility>

#include "comm/algorithms/deliberate_leak.h"
#include "comm/algorithms/slices.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {

std::unique_ptr<unsigned char[]> StagingPool::take(size_t bytes, size_t* capacity) {
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->first >= bytes && (best == free_.end() || it->first < best->first)) best = it;
  }
  if (best == free_.end()) {
    ++allocations_;
    *capacity = bytes;
    return std::make_unique_for_overwrite<unsigned char[]>(bytes);
  }
  *capacity = best->first;
  std::unique_ptr<unsigned char[]> buffer = std::move(best->second);
  free_.erase(best);
  return buffer;
}

void StagingPool::give(std::unique_ptr<unsigned char[]> buffer, size_t capacity) noexcept {
  if (!buffer) return;
  try {
    free_.emplace_back(capacity, std::move(buffer));
  } catch (const std::bad_alloc&) {
    // No room to keep it: the buffer is freed here, and a later lane allocates its own.
  }
}

Lane::Lane(Transport& transport, const TagWindow& window, const LaneBlock& lane, size_t steps,
           size_t staging_bytes, StagingPool* pool)
    : transport_(transport),
      window_(window),
      lane_(lane),
      elem_(datatype_bytes(lane.datatype)),
      steps_(steps),
      posted_(std::make_unique<Posted>()),
      pool_(pool) {
  staging_capacity_ = staging_bytes + 1;
  staging_ = pool != nullptr ? pool->take(staging_capacity_, &staging_capacity_)
                             : std::make_unique_for_overwrite<unsigned char[]>(staging_capacity_);
}

Lane::~Lane() {
  if (posted_ && ((posted_->send_posted && !posted_->send.done) ||
                  (posted_->recv_posted && !posted_->recv.done))) {
    leak_on_purpose(posted_);  // a failed wait left requests posted (see header)
    leak_on_purpose(staging_);
    return;
  }
  if (pool_ != nullptr) pool_->give(std::move(staging_), staging_capacity_);
}

plx_result_t Lane::post(int recv_peer, unsigned char* recv_to, size_t recv_bytes, int send_peer,
                        const unsigned char* send_from, size_t send_bytes) {
  Posted& p = *posted_;
  p.send.reset();
  p.recv.reset();
  p.send_posted = p.recv_posted = false;
  if (recv_bytes > 0) {
    PLX_CHECK(transport_.post_recv(recv_peer, window_.tag(step_), recv_to, recv_bytes, p.recv));
    p.recv_posted = true;
  }
  if (send_bytes > 0) {
    PLX_CHECK(transport_.post_send(send_peer, window_.tag(step_), send_from, send_bytes, p.send));
    p.send_posted = true;
  }
  return PLX_SUCCESS;
}

plx_result_t Lane::next_step() {
  complete_step();
  if (++step_ < steps_) return post_step();
  return PLX_SUCCESS;
}

plx_result_t Lane::start() { return steps_ == 0 ? PLX_SUCCESS : post_step(); }

plx_result_t Lane::advance() {
  while (!done()) {
    Posted& p = *posted_;
    for (Request* req : {&p.recv, &p.send}) {
      const bool posted = req == &p.recv ? p.recv_posted : p.send_posted;
      if (posted && !req->done) {
        bool finished = false;
        PLX_CHECK(transport_.test(*req, &finished));
        if (!finished) return PLX_SUCCESS;
      }
    }
    PLX_CHECK(next_step());
  }
  return PLX_SUCCESS;
}

plx_result_t Lane::wait_step() {
  if (done()) return PLX_SUCCESS;
  Posted& p = *posted_;
  Request* reqs[2] = {};
  size_t n = 0;
  if (p.recv_posted) reqs[n++] = &p.recv;
  if (p.send_posted) reqs[n++] = &p.send;
  if (n > 0) PLX_CHECK(transport_.wait_all(reqs, n));
  return next_step();
}

plx_result_t Lane::finish() {
  while (!done()) PLX_CHECK(wait_step());
  return PLX_SUCCESS;
}

LaneRing::LaneRing(Transport& transport, const TagWindow& window, const LaneBlock& lane,
                   StagingPool* pool)
    : Lane(transport, window, lane, 2 * (lane.members.size() - 1),
           Blocks{lane.count, lane.members.size()}.largest() * datatype_bytes(lane.datatype),
           pool) {}

size_t LaneRing::shard(size_t offset) const {
  const size_t k = lane_.members.size();
  return (lane_.me + k + offset) % k;
}

unsigned char* LaneRing::at(size_t shard_index) const {
  return lane_.block + Blocks{lane_.count, lane_.members.size()}.begin(shard_index) * elem_;
}

size_t LaneRing::bytes_of(size_t shard_index) const {
  return Blocks{lane_.count, lane_.members.size()}.size(shard_index) * elem_;
}

// Step t: the shards of the header's table; offsets are taken mod K, written as K - x for -x.
plx_result_t LaneRing::post_step() {
  const size_t k = lane_.members.size(), t = step_;
  const int next = lane_.members[(lane_.me + 1) % k], prev = lane_.members[(lane_.me + k - 1) % k];
  if (t < k - 1) {  // reduce-scatter
    const size_t send_shard = shard(k - t), recv_shard = shard(k - t - 1);
    return post(prev, staging(), bytes_of(recv_shard), next, at(send_shard),
                bytes_of(send_shard));
  }
  const size_t a = t - (k - 1);  // allgather
  const size_t send_shard = shard(k + 1 - a), recv_shard = shard(k - a);
  return post(prev, at(recv_shard), bytes_of(recv_shard), next, at(send_shard),
              bytes_of(send_shard));
}

void LaneRing::complete_step() {
  const size_t k = lane_.members.size(), t = step_;
  if (t >= k - 1) return;  // allgather: received in place
  // reduce-scatter: reduce the received shard; the last one is final
  const size_t recv_shard = shard(k - t - 1);
  const size_t count = bytes_of(recv_shard) / elem_;
  reduce_into(at(recv_shard), staging(), count, lane_.datatype, lane_.op);
  if (t == k - 2 && lane_.op == PLX_AVG) {
    divide_by(at(recv_shard), count, lane_.datatype, lane_.divisor);
  }
}

}  // namespace plexus::comm
