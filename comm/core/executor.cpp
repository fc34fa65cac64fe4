// executor.cpp - see executor.h.
#include "comm/core/executor.h"

#include <pthread.h>

#include <utility>
#include <vector>

#include "comm/core/error.h"

namespace plexus::comm {

plx_result_t Task::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return done_; });
  if (result_ != PLX_SUCCESS) return set_error(result_, message_);
  return PLX_SUCCESS;
}

Executor::Executor(std::function<void(Task&)> run) : run_(std::move(run)) {}

Executor::~Executor() { stop(PLX_ERROR_ABORTED, "the communicator was destroyed"); }

plx_result_t Executor::run_now(const std::shared_ptr<Task>& task) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (stopping_) {
      lock.unlock();
      task->finish(PLX_ERROR_ABORTED, "the communicator is shutting down");
      return task->wait();
    }
    if (busy_ || !queue_.empty()) {
      queue_.push_back(task);
      start_worker();
      cv_.notify_all();
      lock.unlock();
      return task->wait();
    }
    busy_ = true;
  }
  run_(*task);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = false;
  }
  cv_.notify_all();
  return task->wait();
}

void Executor::submit(std::shared_ptr<Task> task) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (stopping_) {
    lock.unlock();
    task->finish(PLX_ERROR_ABORTED, "the communicator is shutting down");
    return;
  }
  queue_.push_back(std::move(task));
  start_worker();
  cv_.notify_all();
}

void Executor::set_start_hook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(mutex_);
  start_hook_ = std::move(hook);
}

void Executor::start_worker() {
  if (worker_.joinable()) return;
  worker_ = std::thread([this] { worker_loop(); });
  pthread_setname_np(worker_.native_handle(), "plx-progress");
}

void Executor::worker_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (start_hook_) {
    std::function<void()> hook = start_hook_;
    lock.unlock();
    hook();
    lock.lock();
  }
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || (!busy_ && !queue_.empty()); });
    if (stopping_) return;
    std::shared_ptr<Task> task = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    run_(*task);
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

void Executor::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return stopping_ || (!busy_ && queue_.empty()); });
}

void Executor::stop(plx_result_t code, const std::string& message) {
  std::vector<std::shared_ptr<Task>> cancelled;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    stopping_ = true;
    cancelled.assign(queue_.begin(), queue_.end());
    queue_.clear();
  }
  cv_.notify_all();
  if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id()) worker_.join();
  for (auto& task : cancelled) task->finish(code, message);
}

}  // namespace plexus::comm
