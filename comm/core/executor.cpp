// executor.cpp - see executor.h.
#include "comm/core/executor.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>

#include <utility>
#include <vector>

#include "comm/algorithms/deliberate_leak.h"
#include "comm/base/error.h"

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
  task->queued_on = this;
  queue_.push_back(std::move(task));
  start_worker();
  cv_.notify_all();
}

void Executor::run_if_first(Task& task) {
  std::unique_lock<std::mutex> lock(mutex_);
  // Not before the progress thread has started (and pinned itself, pinning.h): until then the
  // task is its first, as the thread's tests and users expect.
  if (stopping_ || busy_ || !worker_ready_ || queue_.empty() || queue_.front().get() != &task) {
    return;
  }
  std::shared_ptr<Task> taken = std::move(queue_.front());
  queue_.pop_front();
  run_taken(lock, std::move(taken));
}

void Executor::run_taken(std::unique_lock<std::mutex>& lock, std::shared_ptr<Task> task) {
  task->queued_on = nullptr;
  busy_ = true;
  lock.unlock();
  run_(*task);
  lock.lock();
  if (task->poll) parked_.push_back(std::move(task));  // posted, in flight
  busy_ = false;
  cv_.notify_all();
}

void Executor::set_wait_hint(std::function<WaitHint()> hint) {
  std::lock_guard<std::mutex> lock(mutex_);
  wait_hint_ = std::move(hint);
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

namespace {

constexpr auto kParkedSpin = std::chrono::microseconds(100);
constexpr auto kParkedFirstSleep = std::chrono::microseconds(16);
constexpr auto kParkedMaxSleep = std::chrono::milliseconds(1);

}  // namespace

void Executor::worker_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (start_hook_) {
    std::function<void()> hook = start_hook_;
    lock.unlock();
    hook();
    lock.lock();
  }
  worker_ready_ = true;
  const auto has_work = [&] { return stopping_ || (!busy_ && !queue_.empty()); };
  auto idle_since = std::chrono::steady_clock::now();  // last time a parked task finished
  std::chrono::microseconds sleep = kParkedFirstSleep;
  while (true) {
    if (parked_.empty()) {
      // Also woken when a waiter that ran a task itself parked it (run_if_first).
      cv_.wait(lock, [&] { return has_work() || (!busy_ && !parked_.empty()); });
    } else if (!has_work()) {
      const WaitHint hint = wait_hint_ ? wait_hint_() : WaitHint{};
      const std::chrono::nanoseconds poll_for = std::max<std::chrono::nanoseconds>(kParkedSpin,
                                                                                    hint.poll_for);
      if (std::chrono::steady_clock::now() - idle_since < poll_for) {
        lock.unlock();
        sched_yield();
        lock.lock();
      } else {
        const bool short_sleeps = std::chrono::steady_clock::now() - idle_since <
                                  poll_for + hint.short_sleeps_for;
        cv_.wait_for(lock, short_sleeps ? std::min<std::chrono::nanoseconds>(sleep, hint.max_sleep)
                                        : std::chrono::nanoseconds(sleep),
                     has_work);
        sleep = std::min<std::chrono::microseconds>(sleep * 2, kParkedMaxSleep);
      }
    }
    if (stopping_) return;
    if (!busy_ && !queue_.empty()) {
      std::shared_ptr<Task> task = std::move(queue_.front());
      queue_.pop_front();
      run_taken(lock, std::move(task));
      idle_since = std::chrono::steady_clock::now();
      sleep = kParkedFirstSleep;
    }
    if (!busy_ && !parked_.empty()) {
      std::deque<std::shared_ptr<Task>> parked;
      parked.swap(parked_);
      busy_ = true;
      lock.unlock();
      const bool finished = poll_parked(parked);
      lock.lock();
      // Tasks parked meanwhile (none: only this thread parks) come after the older ones.
      for (auto& task : parked_) parked.push_back(std::move(task));
      parked_.swap(parked);
      busy_ = false;
      cv_.notify_all();
      if (finished) {
        idle_since = std::chrono::steady_clock::now();
        sleep = kParkedFirstSleep;
      }
    }
  }
}

bool Executor::poll_parked(std::deque<std::shared_ptr<Task>>& parked) {
  bool finished = false;
  for (auto it = parked.begin(); it != parked.end();) {
    Task& task = **it;
    bool done = false;
    const plx_result_t result = task.poll(&done);
    if (result == PLX_SUCCESS && !done) {
      ++it;
      continue;
    }
    task.poll = nullptr;  // releases (or, after a failure, has leaked) its requests
    task.finish(result, result == PLX_SUCCESS ? std::string() : std::string(last_error()));
    it = parked.erase(it);
    finished = true;
  }
  return finished;
}

void Executor::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return stopping_ || (!busy_ && queue_.empty() && parked_.empty()); });
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
  for (auto& task : parked_) {
    // Its requests may still be written by the transport: never free them.
    auto leaked = std::make_unique<std::function<plx_result_t(bool*)>>(std::move(task->poll));
    leak_on_purpose(leaked);
    task->finish(code, message);
  }
  parked_.clear();
  for (auto& task : cancelled) {
    task->queued_on = nullptr;
    task->finish(code, message);
  }
}

}  // namespace plexus::comm
