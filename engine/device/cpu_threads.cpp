// cpu_threads.cpp - see cpu_threads.h.
//
// One job at a time. The dispatcher writes the job (fn, ctx, n, parts), then publishes it in
// `claim_`, a 64-bit word holding the job's generation (high half) and the next unclaimed part
// (low half), and bumps `generation_`, the 32-bit word sleeping workers wait on. Every thread,
// the dispatcher included, takes parts by compare-and-swap on `claim_`, so a part whose worker
// is not running (descheduled on a busy host, or asleep) is taken by whoever is free, the
// dispatcher first: it never waits for a thread that has no part. A worker reads the job after
// loading `claim_` and runs a part only if its swap succeeds, i.e. the generation it read the
// job of is still the current one and unfinished, so the dispatcher cannot be writing the next
// job then. `done_` counts finished parts; the dispatcher returns when it reaches `parts`.
// Sleeping on a word is a futex wait, announced first (sleepers_, caller_sleeping_) so that
// the side that changes the word wakes it only when someone sleeps.
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

// Polls `done()` for at most kSpinMicros; true if it became true.
template <class Done>
bool spin_until(Done done) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + std::chrono::microseconds(kSpinMicros);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (Clock::now() >= deadline) return false;
  }
}

// True while this thread runs a part (of any pool call).
thread_local bool t_in_part = false;

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
    // A part calling parallel_for again runs inline: never try_lock a mutex this thread holds.
    std::unique_lock<std::mutex> lock;
    if (!t_in_part && most > 1) lock = std::unique_lock<std::mutex>(dispatch_, std::try_to_lock);
    const size_t parts = std::min<size_t>(most, static_cast<size_t>(threads()));
    if (!lock.owns_lock() || parts <= 1) {  // nested, another thread's, or too small
      if (n > 0) run_part(fn, ctx, 0, n);
      return;
    }
    fn_.store(fn, std::memory_order_relaxed);
    ctx_.store(ctx, std::memory_order_relaxed);
    n_.store(n, std::memory_order_relaxed);
    parts_.store(parts, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    const uint32_t generation = generation_.load(std::memory_order_relaxed) + 1;
    claim_.store(uint64_t{generation} << 32, std::memory_order_release);
    generation_.store(generation, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake_all(&generation_);
    run_parts(generation);
    wait_for_parts(static_cast<uint32_t>(parts));
  }

 private:
  static void run_part(detail::RangeFn fn, void* ctx, size_t begin, size_t end) {
    const bool outer = t_in_part;
    t_in_part = true;
    fn(ctx, begin, end);
    t_in_part = outer;
  }

  // Claims and runs parts of `generation` until none is left, or returns at once when the job
  // published is another generation's (the worker then has nothing to do).
  void run_parts(uint32_t generation) {
    for (;;) {
      uint64_t c = claim_.load(std::memory_order_acquire);
      if (static_cast<uint32_t>(c >> 32) != generation) return;
      const size_t part = static_cast<uint32_t>(c);
      const detail::RangeFn fn = fn_.load(std::memory_order_relaxed);
      void* const ctx = ctx_.load(std::memory_order_relaxed);
      const size_t n = n_.load(std::memory_order_relaxed);
      const size_t parts = parts_.load(std::memory_order_relaxed);
      if (part >= parts) return;
      if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel)) continue;
      run_part(fn, ctx, n * part / parts, n * (part + 1) / parts);
      if (done_.fetch_add(1, std::memory_order_seq_cst) + 1 == parts &&
          caller_sleeping_.load(std::memory_order_seq_cst) != 0) {
        futex_wake_all(&done_);
      }
    }
  }

  void work(int index, uint32_t seen) {
    pthread_setname_np(pthread_self(), ("plexus-cpu-" + std::to_string(index)).c_str());
    for (;;) {
      if (!spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; })) {
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        while (generation_.load(std::memory_order_seq_cst) == seen) futex_wait(&generation_, seen);
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
      }
      seen = generation_.load(std::memory_order_acquire);
      if (stop_.load(std::memory_order_acquire)) return;
      run_parts(seen);
    }
  }

  void wait_for_parts(uint32_t parts) {
    if (spin_until([&] { return done_.load(std::memory_order_acquire) == parts; })) return;
    caller_sleeping_.store(1, std::memory_order_seq_cst);
    uint32_t done;
    while ((done = done_.load(std::memory_order_seq_cst)) != parts) futex_wait(&done_, done);
    caller_sleeping_.store(0, std::memory_order_relaxed);
  }

  // Called with dispatch_ held.
  void stop_workers() {
    if (workers_.empty()) return;
    stop_.store(true, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    futex_wake_all(&generation_);
    for (std::thread& t : workers_) t.join();
    workers_.clear();
    stop_.store(false, std::memory_order_relaxed);
  }

  std::mutex dispatch_;
  std::vector<std::thread> workers_;
  std::atomic<uint32_t> generation_{0};
  std::atomic<uint32_t> sleepers_{0};
  std::atomic<uint64_t> claim_{0};
  std::atomic<uint32_t> done_{0};
  std::atomic<uint32_t> caller_sleeping_{0};
  std::atomic<bool> stop_{false};
  // The job, read by whoever claims one of its parts (relaxed: claim_ orders them).
  std::atomic<detail::RangeFn> fn_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  std::atomic<size_t> n_{0};
  std::atomic<size_t> parts_{0};
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
