// pipeline.cpp - see pipeline.h.
#include "comm/algorithms/pipeline.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "comm/algorithms/deliberate_leak.h"
#include "comm/base/error.h"

namespace plexus::comm {
Pipeline::Pipeline(Transport& transport, size_t send_depth, size_t recv_depth, size_t staging_bytes)
    : transport_(transport), staging_bytes_(staging_bytes) {
  send_.depth = send_depth < 1 ? 1 : send_depth;
  recv_.depth = recv_depth < 1 ? 1 : recv_depth;
  send_.slots = std::make_unique<Request[]>(send_.depth);
  recv_.slots = std::make_unique<Request[]>(recv_.depth);
  if (staging_bytes_ > 0) {
    staging_ = std::make_unique_for_overwrite<unsigned char[]>(staging_bytes_ * recv_.depth);
  }
}

Pipeline::~Pipeline() {
  if (send_.size > 0 || recv_.size > 0) {
    // An error path left requests posted: the transport may still write into them (see header).
    leak_on_purpose(send_.slots);
    leak_on_purpose(recv_.slots);
    leak_on_purpose(staging_);
  }
}

plx_result_t Pipeline::wait_oldest(Fifo& fifo) {
  Request* req = &fifo.oldest();
  PLX_CHECK(transport_.wait_all(&req, 1));
  fifo.pop();
  return PLX_SUCCESS;
}

plx_result_t Pipeline::send(int peer, uint64_t tag, const void* buf, size_t bytes) {
  if (send_.size == send_.depth) PLX_CHECK(wait_oldest(send_));
  Request& req = send_.next_free();
  req.reset();
  PLX_CHECK(transport_.post_send(peer, tag, buf, bytes, req));
  ++send_.size;
  return PLX_SUCCESS;
}

plx_result_t Pipeline::send_has_room(bool* room) {
  while (send_.size > 0) {
    bool done = false;
    PLX_CHECK(transport_.test(send_.oldest(), &done));
    if (!done) break;
    send_.pop();
  }
  *room = send_.size < send_.depth;
  return PLX_SUCCESS;
}

plx_result_t Pipeline::post_recv(int peer, uint64_t tag, void* buf, size_t bytes) {
  if (recv_.size == recv_.depth) {
    return set_error(PLX_ERROR_INTERNAL, "pipeline: rank " + std::to_string(transport_.rank()) +
                                             ": more than " + std::to_string(recv_.depth) +
                                             " receives posted ahead");
  }
  Request& req = recv_.next_free();
  req.reset();
  PLX_CHECK(transport_.post_recv(peer, tag, buf, bytes, req));
  ++recv_.size;
  return PLX_SUCCESS;
}

plx_result_t Pipeline::wait_recv() {
  if (recv_.size == 0) {
    return set_error(PLX_ERROR_INTERNAL, "pipeline: rank " + std::to_string(transport_.rank()) +
                                             ": wait for a receive that was never posted");
  }
  return wait_oldest(recv_);
}

plx_result_t Pipeline::finish() {
  while (recv_.size > 0) PLX_CHECK(wait_oldest(recv_));
  while (send_.size > 0) PLX_CHECK(wait_oldest(send_));
  return PLX_SUCCESS;
}

plx_result_t Pipeline::run(const MessagePlan& plan) {
  size_t posted = 0;  // sends posted so far
  size_t used = 0;    // receives used so far
  // Every ready send numbered <= last, then later ready ones while the window has room.
  const auto post_ready_sends = [&](size_t last) -> plx_result_t {
    while (posted < plan.sends && plan.ready(posted, used)) {
      if (posted > last) {
        bool room = false;
        PLX_CHECK(send_has_room(&room));
        if (!room) break;
      }
      PLX_CHECK(plan.post_send(posted));
      ++posted;
    }
    return PLX_SUCCESS;
  };

  for (size_t i = 0; i < std::min(plan.recv_ahead, plan.recvs); ++i) PLX_CHECK(plan.post_recv(i));
  for (size_t i = 0; i < plan.recvs; ++i) {
    PLX_CHECK(post_ready_sends(plan.number(i)));
    PLX_CHECK(wait_recv());
    PLX_CHECK(plan.use(i));
    used = i + 1;
    if (i + plan.recv_ahead < plan.recvs) PLX_CHECK(plan.post_recv(i + plan.recv_ahead));
  }
  PLX_CHECK(post_ready_sends(plan.sends));
  if (posted < plan.sends) {
    return set_error(PLX_ERROR_INTERNAL, "pipeline: rank " + std::to_string(transport_.rank()) +
                                             ": send " + std::to_string(posted) + " of " +
                                             std::to_string(plan.sends) + " never became ready");
  }
  return finish();
}

plx_result_t send_one(Transport& transport, int peer, uint64_t tag, const void* buf, size_t bytes) {
  Pipeline pipe(transport, 1, 1, 0);
  PLX_CHECK(pipe.send(peer, tag, buf, bytes));
  return pipe.finish();
}

plx_result_t recv_one(Transport& transport, int peer, uint64_t tag, void* buf, size_t bytes) {
  Pipeline pipe(transport, 1, 1, 0);
  PLX_CHECK(pipe.post_recv(peer, tag, buf, bytes));
  return pipe.finish();
}

}  // namespace plexus::comm
