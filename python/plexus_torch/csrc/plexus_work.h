// plexus_work.h - the torch Work of one Plexus request, and the threads that complete them.
//
// Each torch operation is issued as a non-blocking Plexus call (plx_iallreduce, plx_isend, ...),
// which returns a plx_request_t at once. Whoever completes the request first runs what the call
// still has to do once its data has arrived (the epilogue: copying a flat result into the
// caller's list of tensors) and completes the Work: Work::wait() returns (or throws the Plexus
// error) and the Work's future (getFuture(), what DistributedDataParallel waits on) is marked
// completed with the output tensors, or set to the error. That is either
//  - the thread that calls Work::wait() (a synchronous torch call waits at once): it waits for the
//    request itself, and Plexus runs a call not yet started on the waiting thread (no thread
//    switch, as a blocking Plexus call), or
//  - one of the process group's two CompletionQueues, so that futures complete without anyone
//    calling wait(), as torch's Reducer requires:
//    . Ordered (collectives): one thread waits for the requests in call order (plx_wait sleeps;
//      it does not spin), as the communicator runs them in that order.
//    . Polled (sends and receives): they finish in any order (a receive may wait for its peer
//      for as long as it likes), so one thread tests every pending one (plx_test), yielding for
//      100 us after the last completion and then sleeping 16 us doubling to 1 ms between passes.
//      A pending receive never holds up the Works issued after it.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "plexus/plexus.h"

namespace plexus::torch_backend {

// What a call does after its request succeeded (may be empty).
using Epilogue = std::function<void()>;

class WorkPlexus;

// A request and what its completion still has to do, shared by the Work and a queue. One thread
// at a time works on it (acquire(): Free -> Busy), and it is completed once (Done).
struct PendingRequest {
  enum State : int { Free, Busy, Done };
  const char* op_name = "";
  plx_request_t request = nullptr;
  Epilogue epilogue;
  std::atomic<bool> queued{false};  // handed to a CompletionQueue (its call has been issued)
  std::atomic<int> state{Free};
  // The process group's count of requests not yet completed (decremented by finish).
  std::shared_ptr<std::atomic<int>> outstanding;

  bool acquire() {
    int expected = Free;
    return queued.load() && state.compare_exchange_strong(expected, Busy);
  }
  // After acquire(): plx_wait, the epilogue, `work`'s completion; then Done.
  void complete(WorkPlexus& work);
  // After acquire(): plx_test; if the request finished, as complete() and true; else releases
  // it (Free) and returns false.
  bool try_complete(WorkPlexus& work);

 private:
  void finish(WorkPlexus& work, plx_result_t result);
};

class WorkPlexus : public c10d::Work {
 public:
  // `outputs`: the tensors the operation writes, the future's value and result(). `inputs`: the
  // tensors it reads, kept alive until it completes (the caller may drop its own references at
  // once, as with an async_op on a temporary).
  WorkPlexus(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
             std::vector<at::Tensor> inputs, std::shared_ptr<PendingRequest> pending);

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  std::vector<at::Tensor> result() override { return outputs_; }
  // Completes the request on this thread unless another thread has it; then Work::wait (which
  // throws the error, or after `timeout` without completion).
  bool wait(std::chrono::milliseconds timeout) override;

  // Marks the work done: success (`error` null) or failure. Called once (PendingRequest).
  void complete(std::exception_ptr error);

 private:
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> inputs_;  // released by complete()
  std::shared_ptr<PendingRequest> pending_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

class CompletionQueue {
 public:
  enum class Mode { Ordered, Polled };
  explicit CompletionQueue(Mode mode);
  // Completes every queued request (each ends, at the latest, with a Plexus timeout, a lost peer
  // or an abort), then stops the thread.
  ~CompletionQueue();
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  // Hands the request over: from now on it may be completed, by this queue or by a wait().
  void push(std::shared_ptr<PendingRequest> pending, c10::intrusive_ptr<WorkPlexus> work);

 private:
  struct Item {
    std::shared_ptr<PendingRequest> pending;
    c10::intrusive_ptr<WorkPlexus> work;
  };
  void run_ordered();
  void run_polled();

  const Mode mode_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Item> items_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace plexus::torch_backend
