// pipeline.cpp - see pipeline.h.
#include "comm/algorithms/pipeline.h"

#include <cstring>
#include <string>

#include "comm/core/error.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define PLX_LSAN_IGNORE(ptr) __lsan_ignore_object(ptr)
#else
#define PLX_LSAN_IGNORE(ptr) ((void)(ptr))
#endif

namespace plexus::comm {
namespace {

// A Request cannot be assigned (it must not move while posted); clear it field by field.
void clear(Request& req) {
  std::memset(req.opaque, 0, sizeof(req.opaque));
  req.done = false;
  req.result = PLX_SUCCESS;
  req.peer = -1;
  req.bytes = 0;
}

}  // namespace

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
    // The leak is deliberate; tell LeakSanitizer so.
    PLX_LSAN_IGNORE(send_.slots.release());
    PLX_LSAN_IGNORE(recv_.slots.release());
    PLX_LSAN_IGNORE(staging_.release());
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
  clear(req);
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
  clear(req);
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

}  // namespace plexus::comm
