// cpu_threads.h - the threads the CPU layers of one process share (--device cpu).
//
// One rank uses every core it is given (topology::threads_per_rank) through a small pool of
// threads of its own, not through OpenBLAS's threads: each layer splits its work (rows of a
// GEMM, (batch, head) pairs of attention, ranges of an elementwise kernel) into contiguous
// parts, and every part calls single-threaded BLAS. OpenBLAS's own threads wake for every call
// and spin in sched_yield around small GEMMs; a profile of a one-process L4 C128 step showed a
// quarter of the samples there. With one thread (ranks filling the cores) every part runs on
// the calling thread, exactly as before.
//
// Waiting: a worker polls for its next part for at most kSpinMicros after its last one (the
// next layer normally follows within microseconds), then sleeps on a futex; the dispatching
// thread waits for the others the same way. An idle process uses no CPU. Parts are claimed, not
// assigned: a part whose worker is not running (descheduled on a busy host) is run by the
// first thread free, so one slow thread delays a layer by at most the part it has started.
//
// Results: the parts are contiguous ranges. Every layer but the linear layer writes disjoint
// outputs per item, or sums in an order that does not depend on the parts, so its bits do not
// depend on the thread count; the linear layer's rows go to separate sgemm calls, which OpenBLAS
// may sum in another order (equal to float rounding; tests/engine/cpu_threads_test.cpp).
//
// Thread safety: set_cpu_threads() before the model runs, from one thread. parallel_for may be
// called from any thread; a call made while another is being dispatched (a second thread, or a
// part calling parallel_for again) runs all of its parts on its own thread.
#pragma once

#include <cstddef>
#include <type_traits>

namespace plexus::engine {

// Microseconds a waiting thread polls before it sleeps.
inline constexpr int kSpinMicros = 100;

// Sets the threads the CPU layers use, the calling thread included (values below 1 mean 1).
// Starts or stops workers as needed; returns the count in force.
int set_cpu_threads(int threads);
int cpu_threads();

namespace detail {
using RangeFn = void (*)(void* ctx, size_t begin, size_t end);
void parallel_for(size_t n, size_t grain, RangeFn fn, void* ctx);
}  // namespace detail

// Splits [0, n) into at most cpu_threads() contiguous ranges of at least `grain` items each
// (one range when n < 2 * grain) and calls fn(begin, end) once per range, on the calling
// thread and the workers (which thread runs which range is not fixed); returns when every range
// is done. fn must not throw.
template <class F>
void parallel_for(size_t n, size_t grain, F&& fn) {
  using Fn = std::remove_reference_t<F>;
  auto call = [](void* ctx, size_t begin, size_t end) { (*static_cast<Fn*>(ctx))(begin, end); };
  detail::parallel_for(n, grain, call, const_cast<void*>(static_cast<const void*>(&fn)));
}

}  // namespace plexus::engine
