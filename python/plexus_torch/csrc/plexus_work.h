// plexus_work.h - the torch Work of one Plexus request, and the thread that completes them.
//
// Each torch collective is issued as a non-blocking Plexus call (plx_iallreduce, ...), which
// returns a plx_request_t at once and runs on the communicator's progress thread in call order.
// The request goes to the process group's CompletionQueue, whose one thread waits for the
// requests in the same order (plx_wait sleeps; it does not spin), runs what the call still has to
// do once its data has arrived (the epilogue: copying a flat result into the caller's list of
// tensors), and then completes the Work: Work::wait() returns (or throws the Plexus error) and
// the Work's future (getFuture(), what DistributedDataParallel waits on) is marked completed with
// the output tensors, or set to the error. So futures complete without anyone calling wait(), as
// torch's Reducer requires, and an idle process group costs one sleeping thread.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "plexus/plexus.h"

namespace plexus::torch_backend {

class WorkPlexus : public c10d::Work {
 public:
  // `outputs`: the tensors the operation writes, the future's value and result(). `inputs`: the
  // tensors it reads, kept alive until it completes (the caller may drop its own references at
  // once, as with an async_op on a temporary).
  WorkPlexus(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
             std::vector<at::Tensor> inputs);

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  std::vector<at::Tensor> result() override { return outputs_; }

  // Marks the work done: success (`error` null) or failure. Called once, by the CompletionQueue.
  void complete(std::exception_ptr error);

 private:
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> inputs_;  // released by complete()
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// What a call does on the completion thread after its request succeeded (may be empty).
using Epilogue = std::function<void()>;

class CompletionQueue {
 public:
  CompletionQueue();
  // Waits for every queued request (each ends, at the latest, with a Plexus timeout or a lost
  // peer), then stops the thread.
  ~CompletionQueue();
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  // Takes ownership of `request` (never NULL); `op_name` prefixes the error message.
  void push(const char* op_name, plx_request_t request, c10::intrusive_ptr<WorkPlexus> work,
            Epilogue epilogue);

 private:
  struct Item {
    const char* op_name;
    plx_request_t request;
    c10::intrusive_ptr<WorkPlexus> work;
    Epilogue epilogue;
  };
  void run();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Item> items_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace plexus::torch_backend
