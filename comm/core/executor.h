// executor.h - runs a communicator's tasks one at a time, in submission order.
//
// Blocking calls run on the caller's thread when nothing is queued or running (no thread switch
// on the fast path); otherwise they queue behind the earlier work and wait. Non-blocking calls
// and groups are queued for the progress thread, started on first use, which sleeps on a
// condition variable when the queue is empty (no spinning: 8 ranks can share 2 cores). While a
// task runs, the transport's own wait loop yields and sleeps when idle.
//
// The transport is used by one thread at a time: whichever runs the current task, or the progress
// thread while it polls parked tasks (busy_ covers both).
//
// Parked tasks (task.h: a posted non-blocking send or receive) stay with the executor until
// their poll reports them done or failed; the progress thread polls them between tasks, first
// with sched_yield between passes (for up to kParkedSpinUs), then sleeping on the condition
// variable for 16 us doubling to 1 ms, woken early by new work, so a rank waiting for a message
// uses almost no CPU. The transport may ask for longer polling and shorter sleeps
// (set_wait_hint): libfabric's manual-progress providers advance a large transfer only while
// polled.
//
// The progress thread is named "plx-progress" (as /proc/<pid>/task/<tid>/comm shows it) and runs
// the start hook, if one is set, before its first task: pinning.h pins it there.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "comm/core/task.h"
#include "comm/transport/transport.h"

namespace plexus::comm {

class Executor {
 public:
  // `run` executes a task and calls its finish().
  explicit Executor(std::function<void(Task&)> run);
  ~Executor();  // stop(PLX_ERROR_ABORTED, ...) if still running
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs the task now on this thread if idle, else queues it and waits; returns task.wait().
  plx_result_t run_now(const std::shared_ptr<Task>& task);
  // Queues the task for the progress thread; returns at once.
  void submit(std::shared_ptr<Task> task);
  // Runs `task` on this thread if it is first in the queue, nothing runs and the progress thread
  // has started (a thread about to wait for it: no wake-up of the progress thread, no hand-back);
  // else does nothing.
  void run_if_first(Task& task);
  // Waits until every queued task has run and every parked one finished (destroy: NCCL flushes
  // outstanding work).
  void drain();
  // Stops the progress thread after the running task; queued and parked tasks finish with
  // `code` (a parked task's requests are leaked: the transport may still write into them).
  void stop(plx_result_t code, const std::string& message);
  // Runs `hook` on the progress thread when it starts (before any task). Set it before the first
  // submit; a thread already started does not run it.
  void set_start_hook(std::function<void()> hook);
  // What the transport wants of a wait between polls of the parked tasks (transport.h
  // WaitHint): the progress thread then yield-polls for at least hint.poll_for and sleeps at
  // most hint.max_sleep for hint.short_sleeps_for more. Called on the progress thread with the executor's mutex held; set it
  // before the first submit.
  void set_wait_hint(std::function<WaitHint()> hint);

 private:
  void worker_loop();
  // One pass over the parked tasks (mutex_ not held, busy_ set): finishes those done or failed.
  // Returns whether any finished.
  bool poll_parked(std::deque<std::shared_ptr<Task>>& parked);
  void start_worker();  // with mutex_ held
  // Runs `task` (taken off the queue, busy_ set) on this thread, parks it if it asks to, and
  // clears busy_. Called and returns with `lock` held.
  void run_taken(std::unique_lock<std::mutex>& lock, std::shared_ptr<Task> task);

  std::function<void(Task&)> run_;
  std::function<void()> start_hook_;
  std::function<WaitHint()> wait_hint_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Task>> queue_;
  std::deque<std::shared_ptr<Task>> parked_;  // posted sends and receives in flight (task.h)
  bool busy_ = false;  // a task is running (on the worker or inline)
  bool stopping_ = false;
  bool worker_ready_ = false;  // the progress thread has run its start hook
  std::thread worker_;
};

}  // namespace plexus::comm
