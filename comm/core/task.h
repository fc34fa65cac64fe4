// task.h - one unit of work for a communicator's executor: a single call, or everything that one
// group (plx_group_start .. plx_group_end) queued on the communicator.
//
// A task holds its operations in call order and, once run, its result and error message. The
// thread that made it waits on it (blocking calls, plx_wait, plx_group_end) or polls it
// (plx_test); the thread that ran it calls finish(). Shared (shared_ptr) between the executor,
// the waiting caller and any plx_request_t that refers to it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "plexus/plexus.h"

namespace plexus::comm {

// A plx_send or plx_recv: `bytes` bytes with `peer`, tagged p2p_tag(message number).
struct P2POp {
  bool is_send = false;
  int peer = 0;
  void* buf = nullptr;
  size_t bytes = 0;
  uint64_t tag = 0;
};

// A collective call with its arguments and its tag base (fixed when the call was made, so that
// calls keep their order on every rank).
struct CollectiveOp {
  CollArgs args;
  uint64_t tag_base = 0;
  // Pre-multiplied sum: the scalar (one element of args.datatype); args.op is then PLX_SUM.
  bool premul = false;
  unsigned char premul_scalar[8] = {};
};

class Task {
 public:
  std::vector<P2POp> p2p;                 // posted together, first
  std::vector<CollectiveOp> collectives;  // then run one after the other
  std::function<plx_result_t()> body;     // instead of the above: a custom step (split)

  // Records the outcome and wakes the waiters. Called once, by the thread that ran the task.
  void finish(plx_result_t result, std::string message) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      result_ = result;
      message_ = std::move(message);
      done_ = true;
    }
    cv_.notify_all();
  }

  // Blocks until finished; returns the result and sets the calling thread's last error to the
  // task's message on failure.
  plx_result_t wait();

  // Never blocks: *done = finished; if finished, returns as wait() does.
  plx_result_t poll(bool* done);

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  plx_result_t result_ = PLX_SUCCESS;
  std::string message_;
};

}  // namespace plexus::comm
