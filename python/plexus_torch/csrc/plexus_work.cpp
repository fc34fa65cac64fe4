// plexus_work.cpp - see plexus_work.h.
#include "plexus_work.h"

#include <c10/util/Exception.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <string>

namespace plexus::torch_backend {

namespace {

c10::TypePtr tensor_list_type() { return c10::ListType::create(c10::TensorType::get()); }

constexpr auto kPollSpin = std::chrono::microseconds(100);
constexpr auto kPollFirstSleep = std::chrono::microseconds(16);
constexpr auto kPollMaxSleep = std::chrono::microseconds(1000);

}  // namespace

void PendingRequest::complete(WorkPlexus& work) { finish(work, plx_wait(request)); }

bool PendingRequest::try_complete(WorkPlexus& work) {
  int done = 0;
  const plx_result_t result = plx_test(request, &done);
  if (!done && result == PLX_SUCCESS) {
    state = Free;
    return false;
  }
  // A failure of plx_test itself (an argument error) leaves the request: wait for it instead.
  finish(work, done ? result : plx_wait(request));
  return true;
}

void PendingRequest::finish(WorkPlexus& work, plx_result_t result) {
  std::exception_ptr error;
  request = nullptr;  // freed by plx_wait / plx_test
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
  if (outstanding) --*outstanding;
  state = Done;
  work.complete(error);
}

WorkPlexus::WorkPlexus(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
                       std::vector<at::Tensor> inputs, std::shared_ptr<PendingRequest> pending)
    : c10d::Work(rank, type), outputs_(std::move(outputs)), inputs_(std::move(inputs)),
      pending_(std::move(pending)),
      future_(c10::make_intrusive<c10::ivalue::Future>(tensor_list_type())) {}

bool WorkPlexus::wait(std::chrono::milliseconds timeout) {
  if (timeout == kNoTimeout) {
    // Busy: a queue is testing it this instant; it will be Free or Done again at once.
    while (pending_->queued.load() && pending_->state.load() != PendingRequest::Done) {
      if (pending_->acquire()) {
        pending_->complete(*this);
        break;
      }
      sched_yield();
    }
  }
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

CompletionQueue::CompletionQueue(Mode mode)
    : mode_(mode), thread_([this] { mode_ == Mode::Ordered ? run_ordered() : run_polled(); }) {}

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

void CompletionQueue::run_ordered() {
  for (;;) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !items_.empty(); });
      if (items_.empty()) return;  // stopping, and nothing left to complete
      item = std::move(items_.front());
      items_.pop_front();
    }
    // Not acquired: a wait() on the Work completes it (or has).
    if (item.pending->acquire()) item.pending->complete(*item.work);
  }
}

void CompletionQueue::run_polled() {
  std::vector<Item> pending;
  auto last_done = std::chrono::steady_clock::now();
  auto sleep = kPollFirstSleep;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (pending.empty()) {
        cv_.wait(lock, [this] { return stopping_ || !items_.empty(); });
      } else if (items_.empty() && std::chrono::steady_clock::now() - last_done > kPollSpin) {
        cv_.wait_for(lock, sleep, [this] { return !items_.empty(); });
        sleep = std::min(sleep * 2, kPollMaxSleep);
      }
      if (pending.empty() && items_.empty()) return;  // stopping, and nothing left
      for (Item& item : items_) pending.push_back(std::move(item));
      items_.clear();
    }
    bool finished = false;
    for (auto it = pending.begin(); it != pending.end();) {
      PendingRequest& p = *it->pending;
      const bool done = p.state.load() == PendingRequest::Done ||
                        (p.acquire() && p.try_complete(*it->work));
      if (done) {
        it = pending.erase(it);
        finished = true;
      } else {
        ++it;
      }
    }
    if (finished) {
      last_done = std::chrono::steady_clock::now();
      sleep = kPollFirstSleep;
    } else if (std::chrono::steady_clock::now() - last_done <= kPollSpin) {
      sched_yield();
    }
  }
}

}  // namespace plexus::torch_backend
