// plexus_work.h - the torch Work of one Plexus request, and the thread that completes them.
//
// Each torch collective is issued as a non-blocking Plexus call (plx_iallreduce, ...), which
// returns a plx_request_t at once and runs on the communicator's progress thread in call order.
// Whoever completes the request first runs what the call still has to do once its data has
// arrived (the epilogue: copying a flat result into the caller's list of tensors) and completes
// the Work: Work::wait() returns (or throws the Plexus error) and the Work's future (getFuture(),
// what DistributedDataParallel waits on) is marked completed with the output tensors, or set to
// the error. That is either
//  - the thread that calls Work::wait() (a synchronous torch call waits at once): it waits for the
//    request itself, and Plexus runs a call not yet started on the waiting thread (no thread
//    switch, as a blocking Plexus call), or
//  - the process group's CompletionQueue, whose one thread waits for the requests in call order
//    (plx_wait sleeps; it does not spin), so futures complete without anyone calling wait(), as
//    torch's Reducer requires. An idle process group costs one sleeping thread.
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

// A request and what its completion still has to do, shared by the Work and the queue; run once,
// by whoever claims it first.
struct PendingRequest {
  const char* op_name = "";
  plx_request_t request = nullptr;
  Epilogue epilogue;
  std::atomic<bool> queued{false};   // handed to the CompletionQueue (its group has started)
  std::atomic<bool> claimed{false};  // someone completes it

  bool claim() { return queued.load() && !claimed.exchange(true); }
  // plx_wait, the epilogue, then `work`'s completion; after claim().
  void complete(WorkPlexus& work);
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
  // Completes the request on this thread unless the completion thread has it already; then
  // Work::wait (which throws the error, or after `timeout` without completion).
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
  CompletionQueue();
  // Completes every queued request (each ends, at the latest, with a Plexus timeout or a lost
  // peer), then stops the thread.
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
  void run();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Item> items_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace plexus::torch_backend
