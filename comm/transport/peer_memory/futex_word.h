// futex_word.h - a 32-bit word in shared memory that one process bumps and others sleep on.
//
// The owner stores a new value and wakes sleepers (FUTEX_WAKE); a waiter sleeps in the kernel
// (FUTEX_WAIT, the non-private form, since the word is mapped by several processes) until the
// value moves or a short timeout passes, so 8 ranks on 2 cores never spin hot. A waiter count
// beside the value lets the owner skip the system call when nobody sleeps (the usual
// "waiters" pattern of futex-based locks; U. Drepper, "Futexes are tricky", 2011, section 6).
//
// Values only grow (modulo 2^32): reached(v, target) compares by signed distance, so a counter
// that wraps keeps working as long as no waiter falls 2^31 behind.
#pragma once

#include <atomic>
#include <cstdint>

namespace plexus::comm {

struct alignas(64) FutexWord {
  std::atomic<uint32_t> value{0};
  std::atomic<uint32_t> sleepers{0};
};
static_assert(sizeof(FutexWord) == 64, "one cache line per word: no false sharing");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words must be plain 32 bits");

// True when `value` is at or past `target` (modulo 2^32).
inline bool reached(uint32_t value, uint32_t target) {
  return static_cast<int32_t>(value - target) >= 0;
}

// Stores `value` (release) and wakes every sleeper on the word.
void futex_publish(FutexWord& word, uint32_t value);

// Sleeps until word.value reaches `target`, a wake-up, or `timeout_us` microseconds, whichever
// is first (spurious returns are allowed). Returns whether the value has reached the target.
bool futex_wait_until(FutexWord& word, uint32_t target, int timeout_us);

}  // namespace plexus::comm
