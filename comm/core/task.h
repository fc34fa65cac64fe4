// task.h - one unit of work for a communicator's executor: a single call, or everything that one
// group (plx_group_start .. plx_group_end) queued on the communicator.
//
// A task holds its operations in call order and, once run, its result and error message. The
// thread that made it waits on it (blocking calls, plx_wait, plx_group_end) or polls it
// (plx_test); the thread that ran it calls finish(). Shared (shared_ptr) between the executor,
// the waiting caller and any plx_request_t that refers to it.
//
// A non-blocking send or receive outside a group is parked once posted (may_park, poll below): the
// executor goes on with later tasks while it is in flight, as gloo's and MPI's isend/irecv do, so
// two ranks that each post an isend and then an irecv to the other both get their receive posted.
//
// Completion steps: an operation may leave work for after the task has run, on the thread that
// completes it (complete(): plx_wait, plx_test, plx_waitall, plx_group_end), e.g. copying a
// result from pinned staging back to a device buffer and freeing the staging
// (comm/device/device_deferred.h). Each step runs exactly once, after the task finished, on
// success and on failure (it is given the task's result); the first failing step's error
// becomes the task's result when the task itself succeeded. A step never run (the task is
// dropped unwaited) is destroyed with the task, so what it captured is still released.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "plexus/plexus.h"

namespace plexus::comm {

class Executor;

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
  // The rank refused its own call (an argument error) but still takes part in the signature
  // comparison, so that the other ranks fail with PLX_ERROR_MISMATCH naming it at once instead
  // of waiting for data that will never come; nothing else runs (c_api_collectives.cpp).
  bool refused = false;
};

// A completion step: given the task's result, returns its own (PLX_SUCCESS, or an error set with
// set_error). Runs on the completing thread; never while the task's mutex is held.
using Completion = std::function<plx_result_t(plx_result_t outcome)>;

class Task {
 public:
  std::vector<P2POp> p2p;                 // posted together, first
  std::vector<CollectiveOp> collectives;  // then run one after the other
  std::function<plx_result_t()> body;     // instead of the above: a custom step (split)
  // A non-blocking plx_isend/plx_irecv outside a group (submit.cpp): once its message is posted
  // it need not hold the executor until it completes (run_task parks it, below).
  bool may_park = false;
  // Set by run_task instead of finishing the task when it parked it: drives the task's posted
  // requests one pass, never blocking; *done once they all completed (the task then succeeded).
  // A failure (a request's error, a lost peer, PLEXUS_TIMEOUT_MS without progress) is returned
  // with its message set. The executor calls it, holding the transport, until done or failed,
  // then finishes the task (executor.h).
  std::function<plx_result_t(bool* done)> poll;
  // Queued in a thread's open group (submit.cpp): not submitted until that thread's
  // plx_group_end, so no other thread may wait for it meanwhile.
  std::atomic<bool> in_open_group{false};
  // The executor whose queue holds the task, until its progress thread (or a waiter) takes it:
  // complete() runs a task still first in that queue on the waiting thread instead of waking the
  // progress thread for it (executor.h, run_if_first).
  std::atomic<Executor*> queued_on{nullptr};

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

  // Adds a step to run once the task has finished (see the file comment). Call it before the
  // task can complete: before it is submitted, or while its group is still open.
  void add_completion(Completion step);

  // wait() (first running the task here if it is still first in its executor's queue), then
  // the completion steps (the first thread to get here runs them; any other waits until they are
  // done); returns the task's result, the steps' failure included (task_completion.cpp).
  plx_result_t complete();

  // Never waits for the task's operations: *done = 0 while they run or while another thread
  // runs the completion steps; otherwise *done = 1 and returns as complete() (running the steps
  // here if nobody has).
  plx_result_t try_complete(bool* done);

 private:
  enum class Steps { Pending, Running, Done };
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  plx_result_t result_ = PLX_SUCCESS;
  std::string message_;
  std::vector<Completion> completions_;
  Steps steps_ = Steps::Pending;
};

}  // namespace plexus::comm
