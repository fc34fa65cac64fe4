// cpu_threads.cpp - see cpu_threads.h.
//
// One job at a time: the dispatcher publishes (fn, ctx, n, parts) and bumps `generation_`;
// every worker, whether it has a part or not, acknowledges the generation by decrementing
// `pending_`, so no worker can still be reading a job when the next one is written. Sleeping
// on either counter is a futex wait on its 32-bit word, announced first (sleepers_ /
// caller_sleeping_) so that the side that changes the word wakes it only when someone sleeps.
#include "engine/device/cpu_threads.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace plexus::engine {

namespace {

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls until *word differs from `seen` for at most kSpinMicros; true if it did.
bool spin_until_changed(const std::atomic<uint32_t>& word, uint32_t seen) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + std::chrono::microseconds(kSpinMicros);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (word.load(std::memory_order_acquire) != seen) return true;
      cpu_relax();
    }
    if (Clock::now() >= deadline) return false;
  }
}

class Pool {
 public:
  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  int resize(int threads) {
    std::lock_guard<std::mutex> lock(dispatch_);
    threads = std::max(1, threads);
    if (threads == this->threads()) return threads;
    stop_workers();
    // a worker waits for the generation after this one, whenever it starts running
    const uint32_t seen = generation_.load(std::memory_order_relaxed);
    for (int w = 1; w < threads; ++w) workers_.emplace_back([this, w, seen] { work(w, seen); });
    return threads;
  }

  void run(size_t n, size_t grain, detail::RangeFn fn, void* ctx) {
    const size_t most = grain == 0 ? n : std::max<size_t>(1, n / grain);
    std::unique_lock<std::mutex> lock(dispatch_, std::try_to_lock);
    const size_t parts = std::min<size_t>(most, static_cast<size_t>(threads()));
    if (!lock.owns_lock() || parts <= 1) {  // busy (nested or another thread) or too small
      if (n > 0) fn(ctx, 0, n);
      return;
    }
    fn_ = fn;
    ctx_ = ctx;
    n_ = n;
    parts_ = parts;
    pending_.store(static_cast<uint32_t>(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake_all(&generation_);
    fn(ctx, 0, n / parts);
    wait_for_workers();
  }

 private:
  void work(int index, uint32_t seen) {
    pthread_setname_np(pthread_self(), ("plexus-cpu-" + std::to_string(index)).c_str());
    for (;;) {
      if (!spin_until_changed(generation_, seen)) {
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        while (generation_.load(std::memory_order_seq_cst) == seen) futex_wait(&generation_, seen);
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
      }
      seen = generation_.load(std::memory_order_acquire);
      if (stop_) return;
      const size_t part = static_cast<size_t>(index);
      if (part < parts_) fn_(ctx_, n_ * part / parts_, n_ * (part + 1) / parts_);
      if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
          caller_sleeping_.load(std::memory_order_seq_cst) != 0) {
        futex_wake_all(&pending_);
      }
    }
  }

  void wait_for_workers() {
    uint32_t left = pending_.load(std::memory_order_acquire);
    if (left == 0) return;
    using Clock = std::chrono::steady_clock;
    const Clock::time_point deadline = Clock::now() + std::chrono::microseconds(kSpinMicros);
    while (Clock::now() < deadline) {
      for (int i = 0; i < 64; ++i) {
        if (pending_.load(std::memory_order_acquire) == 0) return;
        cpu_relax();
      }
    }
    caller_sleeping_.store(1, std::memory_order_seq_cst);
    while ((left = pending_.load(std::memory_order_seq_cst)) != 0) futex_wait(&pending_, left);
    caller_sleeping_.store(0, std::memory_order_relaxed);
  }

  // Called with dispatch_ held.
  void stop_workers() {
    if (workers_.empty()) return;
    stop_ = true;
    pending_.store(static_cast<uint32_t>(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    futex_wake_all(&generation_);
    for (std::thread& t : workers_) t.join();
    workers_.clear();
    stop_ = false;
  }

  std::mutex dispatch_;
  std::vector<std::thread> workers_;
  std::atomic<uint32_t> generation_{0};
  std::atomic<uint32_t> sleepers_{0};
  std::atomic<uint32_t> pending_{0};
  std::atomic<uint32_t> caller_sleeping_{0};
  // The job: written by the dispatcher before generation_ is bumped, read by workers after.
  detail::RangeFn fn_ = nullptr;
  void* ctx_ = nullptr;
  size_t n_ = 0;
  size_t parts_ = 0;
  bool stop_ = false;
};

Pool& pool() {
  static Pool* const p = new Pool;  // never destroyed: workers may sleep in it at exit
  return *p;
}

}  // namespace

int set_cpu_threads(int threads) { return pool().resize(threads); }

int cpu_threads() { return pool().threads(); }

namespace detail {
void parallel_for(size_t n, size_t grain, RangeFn fn, void* ctx) {
  pool().run(n, grain, fn, ctx);
}
}  // namespace detail

}  // namespace plexus::engine
