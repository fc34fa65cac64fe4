// plexus_work.cpp - see plexus_work.h.
#include "plexus_work.h"

#include <c10/util/Exception.h>

#include <string>

namespace plexus::torch_backend {

namespace {

c10::TypePtr tensor_list_type() { return c10::ListType::create(c10::TensorType::get()); }

}  // namespace

void PendingRequest::complete(WorkPlexus& work) {
  std::exception_ptr error;
  const plx_result_t result = plx_wait(request);
  request = nullptr;
  if (result != PLX_SUCCESS) {
    error = std::make_exception_ptr(c10::Error(std::string("plexus ") + op_name + ": " +
                                                   plx_get_error_string(result) + ": " +
                                                   plx_get_last_error(nullptr),
                                               ""));
  } else if (epilogue) {
    try {
      epilogue();
    } catch (...) {
      error = std::current_exception();
    }
  }
  epilogue = nullptr;  // releases what it captured
  work.complete(error);
}

WorkPlexus::WorkPlexus(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
                       std::vector<at::Tensor> inputs, std::shared_ptr<PendingRequest> pending)
    : c10d::Work(rank, type), outputs_(std::move(outputs)), inputs_(std::move(inputs)),
      pending_(std::move(pending)),
      future_(c10::make_intrusive<c10::ivalue::Future>(tensor_list_type())) {}

bool WorkPlexus::wait(std::chrono::milliseconds timeout) {
  if (timeout == kNoTimeout && pending_->claim()) pending_->complete(*this);
  return c10d::Work::wait(timeout);
}

void WorkPlexus::complete(std::exception_ptr error) {
  inputs_.clear();
  // The Work first, so that a callback of the future that waits on this Work cannot block.
  finish(error);
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
}

CompletionQueue::CompletionQueue() : thread_([this] { run(); }) {}

CompletionQueue::~CompletionQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void CompletionQueue::push(std::shared_ptr<PendingRequest> pending,
                           c10::intrusive_ptr<WorkPlexus> work) {
  pending->queued = true;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    items_.push_back(Item{std::move(pending), std::move(work)});
  }
  cv_.notify_one();
}

void CompletionQueue::run() {
  for (;;) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !items_.empty(); });
      if (items_.empty()) return;  // stopping, and nothing left to complete
      item = std::move(items_.front());
      items_.pop_front();
    }
    // A wait() on the Work may have completed it already.
    if (item.pending->claim()) item.pending->complete(*item.work);
  }
}

}  // namespace plexus::torch_backend
