// task_completion.cpp - the completion steps of task.h: run once, after the task, by the thread
// that completes it.
#include <fmt/format.h>

#include <exception>
#include <new>
#include <utility>
#include <vector>

#include "comm/base/error.h"
#include "comm/core/executor.h"
#include "comm/core/task.h"

namespace plexus::comm {

namespace {

// One step, with no exception escaping (a step that throws fails the task, it does not leave
// the steps half run with other waiters blocked).
plx_result_t run_step(const Completion& step, plx_result_t outcome) {
  try {
    return step(outcome);
  } catch (const std::bad_alloc&) {
    return set_error(PLX_ERROR_SYSTEM, "completing the operation: out of memory");
  } catch (const std::exception& e) {
    return set_error(PLX_ERROR_INTERNAL,
                     fmt::format("completing the operation: unexpected exception: {}", e.what()));
  }
}

}  // namespace

void Task::add_completion(Completion step) {
  std::lock_guard<std::mutex> lock(mutex_);
  completions_.push_back(std::move(step));
}

plx_result_t Task::complete() {
  if (Executor* executor = queued_on.load()) executor->run_if_first(*this);
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return done_; });
  if (steps_ == Steps::Pending && completions_.empty()) {
    steps_ = Steps::Done;  // no steps (host buffers): nobody to wake, nothing to run
  } else if (steps_ == Steps::Pending) {
    steps_ = Steps::Running;
    std::vector<Completion> steps = std::move(completions_);
    completions_.clear();
    const plx_result_t outcome = result_;
    lock.unlock();
    plx_result_t first = PLX_SUCCESS;
    std::string message;
    for (const Completion& step : steps) {
      const plx_result_t result = run_step(step, outcome);
      if (result != PLX_SUCCESS && first == PLX_SUCCESS) {
        first = result;
        message = last_error();
      }
    }
    steps.clear();  // what the steps captured (staging memory) is released before anyone returns
    lock.lock();
    if (result_ == PLX_SUCCESS && first != PLX_SUCCESS) {
      result_ = first;
      message_ = std::move(message);
    }
    steps_ = Steps::Done;
    cv_.notify_all();
  } else {
    cv_.wait(lock, [&] { return steps_ == Steps::Done; });
  }
  if (result_ != PLX_SUCCESS) return set_error(result_, message_);
  return PLX_SUCCESS;
}

plx_result_t Task::try_complete(bool* done) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    *done = done_ && steps_ != Steps::Running;
    if (!*done) return PLX_SUCCESS;
  }
  return complete();
}

}  // namespace plexus::comm
